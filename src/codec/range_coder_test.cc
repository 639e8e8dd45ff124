#include "codec/range_coder.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

std::vector<int> RandomBits(size_t n, double p1, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution one(p1);
  std::vector<int> bits(n);
  for (int& b : bits) b = one(rng) ? 1 : 0;
  return bits;
}

std::string Encode(const std::vector<int>& bits) {
  std::string out;
  RangeEncoder enc(&out);
  AdaptiveBit model;
  for (int b : bits) enc.Encode(&model, b);
  enc.Finish();
  return out;
}

TEST(RangeCoder, RoundTripsAndApproachesTheEntropy) {
  for (double p1 : {0.5, 0.1, 0.01, 0.999}) {
    const std::vector<int> bits = RandomBits(20000, p1, 11);
    const std::string out = Encode(bits);
    RangeDecoder dec;
    ASSERT_TRUE(dec.Init(out));
    AdaptiveBit model;
    for (size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(dec.Decode(&model), bits[i]) << i;
    EXPECT_TRUE(dec.Consistent());

    const double entropy_bits =
        -(p1 * std::log2(p1) + (1 - p1) * std::log2(1 - p1)) * static_cast<double>(bits.size());
    // A model that adapts at 1/32 pays for its estimation noise on skewed bits.
    const double slack = p1 == 0.5 ? 1.02 : 1.25;
    EXPECT_LT(8.0 * static_cast<double>(out.size()), slack * entropy_bits + 64) << "p1 " << p1;
  }
}

TEST(RangeCoder, AllZeroDecisionsTrimToAlmostNothing) {
  const std::vector<int> bits(100000, 0);
  const std::string out = Encode(bits);
  // The adaptive model saturates near 1/2048 per decision; trailing zero bytes go.
  EXPECT_LT(out.size(), 100000 / 8 / 50);
  RangeDecoder dec;
  ASSERT_TRUE(dec.Init(out));
  AdaptiveBit model;
  for (size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(dec.Decode(&model), 0);
  EXPECT_TRUE(dec.Consistent());
}

TEST(RangeCoder, EmptyStreamDecodesAsZeros) {
  const std::string out = Encode({});
  EXPECT_TRUE(out.empty());
  RangeDecoder dec;
  EXPECT_TRUE(dec.Init(out));
  EXPECT_TRUE(dec.Consistent());
}

TEST(RangeCoder, RejectsAStartOutsideTheRange) {
  RangeDecoder dec;
  EXPECT_FALSE(dec.Init(std::string(4, '\xFF')));
}

TEST(RangeCoder, GarbageNeverMisbehaves) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::string garbage(rng() % 64, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    RangeDecoder dec;
    if (!dec.Init(garbage)) continue;
    AdaptiveBit models[4];
    for (int i = 0; i < 2000; ++i) {
      const int bit = dec.Decode(&models[i % 4]);
      ASSERT_TRUE(bit == 0 || bit == 1);
    }
  }
}

}  // namespace
}  // namespace trainwatch::codec
