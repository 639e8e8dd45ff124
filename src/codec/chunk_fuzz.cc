// Fuzz target for chunks. The first input byte picks the mode:
//   even: the rest is a chunk to read. Opening, DecodeChunk and ChunkReader must
//         never misbehave, must agree with each other, and decoded timestamps
//         must be sorted;
//   odd:  the rest describes samples (see Samples below); every value encoding
//         that can hold them must round-trip them bit for bit, and the chosen
//         chunk must be no larger than any of those Finish() always tries
//         (stepped, tried on some float-bit chunks after a trial, is exempt).
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "codec/chunk.h"
#include "codec/decimal.h"
#include "util/check.h"

namespace {

using trainwatch::codec::ChunkBuilder;
using trainwatch::codec::ChunkReader;
using trainwatch::codec::DecodeChunk;
using trainwatch::codec::ValueEncoding;

void ReadChunk(std::string_view bytes) {
  auto reader = ChunkReader::Open(bytes);
  if (!reader.ok()) return;
  // Huge counts are legal (a constant at a regular interval is tiny); reading a
  // prefix of them is enough to exercise the decoders.
  const size_t limit = 1 << 16;
  std::vector<int64_t> t;
  std::vector<double> v;
  int64_t t1;
  double v1;
  while (t.size() < limit && reader->Next(&t1, &v1)) {
    if (!t.empty()) TW_CHECK(t1 >= t.back());
    t.push_back(t1);
    v.push_back(v1);
  }
  if (reader->size() > limit) return;
  std::vector<int64_t> t2;
  std::vector<double> v2;
  const absl::Status status = DecodeChunk(bytes, &t2, &v2);
  TW_CHECK(status.ok() == reader->status().ok());
  if (status.ok()) {
    TW_CHECK(t == t2);
    TW_CHECK(v.size() == v2.size());
    TW_CHECK(v.empty() || std::memcmp(v.data(), v2.data(), v.size() * sizeof(double)) == 0);
  } else {
    TW_CHECK(t2.empty() && v2.empty());
  }
}

// Samples from bytes: per sample one control byte, then
//   bits 0-1: timestamp step: 0 none, 1 one byte, 2 two bytes, 3 eight bytes (any jump)
//   bits 2-3: value: 0 repeat, 1 small decimal (two bytes / 10^(bits 4-6)), 2 raw 8 bytes,
//             3 previous value with one bit flipped (one byte: bit index)
struct Samples {
  std::vector<int64_t> t;
  std::vector<double> v;
};

Samples Parse(std::string_view in) {
  Samples s;
  uint64_t t = 0;
  double value = 0;
  auto take = [&in](size_t n, uint64_t* out) {
    if (in.size() < n) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x = (x << 8) | static_cast<uint8_t>(in[i]);
    in.remove_prefix(n);
    *out = x;
    return true;
  };
  uint64_t control;
  while (s.t.size() < 5000 && take(1, &control)) {
    uint64_t x = 0;
    const int step_bytes[] = {0, 1, 2, 8};
    if (!take(static_cast<size_t>(step_bytes[control & 3]), &x)) break;
    if ((control & 3) == 3) {
      // Any later timestamp: clamp the jump so that t stays an int64 at or above the last.
      const uint64_t room = static_cast<uint64_t>(INT64_MAX) - t;
      x = x % (room == UINT64_MAX ? room : room + 1);
    }
    if (s.t.empty())
      t = static_cast<uint64_t>(static_cast<int64_t>(x)) - (uint64_t{1} << 62);
    else
      t += x;
    switch ((control >> 2) & 3) {
      case 0:
        break;
      case 1: {
        if (!take(2, &x)) return s;
        static const double kScale[] = {1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7};
        value = static_cast<double>(static_cast<int16_t>(x)) / kScale[(control >> 4) & 7];
        break;
      }
      case 2:
        if (!take(8, &x)) return s;
        value = std::bit_cast<double>(x);
        break;
      default:
        if (!take(1, &x)) return s;
        value = std::bit_cast<double>(std::bit_cast<uint64_t>(value) ^ (uint64_t{1} << (x % 64)));
        break;
    }
    s.t.push_back(static_cast<int64_t>(t));
    s.v.push_back(value);
  }
  return s;
}

void RoundTrip(std::string_view in) {
  const Samples s = Parse(in);
  // Timestamps must be non-decreasing: the first can be anywhere, later ones
  // were built as non-negative steps that stay within int64.
  for (size_t i = 1; i < s.t.size(); ++i) {
    if (s.t[i] < s.t[i - 1]) return;
  }
  ChunkBuilder builder;
  for (size_t i = 0; i < s.t.size(); ++i) builder.Append(s.t[i], s.v[i]);
  const std::string chosen = builder.Finish();
  // Finish() does not try float bits for varying decimals of scale < 10.
  int scale = 0;
  bool all_same = true;
  for (size_t i = 0; i < s.v.size() && scale >= 0; ++i) {
    scale = trainwatch::codec::DecimalScale(s.v[i], scale);
    all_same = all_same && std::bit_cast<uint64_t>(s.v[i]) == std::bit_cast<uint64_t>(s.v[0]);
  }
  const bool float_bits_tried =
      all_same || scale < 0 || scale >= 10 ||
      !builder.FinishWithValueEncodingForTest(ValueEncoding::kDecimal).has_value();
  // Stepped is tried only on some float-bit chunks, and a trial may decline
  // it, so the choice is not always the smaller: only its round trip counts.
  for (ValueEncoding e : {ValueEncoding::kConstant, ValueEncoding::kXor, ValueEncoding::kDecimal,
                          ValueEncoding::kFloatBits, ValueEncoding::kRaw,
                          ValueEncoding::kStepped}) {
    std::optional<std::string> forced = builder.FinishWithValueEncodingForTest(e);
    if (!forced.has_value()) continue;
    if ((e != ValueEncoding::kFloatBits || float_bits_tried) &&
        e != ValueEncoding::kStepped) {
      TW_CHECK(chosen.size() <= forced->size());
    }
    std::vector<int64_t> t;
    std::vector<double> v;
    TW_CHECK(DecodeChunk(*forced, &t, &v).ok());
    TW_CHECK(t == s.t);
    TW_CHECK(v.size() == s.v.size());
    TW_CHECK(v.empty() || std::memcmp(v.data(), s.v.data(), v.size() * sizeof(double)) == 0);
  }
  ReadChunk(chosen);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    ReadChunk(in);
  } else {
    RoundTrip(in);
  }
  return 0;
}
