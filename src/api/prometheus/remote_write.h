#pragma once
// Prometheus remote write 1.0 in (POST /api/v1/write; docs/prometheus.md):
// the protobuf WriteRequest a Prometheus server or agent sends, snappy
// compressed, made into trainwatch's series by the reverse of the naming
// rule of /metrics (model/prometheus_names.h):
//
//   metric     __name__ (required)
//   namespace  the label "namespace", else "Prometheus"
//   unit       the label "unit", else None
//   dimensions every other label, by its name
//
// Stale markers, NaN and infinities are not stored (CloudWatch has no
// non-finite values). A series that cannot be one of trainwatch's (more than
// 30 labels, an empty name...) is refused; the others are stored.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/series_key_cache.h"
#include "model/series.h"

namespace trainwatch::api::prometheus {

inline constexpr std::string_view kDefaultNamespace = "Prometheus";

// Decodes WriteRequests, one after another on one thread (the server keeps
// one per request thread), into a batch of the series as trainwatch stores
// them (see above), with their canonical keys. Senders send the same series
// in every request, mostly in the same order: slot i of the batch keeps its
// key when series i has the same labels, byte for byte, as the series there
// last time, and otherwise the key comes from a cache of labels' bytes; a
// key is built (and checked) only for labels not seen lately.
class WriteDecoder {
 public:
  // Decodes `protobuf` (the body, after snappy) into batch(): exemplars,
  // histograms and metadata are skipped, and non-finite values dropped.
  // InvalidArgument saying what is malformed and at which byte; then
  // batch() holds no series.
  absl::Status Decode(std::string_view protobuf);

  const model::SampleBatch& batch() const { return batch_; }
  // Series of the last request that could not be made keys, and why the
  // first one could not.
  size_t refused() const { return refused_; }
  const std::string& first_refusal() const { return first_refusal_; }
  // Frees what a large request left behind, keeping what a usual one needs.
  void Trim();

 private:
  // Gives series `slot` of the batch the key of the labels in identity_
  // (each label message's bytes, length-prefixed; label_at_ their offsets
  // in the body); false when they make no key (counted as refused);
  // InvalidArgument when a label is malformed.
  absl::StatusOr<bool> ResolveKey(size_t slot);

  model::SampleBatch batch_;
  std::vector<std::string> slot_labels_;  // identity of each slot's key
  SeriesKeyCache keys_;
  size_t refused_ = 0;
  std::string first_refusal_;
  std::string identity_;
  std::vector<size_t> label_at_;
};

}  // namespace trainwatch::api::prometheus
