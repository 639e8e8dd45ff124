#include "store/aggregate.h"

#include <algorithm>
#include <cmath>

#include "codec/decimal.h"

namespace trainwatch::store {
namespace {

// Unit roundoff: one rounding of a double changes it by at most kU times
// its magnitude.
constexpr double kU = 0x1p-53;

// 10^k for the places a sum is kept exact to.
constexpr double kPow10[Aggregate::kMaxExactSumScale + 1] = {1e0, 1e1, 1e2, 1e3, 1e4,
                                                            1e5, 1e6, 1e7, 1e8, 1e9};

// Whether `value` is the double nearest to d / 10^k for an integer d (the
// test codec::ToDecimal makes, for the nearest d only: it runs per value
// on every aggregation, so it avoids the calls of std::nearbyint).
inline bool HasPlaces(double value, int k) {
  const double p = kPow10[k];
  const double scaled = value * p;
  if (!(std::fabs(scaled) < 0x1p52)) return false;  // also NaN
  const auto d = static_cast<int64_t>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
  return static_cast<double>(d) / p == value;
}

// The decimal places of `value` (at least `at_least` >= 0) when it is the
// double nearest to a decimal of at most Aggregate::kMaxExactSumScale
// places; else -1.
int DecimalsOf(double value, int at_least) {
  for (int k = at_least; k <= Aggregate::kMaxExactSumScale; ++k) {
    if (HasPlaces(value, k)) return k;
  }
  return -1;
}

// A count that keeps a value's places in value * n.
inline bool IsWholeCount(double n) {
  return n == 1 || (n < 0x1p53 && static_cast<double>(static_cast<int64_t>(n)) == n);
}

// The places of an aggregate's sum so far (a stored sum: its own).
int ScaleSoFar(const Aggregate& a) {
  return a.sum_scale == Aggregate::kSumAsStored ? DecimalsOf(a.sum, 0) : a.sum_scale;
}

// Before adding to a stored sum: track it, as the decimal it prints as,
// within one rounding.
void Track(Aggregate* a) {
  if (a->sum_scale != Aggregate::kSumAsStored) return;
  a->sum_scale = static_cast<int8_t>(DecimalsOf(a->sum, 0));
  a->sum_error = kU * std::fabs(a->sum);
}

// Adds `q` to the running sum. `q_error` bounds |q - the exact decimal it
// stands for|, `scale` is the places of the sum with q (-1: not decimals).
// The bound grows by the rounding of the addition.
void AddToSum(Aggregate* a, double q, double q_error, int scale) {
  a->sum += q;
  a->sum_error += q_error + kU * std::fabs(a->sum);
  a->sum_scale = static_cast<int8_t>(scale);
}

}  // namespace

Aggregate Aggregate::Clone() const {
  Aggregate a;
  a.count = count;
  a.sum = sum;
  a.min = min;
  a.max = max;
  a.no_percentiles = no_percentiles;
  a.sum_scale = sum_scale;
  a.sum_error = sum_error;
  if (sketch) a.sketch = std::make_unique<codec::QuantileSketch>(*sketch);
  if (exact) a.exact = std::make_unique<std::vector<std::pair<double, double>>>(*exact);
  return a;
}

void Aggregate::AddValue(double value, double n, Distribution distribution, int value_places) {
  if (n <= 0) return;
  count += n;
  // The places of the sum with this value: value * n keeps value's places
  // when n is a whole count. Written only when it changes (a store per
  // value would chain each value's test to the previous one's).
  Track(this);
  int scale = sum_scale;
  if (scale >= 0) {
    if (!IsWholeCount(n)) {
      scale = -1;
    } else if (value_places >= 0) {
      scale = std::max(scale, value_places);
    } else if (!HasPlaces(value, scale)) {
      scale = DecimalsOf(value, scale + 1);
    }
  }
  if (scale != sum_scale) sum_scale = static_cast<int8_t>(scale);
  // The product is rounded once, and value stands for its decimal within
  // one rounding: 2 kU |value * n|.
  const double q = value * n;
  sum += q;
  sum_error += 2 * kU * std::fabs(q) + kU * std::fabs(sum);
  min = std::min(min, value);
  max = std::max(max, value);
  if (distribution == Distribution::kSketch) {
    if (!sketch) sketch = std::make_unique<codec::QuantileSketch>();
    sketch->Add(value, n);
  } else if (distribution == Distribution::kExact) {
    if (!exact) exact = std::make_unique<std::vector<std::pair<double, double>>>();
    exact->emplace_back(value, n);
  }
}

void Aggregate::AddRow(uint8_t lane, const Row& row, Distribution distribution,
                       int value_places) {
  switch (LaneKind(lane)) {
    case SampleKind::kPlain:
      AddValue(row.c[0], 1, distribution, value_places);
      return;
    case SampleKind::kWeighted:
      AddValue(row.c[0], row.c[1], distribution, value_places);
      return;
    case SampleKind::kStatSet: {
      const double n = row.c[0], s = row.c[1], lo = row.c[2], hi = row.c[3];
      if (n <= 0) return;
      if (lo == hi && s == lo * n) {
        // Identical values: exact data, percentiles stay defined.
        AddValue(lo, n, distribution);
        return;
      }
      count += n;
      Track(this);
      AddToSum(this, s, kU * std::fabs(s), sum_scale < 0 ? -1 : DecimalsOf(s, sum_scale));
      min = std::min(min, lo);
      max = std::max(max, hi);
      no_percentiles = true;
      return;
    }
  }
}

void Aggregate::Merge(const Aggregate& o) {
  if (o.count <= 0 && !o.no_percentiles) return;
  if (empty() && !no_percentiles) {
    // Nothing to add to: take o's sum as it is (a stored one stays so).
    sum = o.sum;
    sum_scale = o.sum_scale;
    sum_error = o.sum_error;
  } else {
    // A stored sum stands for its decimal within one rounding.
    Track(this);
    const int o_scale = ScaleSoFar(o);
    AddToSum(this, o.sum, o.sum_error + kU * std::fabs(o.sum),
             sum_scale < 0 || o_scale < 0 ? -1 : std::max<int>(sum_scale, o_scale));
  }
  count += o.count;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  no_percentiles = no_percentiles || o.no_percentiles;
  if (o.exact) {
    if (!exact) exact = std::make_unique<std::vector<std::pair<double, double>>>();
    exact->insert(exact->end(), o.exact->begin(), o.exact->end());
  }
  if (o.sketch) {
    if (!sketch) {
      sketch = std::make_unique<codec::QuantileSketch>(*o.sketch);
    } else {
      sketch->Merge(*o.sketch);
    }
  }
}

namespace {

// The distribution covers every value of the aggregate (not only a part,
// e.g. rollup buckets stored without sketches plus head rows).
double DistributionCount(const Aggregate& a) {
  double n = a.sketch ? a.sketch->count() : 0;
  if (a.exact) {
    for (const auto& [v, c] : *a.exact) n += c;
  }
  return n;
}

}  // namespace

double Aggregate::ReportedSum() const {
  if (sum_scale < 0) return sum;  // not decimals, or stored (reported when written)
  const double p = kPow10[sum_scale];
  // sum * p is within (sum_error + kU |sum|) p of the exact sum's integer
  // d: when that is under 1/2 (a quarter, to spare the rounding of this
  // check), the nearest integer is d, and d / p the double nearest to the
  // exact sum (both exact doubles, one correctly rounded division).
  if (!((sum_error + 2 * kU * std::fabs(sum)) * p < 0.25)) return sum;
  const double d = std::nearbyint(sum * p);
  if (!(std::fabs(d) <= static_cast<double>(codec::kMaxDecimalMagnitude))) return sum;
  return d / p + 0.0;  // a sum of 0 is +0, as the running sum from +0 would be
}

bool Aggregate::HasPercentiles() const {
  return count > 0 && !no_percentiles && min >= 0 && (sketch != nullptr || exact != nullptr) &&
         DistributionCount(*this) >= count * (1 - 1e-9);
}

std::optional<double> Aggregate::Percentile(double q) const {
  if (!HasPercentiles()) return std::nullopt;
  if (q <= 0) return min;
  if (q >= 1) return max;
  if (exact != nullptr && sketch == nullptr) {
    std::vector<std::pair<double, double>> v = *exact;
    std::sort(v.begin(), v.end());
    double total = 0;
    for (const auto& [x, c] : v) total += c;
    const double target = q * total - 4 * 2.220446049250313e-16 * total;
    double cumulative = 0;
    for (const auto& [x, c] : v) {
      cumulative += c;
      if (cumulative >= target) return x;
    }
    return v.back().first;
  }
  if (exact != nullptr) {
    // Both kinds (unusual): fold the exact values into a sketch.
    codec::QuantileSketch s = *sketch;
    for (const auto& [x, c] : *exact) s.Add(x, c);
    return s.Quantile(q);
  }
  return sketch->Quantile(q);
}

}  // namespace trainwatch::store
