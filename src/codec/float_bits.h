#pragma once
// Float bits as ordered integers: a double's bit pattern mapped to an int64 that
// grows with the value (negative values count down from -1), with the trailing
// zero bits that every magnitude of a chunk shares shifted out. Smooth series
// then have small deltas, and values that came from float32 (PyTorch's
// loss.item()) lose their 29 always-zero bits. Bijective: -0.0 maps to -1 and
// +0.0 to 0; NaN payloads survive.

#include <bit>
#include <cstddef>
#include <cstdint>

namespace trainwatch::codec {

inline constexpr uint64_t kMagnitudeMask = ~(uint64_t{1} << 63);

// The number of trailing zero bits every nonzero magnitude shares (0 if none is nonzero).
inline int CommonTrailingZeros(const double* values, size_t n) {
  uint64_t any = 0;
  for (size_t i = 0; i < n; ++i) any |= std::bit_cast<uint64_t>(values[i]) & kMagnitudeMask;
  return any == 0 ? 0 : std::countr_zero(any);
}

inline uint64_t FloatToOrdered(double value, int shift) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint64_t m = (bits & kMagnitudeMask) >> shift;
  return (bits >> 63) != 0 ? ~m : m;  // ~m == -m - 1
}

// Inverse of FloatToOrdered. Any input gives some double (bits past the
// magnitude are dropped), so corrupt input cannot misbehave.
inline double OrderedToFloat(uint64_t ordered, int shift) {
  const bool negative = static_cast<int64_t>(ordered) < 0;
  const uint64_t m = negative ? ~ordered : ordered;
  const uint64_t bits = ((m << shift) & kMagnitudeMask) | (negative ? uint64_t{1} << 63 : 0);
  return std::bit_cast<double>(bits);
}

}  // namespace trainwatch::codec
