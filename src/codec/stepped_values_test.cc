#include "codec/stepped_values.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codec/float_bits.h"
#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

// Ordered float bits of a cosine schedule over `total` steps from `first`,
// sampled while the counter moves `steps_per_sample` a sample.
std::vector<uint64_t> Schedule(size_t n, double steps_per_sample, double total = 3e6,
                               double first = 40000) {
  std::vector<uint64_t> y(n);
  for (size_t i = 0; i < n; ++i) {
    const double step = std::floor(first + steps_per_sample * static_cast<double>(i));
    y[i] = FloatToOrdered(3e-4 * 0.5 * (1 + std::cos(M_PI * step / total)), 0);
  }
  return y;
}

std::string Encode(const std::vector<uint64_t>& y) {
  std::string out;
  EXPECT_TRUE(EncodeSteppedValues(y.data(), y.size(), ~size_t{0}, &out));
  return out;
}

// Decodes `n` values, asking for `chunk` at a time.
std::vector<uint64_t> Decode(const std::string& section, size_t n, size_t chunk) {
  SteppedDecoder d;
  EXPECT_TRUE(d.Init(section, n).ok());
  std::vector<uint64_t> out(n);
  size_t got = 0;
  while (got < n) {
    const size_t k = d.Next(out.data() + got, std::min(chunk, n - got));
    if (k == 0) break;
    got += k;
  }
  EXPECT_EQ(got, n);
  EXPECT_TRUE(d.CheckEnd().ok()) << d.CheckEnd();
  return out;
}

TEST(SteppedValues, DecodesTheSameWhateverTheCallSizes) {
  const std::vector<uint64_t> y = Schedule(500, 5.37);
  const std::string section = Encode(y);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, size_t{500}}) {
    SCOPED_TRACE(chunk);
    EXPECT_EQ(Decode(section, y.size(), chunk), y);
  }
}

TEST(SteppedValues, RoundTripsWhatTheModelDoesNotFit) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> cases = {
      {5, 9},  // two samples
      {0, ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 63) - 1, 0, 1},  // wrapping jumps
      std::vector<uint64_t>(40, 12345),                                    // constant
  };
  std::vector<uint64_t> noise(300);
  for (uint64_t& v : noise) v = rng();
  cases.push_back(noise);
  for (const auto& y : cases) {
    SCOPED_TRACE(y.size());
    EXPECT_EQ(Decode(Encode(y), y.size(), 64), y);
  }
}

TEST(SteppedValues, FindsLargeStepCountsOfSlowSchedules) {
  // 254.6 steps a sample: the counter moves 254 or 255, k = 254. (Near a
  // schedule's start, where the slope grows by more than 1/k a sample, the
  // classes blur; a third of the way in they do not.)
  const std::vector<uint64_t> y = Schedule(1024, 254.6, 3e8, 1e8);
  const std::string section = Encode(y);
  EXPECT_EQ(static_cast<uint8_t>(section[0]), 254);
  EXPECT_LT(section.size(), 1024u * 2);  // under 2 bytes a value
  EXPECT_EQ(Decode(section, y.size(), 64), y);
}

TEST(SteppedValues, DeclinesNoiseAfterATrial) {
  std::mt19937_64 rng(8);
  std::vector<uint64_t> noise(1000);
  for (uint64_t& v : noise) v = rng();
  std::string out = "x";
  EXPECT_FALSE(EncodeSteppedValues(noise.data(), noise.size(), 8 * noise.size(), &out));
  EXPECT_EQ(out, "x");  // nothing appended
}

TEST(SteppedValues, RefusesDamagedHeaders) {
  const std::vector<uint64_t> y = Schedule(100, 5.37);
  const std::string good = Encode(y);
  SteppedDecoder d;
  ASSERT_TRUE(d.Init(good, y.size()).ok());
  EXPECT_EQ(d.Init(good, 1).code(), absl::StatusCode::kDataLoss);  // fewer than 2 samples
  EXPECT_EQ(d.Init("", y.size()).code(), absl::StatusCode::kDataLoss);
  std::string zero_k = good;
  zero_k[0] = 0;
  EXPECT_EQ(d.Init(zero_k, y.size()).code(), absl::StatusCode::kDataLoss);
  // k, y0 (a zigzag varint), then base_len: 0 and 65 are out of 1..64.
  size_t base_at = 1;
  while (static_cast<uint8_t>(good[base_at]) & 0x80) ++base_at;
  ++base_at;
  for (char bad : {char{0}, char{65}}) {
    std::string b = good;
    b[base_at] = bad;
    EXPECT_EQ(d.Init(b, y.size()).code(), absl::StatusCode::kDataLoss);
  }
  // A coded stream longer than what follows.
  std::string cut = good.substr(0, base_at + 2);
  EXPECT_EQ(d.Init(cut, y.size()).code(), absl::StatusCode::kDataLoss);
  // Fewer values than written: the streams are not consumed, CheckEnd says so.
  ASSERT_TRUE(d.Init(good, y.size() - 50).ok());
  std::vector<uint64_t> out(y.size());
  EXPECT_EQ(d.Next(out.data(), y.size()), y.size() - 50);
  EXPECT_EQ(d.CheckEnd().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace trainwatch::codec
