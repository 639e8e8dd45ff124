#include "codec/xor_values.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_format.h"

namespace trainwatch::codec {
namespace {

constexpr int kMaxLeading = 31;  // 5 bits

// Walks the XOR coding of values[0..n), calling emit(bits, count) for each field.
template <typename Emit>
void XorWalk(const double* values, size_t n, Emit emit) {
  uint64_t prev = std::bit_cast<uint64_t>(values[0]);
  emit(prev, 64);
  int prev_leading = -1;  // no window yet
  int prev_trailing = 0;
  for (size_t i = 1; i < n; ++i) {
    const uint64_t cur = std::bit_cast<uint64_t>(values[i]);
    const uint64_t x = cur ^ prev;
    prev = cur;
    if (x == 0) {
      emit(0, 1);
      continue;
    }
    const int leading = std::min(std::countl_zero(x), kMaxLeading);
    const int trailing = std::countr_zero(x);
    if (prev_leading >= 0 && leading >= prev_leading && trailing >= prev_trailing) {
      emit(0b10, 2);
      emit(x >> prev_trailing, 64 - prev_leading - prev_trailing);
    } else {
      const int significant = 64 - leading - trailing;
      emit(0b11, 2);
      emit(static_cast<uint64_t>(leading), 5);
      emit(static_cast<uint64_t>(significant & 63), 6);  // 64 -> 0
      emit(x >> trailing, significant);
      prev_leading = leading;
      prev_trailing = trailing;
    }
  }
}

}  // namespace

uint64_t XorEncodedBits(const double* values, size_t n) {
  uint64_t bits = 0;
  XorWalk(values, n, [&bits](uint64_t, int count) { bits += static_cast<uint64_t>(count); });
  return bits;
}

void XorEncode(const double* values, size_t n, BitWriter* out) {
  XorWalk(values, n, [out](uint64_t v, int count) { out->Write(v, count); });
}

void XorDecoder::Init(std::string_view data, size_t n) {
  in_ = BitReader(data);
  n_ = n;
  i_ = 0;
  prev_ = 0;
  leading_ = -1;
  trailing_ = 0;
  failed_ = false;
}

size_t XorDecoder::Next(double* out, size_t max) {
  size_t produced = 0;
  while (produced < max && i_ < n_ && !failed_) {
    uint64_t v;
    if (i_ == 0) {
      if (!in_.Read(64, &v)) {
        failed_ = true;
        break;
      }
      prev_ = v;
    } else {
      uint64_t control;
      if (!in_.Read(1, &control)) {
        failed_ = true;
        break;
      }
      if (control == 1) {
        uint64_t fresh;
        if (!in_.Read(1, &fresh)) {
          failed_ = true;
          break;
        }
        if (fresh == 1) {
          uint64_t leading, significant;
          if (!in_.Read(5, &leading) || !in_.Read(6, &significant)) {
            failed_ = true;
            break;
          }
          if (significant == 0) significant = 64;
          if (leading + significant > 64) {  // never written by XorEncode
            failed_ = true;
            break;
          }
          leading_ = static_cast<int>(leading);
          trailing_ = static_cast<int>(64 - leading - significant);
        } else if (leading_ < 0) {  // window reuse before any window
          failed_ = true;
          break;
        }
        uint64_t x;
        if (!in_.Read(64 - leading_ - trailing_, &x)) {
          failed_ = true;
          break;
        }
        // x has at most 64 - trailing_ significant bits, so the shift keeps it whole.
        prev_ ^= trailing_ == 64 ? 0 : x << trailing_;
      }
    }
    out[produced++] = std::bit_cast<double>(prev_);
    ++i_;
  }
  return produced;
}

absl::Status XorDecoder::CheckEnd() const {
  if (failed_) {
    return absl::DataLossError(
        absl::StrFormat("chunk values: XOR stream is corrupt at value %d of %d", i_, n_));
  }
  if (i_ != n_) {
    return absl::DataLossError(absl::StrFormat("chunk values: %d of %d values decoded", i_, n_));
  }
  if (in_.BitsLeft() >= 8) {
    return absl::DataLossError(
        absl::StrFormat("chunk values: %d bits left over after the XOR stream", in_.BitsLeft()));
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
