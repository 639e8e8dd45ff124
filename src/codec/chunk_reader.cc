// ChunkReader and DecodeChunk: validate the framing, then decode block by block.
// Layout: docs/format/chunk.md.
#include <algorithm>
#include <bit>
#include <limits>

#include "absl/strings/str_format.h"
#include "codec/chunk.h"
#include "codec/decimal.h"
#include "codec/float_bits.h"
#include "codec/varint.h"
#include "util/status_macros.h"

namespace trainwatch::codec {

absl::StatusOr<ChunkReader> ChunkReader::Open(std::string_view bytes) {
  ChunkReader reader;
  TW_RETURN_IF_ERROR(reader.Init(bytes));
  return reader;
}

absl::Status ChunkReader::Init(std::string_view bytes) {
  std::string_view in = bytes;
  if (in.size() < 3) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk of %d bytes is too short: a chunk has at least 3 (version, encodings, count)",
        in.size()));
  }
  const uint8_t version = static_cast<uint8_t>(in[0]);
  if (version < kChunkFormatVersionPlain || version > kChunkFormatVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk format version %d is not supported: this build reads versions 1 to %d (was the "
        "chunk written by a newer trainwatch, or is it not a chunk?)",
        version, kChunkFormatVersion));
  }
  const uint8_t encodings = static_cast<uint8_t>(in[1]);
  const uint8_t ts = encodings & 3;
  const uint8_t values = (encodings >> 2) & 7;
  if ((encodings >> 5) != 0 || ts > 1 || values > 5) {
    return absl::DataLossError(absl::StrFormat(
        "chunk encodings byte 0x%02x names no known timestamp/value encoding", encodings));
  }
  if (values == static_cast<uint8_t>(ValueEncoding::kStepped) &&
      version < kChunkFormatVersionStepped) {
    return absl::DataLossError("chunk of format version 1 with stepped values (a version 2 encoding)");
  }
  ts_encoding_ = static_cast<TimestampEncoding>(ts);
  value_encoding_ = static_cast<ValueEncoding>(values);
  in.remove_prefix(2);
  uint64_t n;
  if (!GetVarint(&in, &n)) return absl::DataLossError("chunk header: truncated sample count");
  if (n > kMaxChunkSamples) {
    return absl::DataLossError(absl::StrFormat(
        "chunk header: %d samples, more than the %d a chunk may hold", n, kMaxChunkSamples));
  }
  n_ = static_cast<size_t>(n);
  if (n_ == 0) {
    if (encodings != 0 || !in.empty()) {
      return absl::DataLossError("chunk header: an empty chunk has no encodings and no data");
    }
    return absl::OkStatus();
  }
  int64_t first;
  uint64_t span;
  if (!GetSignedVarint(&in, &first) || !GetVarint(&in, &span)) {
    return absl::DataLossError("chunk header: truncated first timestamp or time span");
  }
  // The span is unsigned; first + span must still be an int64.
  if (span >
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - static_cast<uint64_t>(first)) {
    return absl::DataLossError(absl::StrFormat(
        "chunk header: first timestamp %d plus span %d ms overflows int64", first, span));
  }
  if (n_ == 1 && span != 0) {
    return absl::DataLossError(
        absl::StrFormat("chunk header: one sample but a span of %d ms", span));
  }
  first_t_ms_ = first;
  last_t_ms_ = static_cast<int64_t>(static_cast<uint64_t>(first) + span);
  previous_t_ms_ = first;

  std::string_view ts_section;
  if (ts_encoding_ == TimestampEncoding::kIntSequence) {
    uint64_t size;
    if (!GetVarint(&in, &size) || size > in.size()) {
      return absl::DataLossError("chunk timestamps: section length missing or past the end");
    }
    ts_section = in.substr(0, size);
    in.remove_prefix(size);
  }
  TW_RETURN_IF_ERROR(timestamps_.Init(ts_encoding_, ts_section, n_, first_t_ms_, last_t_ms_));

  switch (value_encoding_) {
    case ValueEncoding::kConstant:
      if (!GetFixed64(&in, &constant_bits_) || !in.empty()) {
        return absl::DataLossError(absl::StrFormat(
            "chunk values: a constant takes exactly 8 bytes, found %d", in.size() + 8));
      }
      break;
    case ValueEncoding::kXor:
      xor_.Init(in, n_);
      break;
    case ValueEncoding::kRaw:
      if (in.size() != 8 * n_) {
        return absl::DataLossError(absl::StrFormat(
            "chunk values: %d raw values take %d bytes, found %d", n_, 8 * n_, in.size()));
      }
      raw_values_ = in;
      break;
    case ValueEncoding::kDecimal:
    case ValueEncoding::kFloatBits: {
      if (in.empty()) return absl::DataLossError("chunk values: missing scale/shift byte");
      value_param_ = static_cast<uint8_t>(in[0]);
      const int limit = value_encoding_ == ValueEncoding::kDecimal ? kMaxDecimalScale : 63;
      if (value_param_ > limit) {
        return absl::DataLossError(absl::StrFormat(
            "chunk values: scale/shift %d is out of range (at most %d)", value_param_, limit));
      }
      TW_RETURN_IF_ERROR(sequence_.Init(in.substr(1), n_, /*first_known=*/false, 0, "values"));
      break;
    }
    case ValueEncoding::kStepped:
      if (in.empty()) return absl::DataLossError("chunk values: missing shift byte");
      value_param_ = static_cast<uint8_t>(in[0]);
      if (value_param_ > 63) {
        return absl::DataLossError(absl::StrFormat(
            "chunk values: shift %d is out of range (at most 63)", value_param_));
      }
      stepped_ = std::make_unique<SteppedDecoder>();
      TW_RETURN_IF_ERROR(stepped_->Init(in.substr(1), n_));
      break;
  }
  return absl::OkStatus();
}

