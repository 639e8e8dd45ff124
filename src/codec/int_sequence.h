#pragma once
// IntSequence: lossless coding of a sequence of 64-bit integers, the workhorse
// behind irregular timestamps and decimal or float-bit values.
//
// All arithmetic wraps modulo 2^64, so any input round-trips, whatever its
// range. The encoder
//   1. divides the differences x[i] - x[0] by their greatest common divisor g
//      (timestamps on whole seconds, byte counters in pages, values in 0.5 steps);
//   2. per block of kIntSequenceBlock residuals picks the predictor with the
//      smallest residuals: P0 (value - chunk median), P1 (delta - median delta),
//      P2 (delta of delta) or P3 (first value + i * median delta);
//   3. codes each residual as zero flag, sign, bit length (near the chunk's
//      typical length, or in full) and the three bits under the leading one with
//      adaptive binary range coding, and the remaining low bits raw.
// Byte layout: docs/format/chunk.md ("Integer sequence").

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "codec/bit_reader.h"
#include "codec/range_coder.h"
#include "codec/residual_coder.h"

namespace trainwatch::codec {

inline constexpr size_t kIntSequenceBlock = 32;

// Appends the encoding of x[0..n) (n >= 1) to *out. When `first_known`, x[0] is
// not written: the decoder is given it.
void EncodeIntSequence(const uint64_t* x, size_t n, bool first_known, std::string* out);

// Streams the values back. Init() checks the framing; Next() decodes.
class IntSequenceDecoder {
 public:
  // `section` is exactly what EncodeIntSequence appended (it must outlive the
  // decoder), `n` the number of values and `first` x[0] when `first_known`.
  // `what` names the sequence in error messages ("timestamps", "values").
  absl::Status Init(std::string_view section, size_t n, bool first_known, uint64_t first,
                    const char* what);

  // Decodes up to `max` next values into out[]; returns how many (0 at the end
  // or once the input proved corrupt, see CheckEnd()).
  size_t Next(uint64_t* out, size_t max);

  // After the last value: OK when the input was consumed exactly as written,
  // DataLoss otherwise.
  absl::Status CheckEnd() const;

 private:
  template <int kPredictor>
  void DecodeRun(uint64_t* out, size_t count);

  const char* what_ = "";
  size_t n_ = 0;
  size_t i_ = 0;  // index of the next value
  uint64_t x0_ = 0;
  uint64_t g_ = 0;  // 0: every value equals x0
  uint64_t c0_ = 0;
  uint64_t c1_ = 0;
  int base_length_ = 1;
  uint64_t y1_ = 0;  // y[i-1]
  uint64_t y2_ = 0;  // y[i-2]
  int predictor_ = 1;
  bool failed_ = false;
  RangeDecoder rc_;
  BitReader raw_;
  ResidualModel model_;
};

}  // namespace trainwatch::codec
