#pragma once
// The identity of a metric series and the samples that belong to it: the
// vocabulary that every producer (extract, profiler, api) and the store share.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::model {

// CloudWatch's limits (spec/aws-api.md, Appendix B).
inline constexpr size_t kMaxDimensions = 30;
inline constexpr size_t kMaxNameBytes = 255;     // namespace, metric and dimension names, unit
inline constexpr size_t kMaxDimensionValueBytes = 1024;

struct Dimension {
  std::string name;
  std::string value;
  friend bool operator==(const Dimension&, const Dimension&) = default;
  friend auto operator<=>(const Dimension&, const Dimension&) = default;
};

// SeriesKey: namespace, metric name, dimensions (sorted by name, names unique)
// and unit ("None" when not given). Two keys are the same series iff equal.
// Build keys with MakeSeriesKey, which validates and canonicalises.
struct SeriesKey {
  std::string ns;
  std::string metric;
  std::vector<Dimension> dimensions;
  std::string unit = "None";

  // "ns|metric|unit|name=value|name=value..." with '|' '=' '\' escaped: a
  // stable, unambiguous byte string (used as a hash-map key and in the index).
  std::string Canonical() const;
  // Whether `canonical` == Canonical(), without building it.
  bool HasCanonical(std::string_view canonical) const;
  // For humans: ns/metric{a="x",b="y"} (unit shown when not None).
  std::string ToString() const;
  // Value of dimension `name`, or nullptr.
  const std::string* FindDimension(std::string_view name) const;

  friend bool operator==(const SeriesKey&, const SeriesKey&) = default;
  friend auto operator<=>(const SeriesKey&, const SeriesKey&) = default;
};

// Sorts the dimensions; InvalidArgument (naming the offending part) for an
// empty namespace or metric name, names or a unit longer than 255 bytes, more than 30
// dimensions, a dimension with an empty name or value, or a repeated name.
absl::StatusOr<SeriesKey> MakeSeriesKey(std::string ns, std::string metric,
                                        std::vector<Dimension> dimensions,
                                        std::string unit = "None");

// The same checks for a key built some other way, without copying it (this
// runs for every series of every write): InvalidArgument when the key is not
// as MakeSeriesKey would have left it (for a key with sorted dimensions,
// MakeSeriesKey's own message; a key with unsorted dimensions or an empty
// unit may get a message about that instead of about a bad part).
absl::Status CheckSeriesKey(const SeriesKey& key);

// One observation: Unix epoch milliseconds and a finite value.
struct Sample {
  int64_t t_ms;
  double value;
  friend bool operator==(const Sample&, const Sample&) = default;
};

// One value observed `count` times at t_ms (PutMetricData's Values/Counts).
struct WeightedSample {
  int64_t t_ms;
  double value;
  double count;
  friend bool operator==(const WeightedSample&, const WeightedSample&) = default;
};

// A pre-aggregated observation (PutMetricData's StatisticValues).
struct StatisticSet {
  int64_t t_ms;
  double sample_count;
  double sum;
  double minimum;
  double maximum;
  friend bool operator==(const StatisticSet&, const StatisticSet&) = default;
  // True when the set describes identical values (min == max and
  // sum == min * count): then it is exact data and percentiles stay defined
  // (spec/aws-api.md §4.2).
  bool DescribesIdenticalValues() const;
};

// Everything one write carries for one series. Samples need not be sorted.
struct SeriesSamples {
  SeriesKey key;
  // 1 = high resolution (sub-minute periods served), 60 = standard.
  int storage_resolution_s = 1;
  std::vector<Sample> samples;
  std::vector<WeightedSample> weighted;
  std::vector<StatisticSet> statistic_sets;

  size_t size() const { return samples.size() + weighted.size() + statistic_sets.size(); }
};

// CloudWatch's largest magnitude, 2^360: a finite value beyond it is refused
// as NaN and the infinities are.
inline constexpr double kMaxValueMagnitude = 0x1p360;

// True when every value of `s` (samples, weighted values and their counts,
// statistic sets) is finite and at most kMaxValueMagnitude in magnitude, as a
// store takes them (ingest::ValidateSamples says what is wrong with others).
bool HasOnlyStorableValues(const SeriesSamples& s);

// A write: any number of series, each with its samples.
struct SampleBatch {
  std::vector<SeriesSamples> series;
  // Empty, or one per series: series[i].key.Canonical(), from a producer that
  // has it at hand (the native samples decoder caches keys), so that the
  // store need not build it again. Whoever changes the keys, order or number
  // of `series` after filling this clears it (the store files samples by
  // these; a debug build aborts on one that disagrees with its key).
  std::vector<std::string> canonical_keys = {};  // "= {}": {{series...}} stays a valid batch

  size_t SampleCount() const;
  bool empty() const { return SampleCount() == 0; }
};

}  // namespace trainwatch::model