bool ChunkReader::Fail(absl::Status status) {
  status_ = std::move(status);
  pos_ = len_ = 0;
  return false;
}

bool ChunkReader::Refill() {
  if (!status_.ok() || decoded_ == n_) return false;
  const size_t want = std::min(kBlock, n_ - decoded_);
  if (timestamps_.Next(t_buf_, want) != want) {
    absl::Status s = timestamps_.CheckEnd();
    return Fail(s.ok() ? absl::DataLossError("chunk timestamps: stream ended early") : s);
  }
  size_t got = 0;
  switch (value_encoding_) {
    case ValueEncoding::kConstant:
      std::fill(v_buf_, v_buf_ + want, std::bit_cast<double>(constant_bits_));
      got = want;
      break;
    case ValueEncoding::kXor:
      got = xor_.Next(v_buf_, want);
      if (got != want) return Fail(xor_.CheckEnd());
      break;
    case ValueEncoding::kRaw: {
      std::string_view raw = raw_values_.substr(8 * decoded_, 8 * want);
      for (size_t i = 0; i < want; ++i) {
        uint64_t bits = 0;
        GetFixed64(&raw, &bits);  // cannot fail: Init checked the length
        v_buf_[i] = std::bit_cast<double>(bits);
      }
      got = want;
      break;
    }
    case ValueEncoding::kDecimal:
      got = sequence_.Next(u_buf_, want);
      for (size_t i = 0; i < got; ++i) {
        const int64_t d = static_cast<int64_t>(u_buf_[i]);
        if (d > kMaxDecimalMagnitude || d < -kMaxDecimalMagnitude) {
          return Fail(absl::DataLossError(absl::StrFormat(
              "chunk values: decimal integer %d at sample %d exceeds 2^53", d, decoded_ + i)));
        }
        v_buf_[i] = FromDecimal(d, value_param_);
      }
      break;
    case ValueEncoding::kFloatBits:
      got = sequence_.Next(u_buf_, want);
      for (size_t i = 0; i < got; ++i) v_buf_[i] = OrderedToFloat(u_buf_[i], value_param_);
      break;
    case ValueEncoding::kStepped:
      got = stepped_->Next(u_buf_, want);
      for (size_t i = 0; i < got; ++i) v_buf_[i] = OrderedToFloat(u_buf_[i], value_param_);
      break;
  }
  if (got != want) {
    absl::Status s = value_encoding_ == ValueEncoding::kStepped ? stepped_->CheckEnd()
                                                                : sequence_.CheckEnd();
    return Fail(s.ok() ? absl::DataLossError("chunk values: stream ended early") : s);
  }
  for (size_t i = 0; i < want; ++i) {
    if (t_buf_[i] < previous_t_ms_) {
      return Fail(absl::DataLossError(
          absl::StrFormat("chunk timestamps: %d at sample %d is before the previous %d", t_buf_[i],
                          decoded_ + i, previous_t_ms_)));
    }
    previous_t_ms_ = t_buf_[i];
  }
  decoded_ += want;
  if (decoded_ == n_) {
    if (previous_t_ms_ != last_t_ms_) {
      return Fail(absl::DataLossError(absl::StrFormat(
          "chunk timestamps: the last is %d, but the header says %d", previous_t_ms_, last_t_ms_)));
    }
    absl::Status s = timestamps_.CheckEnd();
    if (s.ok()) {
      if (value_encoding_ == ValueEncoding::kXor) {
        s = xor_.CheckEnd();
      } else if (value_encoding_ == ValueEncoding::kDecimal ||
                 value_encoding_ == ValueEncoding::kFloatBits) {
        s = sequence_.CheckEnd();
      } else if (value_encoding_ == ValueEncoding::kStepped) {
        s = stepped_->CheckEnd();
      }
    }
    if (!s.ok()) return Fail(std::move(s));
  }
  pos_ = 0;
  len_ = want;
  return true;
}

absl::Status DecodeChunk(std::string_view bytes, std::vector<int64_t>* t_ms,
                         std::vector<double>* values) {
  ChunkReader reader;
  TW_RETURN_IF_ERROR(reader.Init(bytes));
  const size_t t_size = t_ms->size();
  const size_t v_size = values->size();
  t_ms->reserve(t_size + reader.size());
  values->reserve(v_size + reader.size());
  while (reader.Refill()) {
    t_ms->insert(t_ms->end(), reader.t_buf_, reader.t_buf_ + reader.len_);
    values->insert(values->end(), reader.v_buf_, reader.v_buf_ + reader.len_);
  }
  if (!reader.status_.ok()) {
    t_ms->resize(t_size);
    values->resize(v_size);
    return reader.status_;
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
