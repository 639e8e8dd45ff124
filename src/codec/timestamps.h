#pragma once
// Timestamp coding of a chunk. Regular chunks (every step equal: 1000 ms, 100 ms,
// or 0 for repeated equal timestamps) cost nothing beyond the chunk header, since
// first and last timestamp and the count fix every timestamp. Anything else goes
// through IntSequence, whose delta-of-delta, delta-minus-median and grid
// predictors cover jittered ticks and irregular log-line times.
// Byte layout: docs/format/chunk.md ("Timestamps").

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "codec/int_sequence.h"

namespace trainwatch::codec {

enum class TimestampEncoding : uint8_t {
  kRegular = 0,      // t[i] = first + i * (last - first) / (n - 1); no section
  kIntSequence = 1,  // IntSequence section, x[0] implied by the header
};

// True when t[0..n) (n >= 1, non-decreasing) is evenly spaced.
bool IsRegular(const int64_t* t_ms, size_t n);

// Appends the section for t[0..n) in `encoding` (nothing for kRegular).
void EncodeTimestamps(const int64_t* t_ms, size_t n, TimestampEncoding encoding, std::string* out);

class TimestampDecoder {
 public:
  // `section` must outlive the decoder. first/last/n come from the chunk header.
  absl::Status Init(TimestampEncoding encoding, std::string_view section, size_t n,
                    int64_t first_t_ms, int64_t last_t_ms);
  // Up to `max` next timestamps; returns how many (0 at the end or on corrupt input).
  size_t Next(int64_t* out, size_t max);
  // After the last timestamp: DataLoss when the section was not consumed exactly.
  absl::Status CheckEnd() const;

 private:
  TimestampEncoding encoding_ = TimestampEncoding::kRegular;
  size_t n_ = 0;
  size_t i_ = 0;
  uint64_t first_ = 0;
  uint64_t step_ = 0;
  IntSequenceDecoder sequence_;
};

}  // namespace trainwatch::codec
