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
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/series.h"

namespace trainwatch::api::prometheus {

inline constexpr std::string_view kDefaultNamespace = "Prometheus";

struct WriteSample {
  double value = 0;
  int64_t t_ms = 0;
};
struct WriteSeries {
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<WriteSample> samples;
};

// The time series of a WriteRequest (exemplars, histograms and metadata are
// skipped); InvalidArgument saying what is malformed and at which byte.
absl::StatusOr<std::vector<WriteSeries>> DecodeWriteRequest(std::string_view protobuf);

// The series as trainwatch stores them (see above). `refused` counts the
// series that could not be made keys and `first_refusal` says why the first
// one was.
struct Converted {
  model::SampleBatch batch;
  size_t refused = 0;
  std::string first_refusal;
};
Converted ToSampleBatch(std::vector<WriteSeries> series);

}  // namespace trainwatch::api::prometheus
