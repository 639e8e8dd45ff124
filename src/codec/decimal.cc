#include "codec/decimal.h"

#include <bit>
#include <cmath>
#include <initializer_list>

namespace trainwatch::codec {
namespace {

inline bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

}  // namespace

bool ToDecimal(double value, int k, int64_t* d) {
  const double scale = kPowersOf10[k];
  const double scaled = value * scale;
  // Also rejects NaN and infinities (every comparison with NaN is false).
  if (!(std::fabs(scaled) <= static_cast<double>(kMaxDecimalMagnitude))) return false;
  // scaled is within about 2 of the exact d (two roundings of relative error
  // 2^-53 at |d| <= 2^53): try the nearest integer and its neighbours.
  const int64_t nearest = static_cast<int64_t>(std::nearbyint(scaled));
  for (int64_t candidate : {nearest, nearest - 1, nearest + 1}) {
    if (candidate > kMaxDecimalMagnitude || candidate < -kMaxDecimalMagnitude) continue;
    if (SameBits(static_cast<double>(candidate) / scale, value)) {
      *d = candidate;
      return true;
    }
  }
  return false;
}

int DecimalScale(double value, int at_least) {
  int64_t d;
  for (int k = at_least; k <= kMaxDecimalScale; ++k) {
    if (ToDecimal(value, k, &d)) return k;
  }
  return -1;
}

bool ToDecimals(const double* values, size_t n, int k, int64_t* d) {
  for (size_t i = 0; i < n; ++i) {
    if (!ToDecimal(values[i], k, &d[i])) return false;
  }
  return true;
}

}  // namespace trainwatch::codec
