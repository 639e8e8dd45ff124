// ChunkBuilder: collects samples, tracks the decimal scale and a size estimate as
// they come, and encodes the whole chunk in Finish(). Layout: docs/format/chunk.md.
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <utility>

#include "codec/chunk.h"
#include "codec/decimal.h"
#include "codec/float_bits.h"
#include "codec/stepped_values.h"
#include "codec/varint.h"
#include "util/check.h"

namespace trainwatch::codec {
namespace {

// From this decimal scale on, values are likely full-precision floats that
// happen to print in few digits (0.6050331899544783 is decimal at k = 16);
// their float bits may code smaller, so both are tried.
constexpr int kTryFloatBitsFromScale = 10;

// Stepped values are tried on chunks of at least this many samples whose float
// bits take from 1 to 7 bytes a value: a smooth curve in doubles takes 3 to 5,
// bit patterns with no order take 8. A quick trial then declines noise.
constexpr size_t kTrySteppedFromSamples = 16;
constexpr size_t kTrySteppedFromBytesPerValue = 1;
constexpr size_t kTrySteppedBelowBytesPerValue = 7;

// Fixed part of the estimate: chunk header plus a value section header.
constexpr size_t kEstimatedOverheadBytes = 16;

constexpr uint64_t kSaturated = ~uint64_t{0};

// Below this magnitude, value * 10^k rounds to the right integer d by itself:
// the two roundings (d / 10^k, then * 10^k) err by at most |d| * 2^-52 < 0.25.
constexpr uint64_t kFastDecimalLimit = uint64_t{1} << 50;

// The values as ordered float bits, shifted right by their common trailing
// zero bits (*shift), as value encodings 3 and 5 code them.
std::vector<uint64_t> OrderedFloatBits(const double* values, size_t n, int* shift) {
  *shift = CommonTrailingZeros(values, n);
  std::vector<uint64_t> ordered(n);
  for (size_t i = 0; i < n; ++i) ordered[i] = FloatToOrdered(values[i], *shift);
  return ordered;
}

uint64_t Magnitude(int64_t v) {
  return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

}  // namespace

void ChunkBuilder::Append(int64_t t_ms, double value) {
  const size_t n = size_;
  TW_CHECK(n < kMaxChunkSamples);
  if (n == 0) {
    first_t_ms_ = t_ms;
    decimal_scale_ = DecimalScale(value, 0);
    if (decimal_scale_ >= 0) {
      ToDecimal(value, decimal_scale_, &last_decimal_);
      max_abs_decimal_ = Magnitude(last_decimal_);
    }
  } else {
    TW_CHECK(t_ms >= last_t_ms_);  // the caller sorts
    const uint64_t delta = static_cast<uint64_t>(t_ms) - static_cast<uint64_t>(last_t_ms_);
    if (n >= 2 && delta != last_t_delta_) {
      estimated_bits_ +=
          static_cast<uint64_t>(ZigZagBits(static_cast<int64_t>(delta - last_t_delta_))) + 3;
    }
    last_t_delta_ = delta;
    const double last_value = last_value_;
    if (std::bit_cast<uint64_t>(value) != std::bit_cast<uint64_t>(last_value)) {
      all_same_ = false;
      ++changed_values_;
      int64_t d = 0;
      if (decimal_scale_ >= 0 && !ToDecimal(value, decimal_scale_, &d)) {
        const int k = DecimalScale(value, decimal_scale_ + 1);
        if (k < 0) {
          decimal_scale_ = -1;
          last_step_ = 0;
        } else {
          // Every earlier change now needs about log2(10) more bits per digit.
          estimated_bits_ += changed_values_ * static_cast<uint64_t>(k - decimal_scale_) * 10 / 3;
          uint64_t scaled = static_cast<uint64_t>(last_decimal_);
          for (int i = decimal_scale_; i < k; ++i) {
            scaled *= 10;  // wraps harmlessly: an estimate
            max_abs_decimal_ =
                max_abs_decimal_ > kSaturated / 10 ? kSaturated : 10 * max_abs_decimal_;
          }
          last_decimal_ = static_cast<int64_t>(scaled);
          last_step_ = 0;
          decimal_scale_ = k;
          ToDecimal(value, k, &d);
        }
      }
      if (decimal_scale_ >= 0) max_abs_decimal_ = std::max(max_abs_decimal_, Magnitude(d));
      // The coder pays about the bits of the smaller of delta and delta of
      // delta (it centers deltas on their median), plus about two.
      const uint64_t current =
          decimal_scale_ >= 0 ? static_cast<uint64_t>(d) : FloatToOrdered(value, 0);
      const uint64_t previous = decimal_scale_ >= 0 ? static_cast<uint64_t>(last_decimal_)
                                                    : FloatToOrdered(last_value, 0);
      const uint64_t step = current - previous;
      const int bits = std::min(ZigZagBits(static_cast<int64_t>(step)),
                                ZigZagBits(static_cast<int64_t>(step - last_step_))) +
                       2;
      last_step_ = step;
      if (decimal_scale_ >= 0) last_decimal_ = d;
      estimated_bits_ += static_cast<uint64_t>(std::min(bits, 66));
    } else {
      last_step_ = 0;
    }
  }
  if (n < kBlockRows) {
    t_ms_.push_back(t_ms);
    values_.push_back(value);
  } else {
    if (n % kBlockRows == 0) {
      const size_t block = n / kBlockRows - 1;
      // Blocks fill in order; Clear() keeps them for the next samples.
      if (block == blocks_.size()) blocks_.push_back(std::make_unique_for_overwrite<Block>());
      tail_block_ = blocks_[block].get();
    }
    tail_block_->t_ms[n % kBlockRows] = t_ms;
    tail_block_->values[n % kBlockRows] = value;
  }
  last_t_ms_ = t_ms;
  last_value_ = value;
  ++size_;
}

size_t ChunkBuilder::EstimatedBytes() const {
  if (size_ == 0) return 3;
  return kEstimatedOverheadBytes + static_cast<size_t>(estimated_bits_ / 8);
}

void ChunkBuilder::Clear() {
  size_ = 0;
  t_ms_.clear();
  values_.clear();
  tail_block_ = nullptr;
  first_t_ms_ = 0;
  last_t_ms_ = 0;
  last_t_delta_ = 0;
  last_value_ = 0;
  decimal_scale_ = 0;
  last_decimal_ = 0;
  max_abs_decimal_ = 0;
  last_step_ = 0;
  all_same_ = true;
  changed_values_ = 0;
  estimated_bits_ = 0;
}

void ChunkBuilder::PrefetchNextAppend() const {
  const size_t n = size_;
  if (n < kBlockRows) {
    if (n < t_ms_.capacity()) {
      __builtin_prefetch(t_ms_.data() + n, 1);
      __builtin_prefetch(values_.data() + n, 1);
    }
  } else if (n % kBlockRows != 0) {
    __builtin_prefetch(&tail_block_->t_ms[n % kBlockRows], 1);
    __builtin_prefetch(&tail_block_->values[n % kBlockRows], 1);
  }
}

size_t ChunkBuilder::MemoryBytes() const {
  return t_ms_.capacity() * sizeof(int64_t) + values_.capacity() * sizeof(double) +
         blocks_.size() * sizeof(Block) + blocks_.capacity() * sizeof(blocks_[0]);
}

ChunkBuilder::ChunkBuilder(ChunkBuilder&& other) noexcept { *this = std::move(other); }

ChunkBuilder& ChunkBuilder::operator=(ChunkBuilder&& other) noexcept {
  if (this == &other) return *this;
  size_ = other.size_;
  t_ms_ = std::move(other.t_ms_);
  values_ = std::move(other.values_);
  blocks_ = std::move(other.blocks_);
  tail_block_ = other.tail_block_;  // the block itself does not move
  first_t_ms_ = other.first_t_ms_;
  last_t_ms_ = other.last_t_ms_;
  last_t_delta_ = other.last_t_delta_;
  last_value_ = other.last_value_;
  decimal_scale_ = other.decimal_scale_;
  last_decimal_ = other.last_decimal_;
  max_abs_decimal_ = other.max_abs_decimal_;
  last_step_ = other.last_step_;
  all_same_ = other.all_same_;
  changed_values_ = other.changed_values_;
  estimated_bits_ = other.estimated_bits_;
  other.Clear();  // its size, and its vectors left in a valid but unspecified state
  return *this;
}

std::string ChunkBuilder::Finish() const {
  std::string out;
  FinishTo(&out);
  return out;
}

void ChunkBuilder::FinishTo(std::string* out) const { EncodeChunk(std::nullopt, out); }

std::optional<std::string> ChunkBuilder::FinishWithValueEncodingForTest(
    ValueEncoding encoding) const {
  std::string out;
  if (!EncodeChunk(encoding, &out)) return std::nullopt;
  return out;
}

bool ChunkBuilder::EncodeChunk(std::optional<ValueEncoding> forced, std::string* out) const {
  const size_t n = size_;
  const size_t header_at = out->size();
  out->push_back(static_cast<char>(kChunkFormatVersionPlain));  // set below
  out->push_back(0);                                            // encodings, set below
  PutVarint(n, out);
  if (n == 0) return !forced.has_value();
  // The samples as two arrays: the vectors, or copies when blocks hold some.
  const int64_t* t_ms = t_ms_.data();
  const double* values = values_.data();
  std::vector<int64_t> t_ms_copy;
  std::vector<double> values_copy;
  if (n > kBlockRows) {
    t_ms_copy.reserve(n);
    values_copy.reserve(n);
    t_ms_copy.assign(t_ms_.begin(), t_ms_.end());
    values_copy.assign(values_.begin(), values_.end());
    for (size_t at = kBlockRows, b = 0; at < n; at += kBlockRows, ++b) {
      const size_t rows = std::min(kBlockRows, n - at);
      t_ms_copy.insert(t_ms_copy.end(), blocks_[b]->t_ms, blocks_[b]->t_ms + rows);
      values_copy.insert(values_copy.end(), blocks_[b]->values, blocks_[b]->values + rows);
    }
    t_ms = t_ms_copy.data();
    values = values_copy.data();
  }
  PutSignedVarint(t_ms[0], out);
  PutVarint(static_cast<uint64_t>(t_ms[n - 1]) - static_cast<uint64_t>(t_ms[0]), out);

  const TimestampEncoding ts_encoding =
      IsRegular(t_ms, n) ? TimestampEncoding::kRegular : TimestampEncoding::kIntSequence;
  if (ts_encoding == TimestampEncoding::kIntSequence) {
    std::string section;
    EncodeTimestamps(t_ms, n, ts_encoding, &section);
    PutVarint(section.size(), out);
    out->append(section);
  }
  ValueEncoding value_encoding;
  if (forced.has_value()) {
    value_encoding = *forced;
    if (!EncodeValuesAs(values, value_encoding, out)) return false;
  } else {
    EncodeValues(values, out, &value_encoding);
  }
  // Version 1 readers know every encoding but stepped.
  (*out)[header_at] =
      static_cast<char>(value_encoding == ValueEncoding::kStepped ? kChunkFormatVersionStepped
                                                                  : kChunkFormatVersionPlain);
  (*out)[header_at + 1] = static_cast<char>(static_cast<uint8_t>(ts_encoding) |
                                            (static_cast<uint8_t>(value_encoding) << 2));
  return true;
}

bool ChunkBuilder::EncodeValuesAs(const double* values, ValueEncoding encoding,
                                  std::string* out) const {
  const size_t n = size_;
  switch (encoding) {
    case ValueEncoding::kConstant:
      if (!all_same_) return false;
      PutFixed64(std::bit_cast<uint64_t>(values[0]), out);
      return true;
    case ValueEncoding::kXor: {
      BitWriter writer(out);
      XorEncode(values, n, &writer);
      writer.Flush();
      return true;
    }
    case ValueEncoding::kDecimal: {
      if (decimal_scale_ < 0) return false;
      std::vector<int64_t> d(n);
      if (max_abs_decimal_ < kFastDecimalLimit) {
        // Append checked every value at a scale <= decimal_scale_, so each is
        // decimal at decimal_scale_ too; only the integer is left to find.
        const double scale = Pow10(decimal_scale_);
        for (size_t i = 0; i < n; ++i)
          d[i] = static_cast<int64_t>(std::nearbyint(values[i] * scale));
      } else if (!ToDecimals(values, n, decimal_scale_, d.data())) {
        return false;  // a scale raised late pushed an early value past 2^53
      }
      out->push_back(static_cast<char>(decimal_scale_));
      EncodeIntSequence(reinterpret_cast<const uint64_t*>(d.data()), n, /*first_known=*/false, out);
      return true;
    }
    case ValueEncoding::kFloatBits: {
      int shift;
      const std::vector<uint64_t> ordered = OrderedFloatBits(values, n, &shift);
      out->push_back(static_cast<char>(shift));
      EncodeIntSequence(ordered.data(), n, /*first_known=*/false, out);
      return true;
    }
    case ValueEncoding::kRaw:
      for (size_t i = 0; i < n; ++i) PutFixed64(std::bit_cast<uint64_t>(values[i]), out);
      return true;
    case ValueEncoding::kStepped:
      return EncodeSteppedAs(values, ~size_t{0}, out);
  }
  return false;
}

bool ChunkBuilder::EncodeSteppedAs(const double* values, size_t size_to_beat,
                                   std::string* out) const {
  const size_t n = size_;
  if (n < 2) return false;
  int shift;
  const std::vector<uint64_t> ordered = OrderedFloatBits(values, n, &shift);
  const size_t at = out->size();
  out->push_back(static_cast<char>(shift));
  if (!EncodeSteppedValues(ordered.data(), n, size_to_beat - 1, out)) {
    out->resize(at);
    return false;
  }
  return true;
}

void ChunkBuilder::EncodeValues(const double* values, std::string* out,
                                ValueEncoding* encoding) const {
  const size_t n = size_;
  // Decimal and float bits are coded to learn their size; the others are counted.
  // A constant also goes through IntSequence, which then writes just the value
  // (float bits shift out trailing zeros, so -12288.0 takes 2 bytes, not 8).
  std::string best;
  uint64_t best_size = ~uint64_t{0};
  if (decimal_scale_ >= 0 && EncodeValuesAs(values, ValueEncoding::kDecimal, &best)) {
    *encoding = ValueEncoding::kDecimal;
    best_size = best.size();
  }
  if (best_size == ~uint64_t{0} || decimal_scale_ >= kTryFloatBitsFromScale || all_same_) {
    std::string candidate;
    EncodeValuesAs(values, ValueEncoding::kFloatBits, &candidate);
    if (candidate.size() < best_size) {
      best.swap(candidate);
      best_size = best.size();
      *encoding = ValueEncoding::kFloatBits;
    }
  }
  // Stepped pays where float bits leave deltas of many bits on a smooth curve
  // (a learning rate between training steps); it declines noise by itself
  // after a short trial.
  if (*encoding == ValueEncoding::kFloatBits && n >= kTrySteppedFromSamples &&
      best_size >= kTrySteppedFromBytesPerValue * n &&
      best_size < kTrySteppedBelowBytesPerValue * n) {
    std::string candidate;
    if (EncodeSteppedAs(values, best_size, &candidate) && candidate.size() < best_size) {
      best.swap(candidate);
      best_size = best.size();
      *encoding = ValueEncoding::kStepped;
    }
  }
  if (all_same_ && 8 < best_size) {
    best_size = 8;
    *encoding = ValueEncoding::kConstant;
  }
  // XOR needs at least 64 + (n - 1) bits: only sized when that could win.
  if (best_size * 8 > 64 + (n - 1)) {
    const uint64_t xor_size = (XorEncodedBits(values, n) + 7) / 8;
    if (xor_size < best_size) {
      best_size = xor_size;
      *encoding = ValueEncoding::kXor;
    }
  }
  if (8 * n < best_size) {
    *encoding = ValueEncoding::kRaw;
  }
  if (*encoding == ValueEncoding::kDecimal || *encoding == ValueEncoding::kFloatBits ||
      *encoding == ValueEncoding::kStepped) {
    out->append(best);
  } else {
    EncodeValuesAs(values, *encoding, out);
  }
}

}  // namespace trainwatch::codec
