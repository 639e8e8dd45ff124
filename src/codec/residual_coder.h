#pragma once
// The residual coder behind IntSequence and the stepped float-bit values: each
// residual (a prediction's error, an int64 modulo 2^64) as zero flag, sign,
// bit length near a typical length (or in full) and the three bits under the
// leading one, with adaptive binary range coding, then the remaining low bits
// raw. Byte layout: docs/format/chunk.md ("IntSequence", steps 1 to 5).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "codec/bit_reader.h"
#include "codec/bit_writer.h"
#include "codec/range_coder.h"

namespace trainwatch::codec {

// Adaptive models of one integer sequence (about 2.4 KiB).
struct ResidualModel {
  AdaptiveBit zero[4];  // context: the previous two zero flags
  AdaptiveBit sign[3];  // context: previous residual zero / positive / negative
  AdaptiveBit near[8];  // bit tree over length - base + 3 in 0..6, 7 = escape
  AdaptiveBit far[64];  // bit tree over length - 1 after an escape
  static constexpr int kModeledBits = 3;
  // bit tree over the kModeledBits bits under the leading one, per length
  AdaptiveBit mantissa[65][1 << kModeledBits];
  AdaptiveBit predictor[4][4];  // IntSequence: bit tree over the block predictor, per previous one
  int zero_ctx = 0;
  int sign_ctx = 0;
};

inline constexpr int kNearOffset = 3;  // near lengths: base - 3 .. base + 3
inline constexpr int kEscape = 7;

// Bit length of a residual's magnitude (0 for 0, 64 for INT64_MIN).
inline int ResidualLength(uint64_t r) {
  return 64 - std::countl_zero(static_cast<int64_t>(r) < 0 ? 0 - r : r);
}

// The typical length the coder centres on: the median length of the nonzero
// residuals, from counts[length] for length 1..64 (1 when all are zero).
inline int MedianResidualLength(const uint32_t (&counts)[65]) {
  uint64_t nonzero = 0;
  for (int len = 1; len <= 64; ++len) nonzero += counts[len];
  int base_length = 1;
  for (uint64_t seen = 0; base_length < 64; ++base_length) {
    seen += counts[base_length];
    if (2 * seen >= nonzero) break;
  }
  return base_length;
}

class ResidualEncoder {
 public:
  ResidualEncoder(std::string* coded, std::string* raw, int base_length)
      : rc_(coded), raw_(raw), base_length_(base_length) {}

  // IntSequence's block predictor, a bit tree in the context of the previous one.
  void EncodePredictor(int previous, int p) {
    const int b1 = p >> 1;
    rc_.Encode(&m_.predictor[previous][1], b1);
    rc_.Encode(&m_.predictor[previous][2 + b1], p & 1);
  }

  // One decision on a model the caller keeps.
  void EncodeBit(AdaptiveBit* model, int bit) { rc_.Encode(model, bit); }

  void Encode(uint64_t r) {
    const int is_zero = r == 0 ? 1 : 0;
    rc_.Encode(&m_.zero[m_.zero_ctx], is_zero);
    m_.zero_ctx = ((m_.zero_ctx << 1) | is_zero) & 3;
    if (is_zero) {
      m_.sign_ctx = 0;
      return;
    }
    const int negative = static_cast<int64_t>(r) < 0 ? 1 : 0;
    rc_.Encode(&m_.sign[m_.sign_ctx], negative);
    m_.sign_ctx = 1 + negative;
    const uint64_t mag = negative ? 0 - r : r;   // 2^63 for INT64_MIN
    const int len = 64 - std::countl_zero(mag);  // 1..64
    const int near = len - base_length_ + kNearOffset;
    if (near >= 0 && near < kEscape) {
      EncodeTree(m_.near, near, 3);
    } else {
      EncodeTree(m_.near, kEscape, 3);
      EncodeTree(m_.far, len - 1, 6);
    }
    const int below = len - 1;  // bits under the leading one
    const int modeled = std::min(below, ResidualModel::kModeledBits);
    int node = 1;
    for (int j = 1; j <= modeled; ++j) {
      const int bit = static_cast<int>((mag >> (below - j)) & 1);
      rc_.Encode(&m_.mantissa[len][node], bit);
      node = 2 * node + bit;
    }
    raw_.Write(mag, below - modeled);
  }

  void Finish() {
    rc_.Finish();
    raw_.Flush();
  }

 private:
  // `bits` decisions, most significant first, on the nodes of a binary tree.
  void EncodeTree(AdaptiveBit* tree, int value, int bits) {
    int node = 1;
    for (int shift = bits - 1; shift >= 0; --shift) {
      const int bit = (value >> shift) & 1;
      rc_.Encode(&tree[node], bit);
      node = 2 * node + bit;
    }
  }

  RangeEncoder rc_;
  BitWriter raw_;
  ResidualModel m_;
  int base_length_;
};

// Decodes what ResidualEncoder::Encode wrote. On input that cannot have been
// written (a length outside 1..64, the raw stream ending) sets *failed and
// returns 0. rc and raw are the caller's, so that their state can live in
// registers across a run.
inline uint64_t DecodeResidual(ResidualModel& m, int base_length, RangeDecoder& rc,
                               BitReader& raw, bool* failed) {
  const int is_zero = rc.Decode(&m.zero[m.zero_ctx]);
  m.zero_ctx = ((m.zero_ctx << 1) | is_zero) & 3;
  if (is_zero) {
    m.sign_ctx = 0;
    return 0;
  }
  const int negative = rc.Decode(&m.sign[m.sign_ctx]);
  m.sign_ctx = 1 + negative;

  int node = 1;
  for (int k = 0; k < 3; ++k) node = 2 * node + rc.Decode(&m.near[node]);
  int len;
  if (node - 8 != kEscape) {
    len = base_length + (node - 8) - kNearOffset;
    if (len < 1 || len > 64) {  // never written: near lengths stay inside 1..64
      *failed = true;
      return 0;
    }
  } else {
    node = 1;
    for (int k = 0; k < 6; ++k) node = 2 * node + rc.Decode(&m.far[node]);
    len = node - 64 + 1;
  }

  const int below = len - 1;
  const int modeled = std::min(below, ResidualModel::kModeledBits);
  int top = 1;
  for (int j = 0; j < modeled; ++j) top = 2 * top + rc.Decode(&m.mantissa[len][top]);
  uint64_t low;
  if (!raw.Read(below - modeled, &low)) {
    *failed = true;
    return 0;
  }
  // top is the leading one followed by the modeled bits; below - modeled < 64.
  const uint64_t mag = (static_cast<uint64_t>(top) << (below - modeled)) | low;
  return negative ? 0 - mag : mag;
}

}  // namespace trainwatch::codec
