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
  // A sum scale meaning "the sum as stored": a bucket read back from a
  // rollup record, whose Sum was reported when written. Adding to it first
  // takes it as the decimal it prints as (at most kMaxExactSumScale places).
  static constexpr int8_t kSumAsStored = -2;
  // Sums are kept exact up to this many decimal places.
  static constexpr int kMaxExactSumScale = 9;

  double count = 0;
  // The running sum. Read it through ReportedSum().
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  // A non-identical statistic set was added: percentiles are undefined.
  bool no_percentiles = false;
  // While every value (statistic-set sum, merged sum) added was a decimal of
  // at most kMaxExactSumScale places, with whole counts: the largest number
  // of places, and the exact sum in units of the last one (decimal_sum *
  // 10^-sum_scale; 128 bits, so that no order of additions overflows it).
  // -1 otherwise; or kSumAsStored.
  int8_t sum_scale = 0;
  __int128 decimal_sum = 0;
  // The distribution, when tracked (null otherwise, or when empty).
  std::unique_ptr<codec::QuantileSketch> sketch;
  std::unique_ptr<std::vector<std::pair<double, double>>> exact;  // (value, count)

  Aggregate() = default;
  Aggregate(Aggregate&&) noexcept = default;
  Aggregate& operator=(Aggregate&&) noexcept = default;
  Aggregate Clone() const;

  bool empty() const { return count <= 0; }
  // Adds one row of `lane`, and to the distribution as asked. `value_places`
  // >= 0 says the row's value (c[0]) is the double nearest to a decimal of
  // that many places, as a chunk's encoding tells a reader (saving a test per
  // value); -1: not known. Plain and weighted rows only.
  void AddRow(uint8_t lane, const Row& row, Distribution distribution, int value_places = -1);
  void AddValue(double value, double count, Distribution distribution, int value_places = -1);
  void Merge(const Aggregate& other);
  // The Sum statistic: where the exact decimal sum is kept (a percentage
  // with 2 places, a count with 0) and under 2^52 units of its last place,
  // the double nearest to it, so ten values 0.1 sum to 1, not
  // 0.9999999999999999, in any order; otherwise the running sum. Rollup
  // records store it (under 2^52 units it reads back as the same decimal),
  // so that it costs as few bytes as the values do (docs/store.md).
  double ReportedSum() const;
  // Percentiles are available (defined, and a distribution is present).
  bool HasPercentiles() const;
  // Nearest-rank percentile, q in [0, 1]: the smallest value whose cumulative
  // count reaches q * count (rank ceil(q * N) for whole counts); q = 0 is the
  // minimum, q = 1 the maximum. nullopt when !HasPercentiles().
  std::optional<double> Percentile(double q) const;
};

}  // namespace trainwatch::store
