#pragma once
// BitReader: reads bits most significant first from a byte string written by
// BitWriter. Never reads outside the input: a read past the end fails and
// consumes nothing.

#include <cstdint>
#include <string_view>

namespace trainwatch::codec {

class BitReader {
 public:
  BitReader() = default;
  // `data` must outlive the reader.
  explicit BitReader(std::string_view data)
      : p_(reinterpret_cast<const uint8_t*>(data.data())), end_(p_ + data.size()) {}

  uint64_t BitsLeft() const {
    return static_cast<uint64_t>(avail_) + 8 * static_cast<uint64_t>(end_ - p_);
  }

  // Reads `n` bits (0 <= n <= 64) into *v. False, consuming nothing, when fewer remain.
  bool Read(int n, uint64_t* v) {
    if (static_cast<uint64_t>(n) > BitsLeft()) return false;
    if (n == 0) {
      *v = 0;
    } else if (n <= 56) {
      *v = Take(n);
    } else {
      const uint64_t hi = Take(n - 32);
      *v = (hi << 32) | Take(32);
    }
    return true;
  }
  bool ReadBit(bool* bit) {
    uint64_t v;
    if (!Read(1, &v)) return false;
    *bit = v != 0;
    return true;
  }

 private:
  // 1 <= n <= 56 and at least n bits remain.
  uint64_t Take(int n) {
    if (avail_ < n) Refill();
    const uint64_t v = buf_ >> (64 - n);
    buf_ <<= n;
    avail_ -= n;
    return v;
  }
  // Tops the buffer up to at least 57 bits, or to the end of the input. Bits of
  // the stream beyond `avail_` may already sit in buf_; OR-ing them again is harmless.
  void Refill() {
    if (end_ - p_ >= 8) {
      uint64_t w = 0;
      for (int i = 0; i < 8; ++i) w = (w << 8) | p_[i];
      buf_ |= w >> avail_;
      const int bytes = (63 - avail_) >> 3;
      p_ += bytes;
      avail_ += 8 * bytes;
    } else {
      while (avail_ <= 56 && p_ < end_) {
        buf_ |= static_cast<uint64_t>(*p_++) << (56 - avail_);
        avail_ += 8;
      }
    }
  }

  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t buf_ = 0;  // the top `avail_` bits are the next bits of the stream
  int avail_ = 0;
};

}  // namespace trainwatch::codec
