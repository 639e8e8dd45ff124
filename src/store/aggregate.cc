#include "store/aggregate.h"

#include <algorithm>
#include <cmath>

#include "codec/decimal.h"

namespace trainwatch::store {
namespace {

constexpr int kMaxScale = Aggregate::kMaxExactSumScale;
constexpr int64_t kIntPowersOf10[kMaxScale + 1] = {
    1, 10, 100, 1'000, 10'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};

// The places (at most kMaxScale) of `value` when it is the double nearest
// to a decimal *d * 10^-places; else -1. The inline test, per value.
int DecimalsOf(double value, int64_t* d) {
  for (int k = 0; k <= kMaxScale; ++k) {
    if (codec::ToDecimalInline(value, k, d)) return k;
  }
  return -1;
}

// The same for a stored Sum, with codec's full test (up to 2^53 units; not
// on a per-value path). A sum ReportedSum gave under 2^52 units reads back
// as its very decimal: no other decimal of at most as many places rounds to
// the same double.
int StoredDecimalsOf(double value, int64_t* d) {
  const int k = codec::DecimalScale(value, 0);
  return k >= 0 && k <= kMaxScale && codec::ToDecimal(value, k, d) ? k : -1;
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
void AddDecimal(Aggregate* a, __int128 d, int k) {
  if (a->sum_scale < 0) return;
  __int128 sum = a->decimal_sum;
  if ((k > a->sum_scale &&
       __builtin_mul_overflow(sum, kIntPowersOf10[k - a->sum_scale], &sum)) ||
      (k < a->sum_scale &&
       __builtin_mul_overflow(d, kIntPowersOf10[a->sum_scale - k], &d)) ||
      __builtin_add_overflow(sum, d, &sum)) {
    a->sum_scale = -1;
    return;
  }
  a->decimal_sum = sum;
  if (k > a->sum_scale) a->sum_scale = static_cast<int8_t>(k);
}

// Adds a stored Sum (kSumAsStored) as the decimal it reads back as.
void AddStored(Aggregate* a, double stored) {
  int64_t d = 0;
  const int k = StoredDecimalsOf(stored, &d);
  if (k < 0) {
    a->sum_scale = -1;
  } else {
    AddDecimal(a, d, k);
  }
}

// Before adding to a stored sum: track it, from 0, as the decimal it is.
void Track(Aggregate* a) {
  if (a->sum_scale != Aggregate::kSumAsStored) return;
  a->sum_scale = 0;
  a->decimal_sum = 0;
  AddStored(a, a->sum);
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
    // encoding may have told value's places k: then d is the integer nearest
    // to value * 10^k (which is within 3/8 of d below 2^51), untested.
    int64_t whole = 0, d = 0;
    int k = -1;
    if (WholeCount(n, &whole)) {
      if (value_places >= 0 && value_places <= kMaxScale) {
        const double scaled = value * codec::kPowersOf10[value_places];
        if (std::fabs(scaled) < 0x1p51) {
          d = static_cast<int64_t>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
          k = value_places;
        }
      }
      if (k < 0) {
        k = codec::ToDecimalInline(value, sum_scale, &d) ? sum_scale : DecimalsOf(value, &d);
      }
    }
    if (k < 0) {
      sum_scale = -1;
    } else {
      AddDecimal(this, static_cast<__int128>(d) * whole, k);
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
        int64_t d = 0;
        const int k = DecimalsOf(s, &d);
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
    if (o.sum_scale == kSumAsStored) {
      AddStored(this, o.sum);
    } else if (o.sum_scale < 0) {
      sum_scale = -1;
    } else {
      AddDecimal(this, o.decimal_sum, o.sum_scale);
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
  // Not exact decimals, or stored (reported when written).
  if (sum_scale < 0) return sum;
  constexpr __int128 kLimit = __int128{1} << 52;
  if (decimal_sum <= -kLimit || decimal_sum >= kLimit) return sum;
  // Both exact doubles: one correctly rounded division gives the double
  // nearest to the exact sum.
  return static_cast<double>(static_cast<int64_t>(decimal_sum)) / codec::kPowersOf10[sum_scale];
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
