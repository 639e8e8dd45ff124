#pragma once
// Adaptive binary range coder (the LZMA construction: 32-bit range, carry
// propagation through a cached byte) with 16-bit probabilities whose adaptation
// rate starts fast and settles (1/2, 1/4, ... down to 1/32), so a model learns
// from the first few dozen decisions of a chunk.
//
// Stream conventions (docs/format/chunk.md): LZMA's always-zero first byte is
// not written, and trailing zero bytes are trimmed; the decoder reads zeros past
// the end, so both are implied.

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::codec {

// Probability that the next decision is 0, in 1/65536, plus how many updates it
// saw. Both are 16-bit on purpose: a char member could alias the coder's state
// and keep the compiler from holding it in registers.
struct AdaptiveBit {
  uint16_t p0 = 32768;
  uint16_t seen = 0;

  void Update(int bit) {
    // Adaptation rate 1/2^rate: fast while the model knows little, then 1/32.
    // p0 stays inside [1, 65535] without clamping: a step never crosses 0 or 65536.
    static constexpr uint8_t kRate[] = {1, 2, 3, 3, 4, 4, 4, 4, 5};
    static constexpr uint16_t kLast = sizeof(kRate) - 1;
    const int rate = kRate[seen];
    seen += seen < kLast ? 1 : 0;
    const int p = p0;
    p0 = static_cast<uint16_t>(bit == 0 ? p + ((65536 - p) >> rate) : p - (p >> rate));
  }
};

class RangeEncoder {
 public:
  // Appends to *out (which must outlive the encoder); call Finish() once at the end.
  explicit RangeEncoder(std::string* out) : out_(out), start_(out->size()) {}

  void Encode(AdaptiveBit* model, int bit) {
    const uint32_t bound = (range_ >> 16) * model->p0;
    if (bit == 0) {
      range_ = bound;
    } else {
      low_ += bound;
      range_ -= bound;
    }
    model->Update(bit);
    while (range_ < (1u << 24)) {
      range_ <<= 8;
      ShiftLow();
    }
  }

  // Flushes the final interval, choosing the value in it with the most trailing
  // zero bits, and trims trailing zero bytes.
  void Finish();

 private:
  void ShiftLow() {
    if (static_cast<uint32_t>(low_) < 0xFF000000u || (low_ >> 32) != 0) FlushCache();
    ++cache_size_;
    low_ = (low_ & 0x00FFFFFF) << 8;
  }
  void FlushCache();

  std::string* out_;
  size_t start_;
  uint64_t low_ = 0;  // 33 bits: bit 32 is a pending carry
  uint32_t range_ = 0xFFFFFFFF;
  uint8_t cache_ = 0;
  uint64_t cache_size_ = 1;
  bool first_byte_ = true;
};

class RangeDecoder {
 public:
  RangeDecoder() = default;
  // `data` must outlive the decoder. False when the stream cannot have come from
  // RangeEncoder (its first code word lies outside the initial range).
  bool Init(std::string_view data);

  int Decode(AdaptiveBit* model) {
    const uint32_t bound = (range_ >> 16) * model->p0;
    int bit;
    if (code_ < bound) {
      range_ = bound;
      bit = 0;
    } else {
      code_ -= bound;
      range_ -= bound;
      bit = 1;
    }
    model->Update(bit);
    while (range_ < (1u << 24)) {
      range_ <<= 8;
      code_ = (code_ << 8) | NextByte();
    }
    return bit;
  }

  // True when the decoder is still consistent with a stream RangeEncoder wrote:
  // the code lies inside the range and every byte of the input was used.
  bool Consistent() const { return code_ < range_ && pos_ >= size_; }

 private:
  uint32_t NextByte() { return pos_ < size_ ? data_[pos_++] : (++pos_, 0u); }

  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;  // may run past size_: reads there yield zero bytes
  uint32_t code_ = 0;
  uint32_t range_ = 0xFFFFFFFF;
};

}  // namespace trainwatch::codec
