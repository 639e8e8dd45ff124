#pragma once
// Aggregate: what a rollup bucket (or a query bucket) knows about the data in
// it: SampleCount, Sum, Minimum, Maximum, whether percentiles are defined,
// and optionally the value distribution as a mergeable quantile sketch.
//
// Percentiles follow spec/aws-api.md §4.2/§4.3: a bucket that received a
// statistic set not describing identical values, or any negative value, has
// none. Values/Counts add each value `count` times; a statistic set that
// describes identical values adds its value SampleCount times.

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "codec/quantile_sketch.h"
#include "store/lane.h"

namespace trainwatch::store {

// How an aggregate keeps the value distribution (for percentiles).
enum class Distribution {
  kNone,
  kSketch,  // QuantileSketch: mergeable, exact while few distinct values, else <= 1 %
  kExact,   // every (value, count): exact nearest rank (queries over raw data)
};

struct Aggregate {
  double count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  // A non-identical statistic set was added: percentiles are undefined.
  bool no_percentiles = false;
  // The distribution, when tracked (null otherwise, or when empty).
  std::unique_ptr<codec::QuantileSketch> sketch;
  std::unique_ptr<std::vector<std::pair<double, double>>> exact;  // (value, count)

  Aggregate() = default;
  Aggregate(Aggregate&&) noexcept = default;
  Aggregate& operator=(Aggregate&&) noexcept = default;
  Aggregate Clone() const;

  bool empty() const { return count <= 0; }
  // Adds one row of `lane`, and to the distribution as asked.
  void AddRow(uint8_t lane, const Row& row, Distribution distribution);
  void AddValue(double value, double count, Distribution distribution);
  void Merge(const Aggregate& other);
  // Percentiles are available (defined, and a distribution is present).
  bool HasPercentiles() const;
  // Nearest-rank percentile, q in [0, 1]: the smallest value whose cumulative
  // count reaches q * count (rank ceil(q * N) for whole counts); q = 0 is the
  // minimum, q = 1 the maximum. nullopt when !HasPercentiles().
  std::optional<double> Percentile(double q) const;
};

}  // namespace trainwatch::store
