#pragma once
// Gorilla XOR value coding (Pelkonen et al., VLDB 2015, §4.1.2), Prometheus'
// variant: the first value raw, then per value
//   '0'                                  same bits as the previous value
//   '10' <meaningful bits>               XOR fits the previous leading/trailing window
//   '11' <5: leading> <6: length> <bits> new window (length 64 written as 0)
// Byte layout: docs/format/chunk.md ("XOR values").

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "codec/bit_reader.h"
#include "codec/bit_writer.h"

namespace trainwatch::codec {

// Exact number of bits XorEncode writes for values[0..n) (n >= 1).
uint64_t XorEncodedBits(const double* values, size_t n);

// Writes values[0..n) (n >= 1); the caller flushes the writer.
void XorEncode(const double* values, size_t n, BitWriter* out);

class XorDecoder {
 public:
  // `data` must outlive the decoder.
  void Init(std::string_view data, size_t n);
  // Decodes up to `max` next values; returns how many (0 at the end or on corrupt input).
  size_t Next(double* out, size_t max);
  // After the last value: DataLoss when the input ended early, held an impossible
  // window, or has more than padding left over.
  absl::Status CheckEnd() const;

 private:
  BitReader in_;
  size_t n_ = 0;
  size_t i_ = 0;
  uint64_t prev_ = 0;
  int leading_ = 0;
  int trailing_ = 0;
  bool failed_ = false;
};

}  // namespace trainwatch::codec
