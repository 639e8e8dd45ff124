#pragma once
// QuantileSketch: a mergeable value distribution for rollup buckets: count, sum,
// min and max exactly, and quantiles.
//
// While it holds at most kMaxExactValues distinct values it keeps them all, as
// sorted (value, count) pairs, and answers quantiles exactly; merging two small
// exact sketches stays exact. Past that it switches to DDSketch-style
// logarithmic buckets (Masson et al., VLDB 2019): |v| falls into bucket
// ceil(log_gamma |v|), gamma = (1 + a) / (1 - a), a = 1 %, with one store for
// positive and one for negative values and an exact count of zeros; a quantile
// is then the bucket's midpoint 2 gamma^i / (gamma + 1), within 1 % of the true
// nearest-rank value. Memory is bounded: each store spans at most kMaxBuckets
// buckets (about 18 decades); beyond that its smallest magnitudes collapse into
// its lowest kept bucket, so only quantiles that fall among values more than
// 18 decades below the largest magnitude lose their accuracy guarantee.
//
// Encoding: docs/format/sketch.md. Thread safety: none (a value type).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::codec {

class QuantileSketch {
 public:
  static constexpr double kRelativeAccuracy = 0.01;
  static constexpr size_t kMaxExactValues = 64;
  static constexpr int kMaxBuckets = 2048;
  static constexpr uint8_t kFormatVersion = 1;

  // value finite, count > 0 and finite (may be fractional: PutMetricData
  // Counts). TW_CHECK on violation: the store rejects NaN and Inf at ingest.
  void Add(double value, double count = 1);
  void Merge(const QuantileSketch& other);

  double count() const { return count_; }
  double sum() const { return sum_; }  // may overflow to +-Inf (or NaN: Inf - Inf)
  double min() const { return min_; }  // valid when !empty()
  double max() const { return max_; }
  bool empty() const { return count_ == 0; }
  // True while quantiles are exact (at most kMaxExactValues distinct values seen).
  bool exact() const { return exact_mode_; }

  // Nearest-rank quantile: the smallest value whose cumulative count reaches
  // q * count() (for whole counts, the value of rank ceil(q * N); q * N is taken
  // as exact when it is within rounding of a whole number). q = 0 gives min(),
  // q = 1 gives max(), both exact; q outside [0, 1] is clamped. nullopt when
  // empty or q is NaN. Exact in exact mode, else within kRelativeAccuracy.
  std::optional<double> Quantile(double q) const;

  // Appends the encoding. The exact form is written while it is at most twice
  // the size of the bucketed form plus 16 bytes; otherwise (many distinct
  // full-precision values) the bucketed form, so a decoded sketch is exact
  // exactly when it encoded small. count, sum, min and max always round-trip.
  void EncodeTo(std::string* out) const;
  // InvalidArgument / DataLoss for bytes EncodeTo did not write; never UB.
  static absl::StatusOr<QuantileSketch> Decode(std::string_view bytes);

  // Heap and inline bytes held.
  size_t MemoryBytes() const;

  // Bucket of |v| (v != 0) and the midpoint value of a bucket (exposed for tests).
  static int BucketIndex(double magnitude);
  static double BucketValue(int index);

 private:
  // Dense counts of buckets offset_ .. offset_ + counts_.size() - 1 of one sign.
  class Store {
   public:
    void Add(int index, double count);
    void MergeFrom(const Store& other);
    bool empty() const { return counts_.empty(); }
    int lowest() const { return offset_; }
    int highest() const { return offset_ + static_cast<int>(counts_.size()) - 1; }
    double at(int index) const { return counts_[static_cast<size_t>(index - offset_)]; }
    size_t MemoryBytes() const { return counts_.capacity() * sizeof(double); }

   private:
    // Makes index fit, growing the span, and returns where it lands: indices
    // below highest - kMaxBuckets + 1 collapse into that lowest kept bucket.
    int Reserve(int index);

    int offset_ = 0;
    std::vector<double> counts_;
  };

  void ToBuckets();
  void AddToBuckets(double value, double count);
  void EncodeExact(std::string* out) const;
  void EncodeBuckets(std::string* out) const;
  absl::Status DecodeExact(std::string_view* in, uint8_t flags);
  absl::Status DecodeBuckets(std::string_view* in, uint8_t flags);

  double count_ = 0;
  double sum_ = 0;
  double min_ = 0;
  double max_ = 0;
  bool exact_mode_ = true;
  std::vector<std::pair<double, double>> exact_;  // (value, count), ascending values
  double zero_count_ = 0;
  Store positive_;  // by bucket of v
  Store negative_;  // by bucket of -v
};

}  // namespace trainwatch::codec
