// Fuzz target for QuantileSketch. The first input byte picks the mode:
//   even: the rest is an encoded sketch. Decode must never misbehave; a decoded
//         sketch must answer within [min, max] and re-encode to bytes that
//         decode to the same answers;
//   odd:  the rest is (value, count) pairs of 9 bytes (8-byte double, 1-byte
//         count); the sketch of the finite ones must encode, decode and merge
//         consistently.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "codec/quantile_sketch.h"
#include "util/check.h"

namespace {

using trainwatch::codec::QuantileSketch;

const double kQs[] = {0, 0.01, 0.25, 0.5, 0.75, 0.99, 1};

void CheckAnswers(const QuantileSketch& s) {
  if (s.empty()) {
    TW_CHECK(!s.Quantile(0.5).has_value());
    return;
  }
  double previous = -INFINITY;
  for (double q : kQs) {
    const double v = *s.Quantile(q);
    TW_CHECK(v >= s.min() && v <= s.max());
    TW_CHECK(v >= previous);  // monotone in q
    previous = v;
  }
}

void CheckReencodes(const QuantileSketch& s) {
  std::string bytes;
  s.EncodeTo(&bytes);
  auto again = QuantileSketch::Decode(bytes);
  TW_CHECK(again.ok());
  TW_CHECK(again->count() == s.count() && again->min() == s.min() && again->max() == s.max());
  std::string twice;
  again->EncodeTo(&twice);
  auto third = QuantileSketch::Decode(twice);
  TW_CHECK(third.ok());
  for (double q : kQs) TW_CHECK(third->Quantile(q) == again->Quantile(q));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto sketch = QuantileSketch::Decode(in);
    if (!sketch.ok()) return 0;
    CheckAnswers(*sketch);
    CheckReencodes(*sketch);
    return 0;
  }
  QuantileSketch all, left, right;
  for (size_t i = 0; i + 9 <= in.size() && i < 9 * 20000; i += 9) {
    uint64_t bits;
    std::memcpy(&bits, in.data() + i, 8);
    const double value = std::bit_cast<double>(bits);
    const double count = 1 + static_cast<uint8_t>(in[i + 8]) % 16;
    if (!std::isfinite(value)) continue;
    all.Add(value, count);
    (i % 2 ? left : right).Add(value, count);
  }
  CheckAnswers(all);
  CheckReencodes(all);
  left.Merge(right);
  TW_CHECK(left.count() == all.count() && left.min() == all.min() && left.max() == all.max());
  TW_CHECK(left.exact() == all.exact());
  for (double q : kQs) TW_CHECK(left.Quantile(q) == all.Quantile(q));
  return 0;
}
