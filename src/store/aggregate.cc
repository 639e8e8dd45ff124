#include "store/aggregate.h"

#include <algorithm>
#include <cmath>

#include "codec/decimal.h"

namespace trainwatch::store {
namespace {

constexpr int kMaxScale = Aggregate::kMaxExactSumScale;
constexpr int64_t kIntPowersOf10[kMaxScale + 1] = {
    1, 10, 100, 1'000, 10'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};

// The places (0 <= places <= kMaxScale, at least `at_least`) of `value`
// when it is the double nearest to a decimal *d * 10^-places; else -1.
int DecimalsOf(double value, int at_least, int64_t* d) {
  for (int k = at_least; k <= kMaxScale; ++k) {
    if (codec::ToDecimalInline(value, k, d)) return k;
  }
  return -1;
}

// A whole count (which keeps a value's places in value * n), as an integer.
inline bool WholeCount(double n, int64_t* whole) {
  if (n == 1) {
    *whole = 1;
    return true;
  }
  if (!(n < 0x1p53) || static_cast<double>(static_cast<int64_t>(n)) != n) return false;
  *whole = static_cast<int64_t>(n);
  return true;
}

// Adds the decimal d * 10^-k to the exact sum (k <= kMaxScale), rescaling
// whichever has fewer places; the exact sum is given up (-1) on overflow.
void AddDecimal(Aggregate* a, int64_t d, int k) {
  if (a->sum_scale < 0) return;
  int64_t sum = a->decimal_sum;
  if (k > a->sum_scale &&
      __builtin_mul_overflow(sum, kIntPowersOf10[k - a->sum_scale], &sum)) {
    a->sum_scale = -1;
    return;
  }
  if (k < a->sum_scale && __builtin_mul_overflow(d, kIntPowersOf10[a->sum_scale - k], &d)) {
    a->sum_scale = -1;
    return;
  }
  if (__builtin_add_overflow(sum, d, &sum)) {
    a->sum_scale = -1;
    return;
  }
  a->decimal_sum = sum;
  if (k > a->sum_scale) a->sum_scale = static_cast<int8_t>(k);
}

// Before adding to a stored sum: take it as the decimal it prints as.
void Track(Aggregate* a) {
  if (a->sum_scale != Aggregate::kSumAsStored) return;
  a->sum_scale = static_cast<int8_t>(DecimalsOf(a->sum, 0, &a->decimal_sum));
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
  a.decimal_sum = decimal_sum;
  if (sketch) a.sketch = std::make_unique<codec::QuantileSketch>(*sketch);
  if (exact) a.exact = std::make_unique<std::vector<std::pair<double, double>>>(*exact);
  return a;
}

void Aggregate::AddValue(double value, double n, Distribution distribution, int value_places) {
  if (n <= 0) return;
  count += n;
  Track(this);  // before the running sum changes
  sum += value * n;
  if (sum_scale >= 0) {
    // value * n is the decimal d * n when n is a whole count. A chunk's
    // encoding may have told value's places: then d is the integer nearest
    // to value * 10^k (which is within 1/4 of d below 2^51), untested.
    int64_t whole = 0, d = 0;
    int k = -1;
    if (WholeCount(n, &whole)) {
      if (value_places >= 0 && value_places <= kMaxScale) {
        k = std::max<int>(sum_scale, value_places);
        const double scaled = value * codec::kPowersOf10[k];
        if (std::fabs(scaled) < 0x1p51) {
          d = static_cast<int64_t>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
        } else {
          k = -1;
        }
      } else if (codec::ToDecimalInline(value, sum_scale, &d)) {
        k = sum_scale;
      } else {
        k = DecimalsOf(value, sum_scale + 1, &d);
      }
    }
    if (k < 0 || __builtin_mul_overflow(d, whole, &d)) {
      sum_scale = -1;
    } else {
      AddDecimal(this, d, k);
    }
  }
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
      sum += s;
      if (sum_scale >= 0) {
        int64_t d;
        const int k = DecimalsOf(s, 0, &d);
        if (k < 0) {
          sum_scale = -1;
        } else {
          AddDecimal(this, d, k);
        }
      }
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
    decimal_sum = o.decimal_sum;
  } else {
    Track(this);
    sum += o.sum;
    int64_t d = o.decimal_sum;
    const int k = o.sum_scale == kSumAsStored ? DecimalsOf(o.sum, 0, &d) : o.sum_scale;
    if (k < 0) {
      sum_scale = -1;
    } else {
      AddDecimal(this, d, k);
    }
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
  if (sum_scale < 0) return sum;  // not exact decimals, or stored (reported when written)
  // A sum of 0 is +0 (+ 0.0), as the running sum from +0 would be.
  if (decimal_sum >= -codec::kMaxDecimalMagnitude && decimal_sum <= codec::kMaxDecimalMagnitude) {
    // Both exact doubles: one correctly rounded division gives the double
    // nearest to the exact sum.
    return static_cast<double>(decimal_sum) / codec::kPowersOf10[sum_scale] + 0.0;
  }
  // Past 2^53 units: exact in long double's 64-bit mantissa, then rounded.
  return static_cast<double>(static_cast<long double>(decimal_sum) /
                             static_cast<long double>(kIntPowersOf10[sum_scale])) +
         0.0;
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
