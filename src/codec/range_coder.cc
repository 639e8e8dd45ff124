#include "codec/range_coder.h"

namespace trainwatch::codec {

// Writes the cached byte (plus a carry) and the run of 0xFF bytes behind it,
// now that no later carry can reach them.
void RangeEncoder::FlushCache() {
  const uint8_t carry = static_cast<uint8_t>(low_ >> 32);
  uint8_t byte = cache_;
  do {
    // The first byte is always 0 (the interval starts inside [0, 2^32)), so it
    // is implied rather than written.
    if (first_byte_) {
      first_byte_ = false;
    } else {
      out_->push_back(static_cast<char>(static_cast<uint8_t>(byte + carry)));
    }
    byte = 0xFF;
  } while (--cache_size_ != 0);
  cache_ = static_cast<uint8_t>(low_ >> 24);
}

void RangeEncoder::Finish() {
  // Any value in [low, low + range) decodes identically; the one with the most
  // trailing zero bits lets the trim below drop the most bytes.
  const uint64_t end = low_ + range_;  // exclusive
  for (int shift = 32; shift > 0; --shift) {
    const uint64_t mask = (uint64_t{1} << shift) - 1;
    const uint64_t candidate = (low_ + mask) & ~mask;
    if (candidate < end) {
      low_ = candidate;
      break;
    }
  }
  for (int i = 0; i < 5; ++i) ShiftLow();
  while (out_->size() > start_ && out_->back() == '\0') out_->pop_back();
}

bool RangeDecoder::Init(std::string_view data) {
  data_ = reinterpret_cast<const uint8_t*>(data.data());
  size_ = data.size();
  pos_ = 0;
  range_ = 0xFFFFFFFF;
  code_ = 0;
  for (int i = 0; i < 4; ++i) code_ = (code_ << 8) | NextByte();
  return code_ < range_;
}

}  // namespace trainwatch::codec
