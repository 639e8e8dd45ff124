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

#include <cstddef>
#include <cstdint>

namespace trainwatch::codec {

inline constexpr int kMaxDecimalScale = 18;
inline constexpr int64_t kMaxDecimalMagnitude = int64_t{1} << 53;

// 10^k as a double, exact for 0 <= k <= kMaxDecimalScale.
double Pow10(int k);

// True when `value` is exactly the double nearest to d * 10^-k, |d| <= 2^53;
// then *d is set. 0 <= k <= kMaxDecimalScale.
bool ToDecimal(double value, int k, int64_t* d);

// The double nearest to d * 10^-k.
inline double FromDecimal(int64_t d, int k) { return static_cast<double>(d) / Pow10(k); }

// The smallest scale k >= `at_least` at which `value` is decimal, or -1 when none
// up to kMaxDecimalScale is.
int DecimalScale(double value, int at_least);

// Converts values[0..n) at scale k into d[0..n); false when one is not decimal at k.
bool ToDecimals(const double* values, size_t n, int k, int64_t* d);

}  // namespace trainwatch::codec
