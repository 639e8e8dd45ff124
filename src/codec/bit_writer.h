#pragma once
// BitWriter: appends bits, most significant first, to a std::string. Used for the
// Gorilla XOR value stream and for the raw (uncoded) low bits of residuals.

#include <cstdint>
#include <string>

namespace trainwatch::codec {

class BitWriter {
 public:
  // Appends to *out, which must outlive the writer; Flush() before reading *out.
  explicit BitWriter(std::string* out) : out_(out) {}

  // Writes the low `n` bits of `v` (0 <= n <= 64), most significant first.
  void Write(uint64_t v, int n) {
    if (n == 0) return;
    if (n < 64) v &= (uint64_t{1} << n) - 1;
    const int free_bits = 64 - pending_;
    if (n < free_bits) {
      acc_ = (acc_ << n) | v;
      pending_ += n;
    } else if (n == free_bits) {  // fills the accumulator exactly
      Emit64(pending_ == 0 ? v : (acc_ << n) | v);
      acc_ = 0;
      pending_ = 0;
    } else {  // pending_ > 0 here, so the shifts below are < 64
      const int rest = n - free_bits;
      Emit64((acc_ << free_bits) | (v >> rest));
      acc_ = v & ((uint64_t{1} << rest) - 1);
      pending_ = rest;
    }
    bit_count_ += static_cast<uint64_t>(n);
  }
  void WriteBit(bool bit) { Write(bit ? 1 : 0, 1); }

  // Writes the pending bits, padding the last byte with zero bits. Call once, last.
  void Flush() {
    while (pending_ >= 8) {
      pending_ -= 8;
      out_->push_back(static_cast<char>(acc_ >> pending_));
    }
    if (pending_ > 0) out_->push_back(static_cast<char>(acc_ << (8 - pending_)));
    acc_ = 0;
    pending_ = 0;
  }

  uint64_t bit_count() const { return bit_count_; }

 private:
  void Emit64(uint64_t w) {
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(w >> (56 - 8 * i));
    out_->append(buf, 8);
  }

  std::string* out_;
  uint64_t acc_ = 0;  // the low `pending_` bits are not yet written
  int pending_ = 0;   // 0..63
  uint64_t bit_count_ = 0;
};

}  // namespace trainwatch::codec
