#include "codec/timestamps.h"

#include "absl/strings/str_format.h"

namespace trainwatch::codec {

bool IsRegular(const int64_t* t_ms, size_t n) {
  if (n <= 2) return true;
  // Unsigned arithmetic: the span of two int64 timestamps always fits in uint64.
  const uint64_t span = static_cast<uint64_t>(t_ms[n - 1]) - static_cast<uint64_t>(t_ms[0]);
  if (span % (n - 1) != 0) return false;
  const uint64_t step = span / (n - 1);
  for (size_t i = 1; i < n; ++i) {
    if (static_cast<uint64_t>(t_ms[i]) - static_cast<uint64_t>(t_ms[i - 1]) != step) return false;
  }
  return true;
}

void EncodeTimestamps(const int64_t* t_ms, size_t n, TimestampEncoding encoding, std::string* out) {
  if (encoding == TimestampEncoding::kRegular) return;
  // IntSequence wants unsigned input; int64 and uint64 share the bit pattern.
  static_assert(sizeof(int64_t) == sizeof(uint64_t));
  EncodeIntSequence(reinterpret_cast<const uint64_t*>(t_ms), n, /*first_known=*/true, out);
}

absl::Status TimestampDecoder::Init(TimestampEncoding encoding, std::string_view section, size_t n,
                                    int64_t first_t_ms, int64_t last_t_ms) {
  encoding_ = encoding;
  n_ = n;
  i_ = 0;
  first_ = static_cast<uint64_t>(first_t_ms);
  step_ = 0;
  if (encoding == TimestampEncoding::kRegular) {
    if (!section.empty()) {
      return absl::DataLossError(absl::StrFormat(
          "chunk timestamps: regular timestamps take no section, found %d bytes", section.size()));
    }
    if (n >= 2) {
      const uint64_t span = static_cast<uint64_t>(last_t_ms) - first_;
      if (span % (n - 1) != 0) {
        return absl::DataLossError(absl::StrFormat(
            "chunk timestamps: span %d ms does not divide into %d equal steps", span, n - 1));
      }
      step_ = span / (n - 1);
    }
    return absl::OkStatus();
  }
  return sequence_.Init(section, n, /*first_known=*/true, first_, "timestamps");
}

size_t TimestampDecoder::Next(int64_t* out, size_t max) {
  if (encoding_ == TimestampEncoding::kIntSequence) {
    return sequence_.Next(reinterpret_cast<uint64_t*>(out), max);
  }
  size_t produced = 0;
  while (produced < max && i_ < n_) {
    out[produced++] = static_cast<int64_t>(first_ + static_cast<uint64_t>(i_) * step_);
    ++i_;
  }
  return produced;
}

absl::Status TimestampDecoder::CheckEnd() const {
  if (encoding_ == TimestampEncoding::kIntSequence) return sequence_.CheckEnd();
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
