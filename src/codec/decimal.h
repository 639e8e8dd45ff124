#pragma once
// Exact decimal values: a double that is exactly the double nearest to d * 10^-k
// for an integer d (|d| <= 2^53) and a small k. Counters (k = 0), percentages with
// one or two decimals and accuracies with four are stored as the integers d,
// which compress far better than their bit patterns.
//
// Exactness: for |d| <= 2^53 both d and 10^k (k <= 22) are exact doubles, so the
// IEEE division d / 10^k is correctly rounded: it *is* the double nearest to
// d * 10^-k. Encoding verifies that this division gives back the value's very bit
// pattern, so -0.0, NaN, infinities and values that merely print like decimals
// are never taken for decimals.

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace trainwatch::codec {

inline constexpr int kMaxDecimalScale = 18;
inline constexpr int64_t kMaxDecimalMagnitude = int64_t{1} << 53;

// 10^k as a double, exact for 0 <= k <= kMaxDecimalScale.
inline constexpr double kPowersOf10[kMaxDecimalScale + 1] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18};
inline double Pow10(int k) { return kPowersOf10[k]; }

// True when `value` is exactly the double nearest to d * 10^-k, |d| <= 2^53;
// then *d is set. 0 <= k <= kMaxDecimalScale.
bool ToDecimal(double value, int k, int64_t* d);

// ToDecimal for a test per value on hot paths: inline, and only the integer
// nearest to value * 10^k is tried (no std::nearbyint), so it refuses
// decimals with |d| >= 2^52 that ToDecimal takes. It takes -0.0 as d = 0.
// Never takes a value that is not the double nearest to d * 10^-k.
inline bool ToDecimalInline(double value, int k, int64_t* d) {
  const double p = kPowersOf10[k];
  const double scaled = value * p;
  if (!(std::fabs(scaled) < 0x1p52)) return false;  // also NaN
  const auto nearest = static_cast<int64_t>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
  if (static_cast<double>(nearest) / p != value) return false;
  *d = nearest;
  return true;
}

// The double nearest to d * 10^-k.
inline double FromDecimal(int64_t d, int k) { return static_cast<double>(d) / Pow10(k); }

// The smallest scale k >= `at_least` at which `value` is decimal, or -1 when none
// up to kMaxDecimalScale is.
int DecimalScale(double value, int at_least);

// Converts values[0..n) at scale k into d[0..n); false when one is not decimal at k.
bool ToDecimals(const double* values, size_t n, int k, int64_t* d);

}  // namespace trainwatch::codec
