#pragma once
// LEB128 varints and zigzag mapping, the byte-level building blocks of the chunk
// and sketch formats (docs/format/chunk.md, docs/format/sketch.md).

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::codec {

// Maps signed to unsigned so that small magnitudes get small codes:
// 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3, ... (bijective over all 64-bit values).
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }

// Bits needed for ZigZag(v): 0 for 0, 1 for -1, 2 for 1 and -2, ...; a cheap
// proxy for what a residual costs to code.
inline int ZigZagBits(int64_t v) { return 64 - std::countl_zero(ZigZag(v)); }

// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
inline void PutVarint(uint64_t v, std::string* out) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

inline void PutSignedVarint(int64_t v, std::string* out) { PutVarint(ZigZag(v), out); }

// Reads a varint from the front of *in and advances it. False (input unchanged)
// when the input ends inside the varint or the varint is longer than 10 bytes or
// overflows 64 bits.
inline bool GetVarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in->size() && i < 10; ++i) {
    const uint64_t byte = static_cast<uint8_t>((*in)[i]);
    if (i == 9 && byte > 1) return false;  // bits beyond the 64th
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

inline bool GetSignedVarint(std::string_view* in, int64_t* v) {
  uint64_t u;
  if (!GetVarint(in, &u)) return false;
  *v = UnZigZag(u);
  return true;
}

// Fixed 8-byte little-endian, for raw doubles.
inline void PutFixed64(uint64_t v, std::string* out) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out->append(buf, 8);
}
inline bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  uint64_t result = 0;
  for (int i = 0; i < 8; ++i)
    result |= static_cast<uint64_t>(static_cast<uint8_t>((*in)[i])) << (8 * i);
  in->remove_prefix(8);
  *v = result;
  return true;
}

}  // namespace trainwatch::codec
