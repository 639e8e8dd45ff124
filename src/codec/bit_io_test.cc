#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codec/bit_reader.h"
#include "codec/bit_writer.h"
#include "codec/varint.h"
#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

TEST(BitWriterReader, RoundTripsRandomWidths) {
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, int>> fields;
  std::string bytes;
  BitWriter writer(&bytes);
  uint64_t total = 0;
  for (int i = 0; i < 20000; ++i) {
    const int n = static_cast<int>(rng() % 65);
    const uint64_t v = n == 64 ? rng() : rng() & ((uint64_t{1} << n) - 1);
    fields.emplace_back(v, n);
    writer.Write(v, n);
    total += static_cast<uint64_t>(n);
  }
  writer.Flush();
  EXPECT_EQ(writer.bit_count(), total);
  EXPECT_EQ(bytes.size(), (total + 7) / 8);

  BitReader reader(bytes);
  for (const auto& [v, n] : fields) {
    uint64_t got;
    ASSERT_TRUE(reader.Read(n, &got));
    ASSERT_EQ(got, v) << "width " << n;
  }
  EXPECT_LT(reader.BitsLeft(), 8u);
}

TEST(BitWriter, WritesMostSignificantBitFirst) {
  std::string bytes;
  BitWriter writer(&bytes);
  writer.Write(0b101, 3);
  writer.WriteBit(true);
  writer.Write(0xFFFF, 4);  // only the low 4 bits count
  writer.Flush();
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0b10111111);
}

TEST(BitReader, ReadPastTheEndFailsAndConsumesNothing) {
  const std::string bytes = "\xAB\xCD";
  BitReader reader(bytes);
  uint64_t v;
  EXPECT_FALSE(reader.Read(17, &v));
  EXPECT_EQ(reader.BitsLeft(), 16u);
  ASSERT_TRUE(reader.Read(12, &v));
  EXPECT_EQ(v, 0xABCu);
  EXPECT_FALSE(reader.Read(5, &v));
  ASSERT_TRUE(reader.Read(4, &v));
  EXPECT_EQ(v, 0xDu);
  EXPECT_FALSE(reader.Read(1, &v));
  EXPECT_TRUE(reader.Read(0, &v));

  BitReader empty{std::string_view()};
  EXPECT_FALSE(empty.Read(1, &v));
}

TEST(Varint, RoundTripsEdgeValues) {
  const uint64_t values[] = {
      0, 1, 127, 128, 16383, 16384, uint64_t{1} << 63, std::numeric_limits<uint64_t>::max()};
  for (uint64_t v : values) {
    std::string bytes;
    PutVarint(v, &bytes);
    std::string_view in = bytes;
    uint64_t got;
    ASSERT_TRUE(GetVarint(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
  }
  const int64_t signed_values[] = {
      0, -1, 1, -64, 64, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  for (int64_t v : signed_values) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
    std::string bytes;
    PutSignedVarint(v, &bytes);
    std::string_view in = bytes;
    int64_t got;
    ASSERT_TRUE(GetSignedVarint(&in, &got));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZagBits(0), 0);
  EXPECT_EQ(ZigZagBits(-1), 1);
}

TEST(Varint, RejectsTruncatedAndOverlongInput) {
  std::string bytes;
  PutVarint(uint64_t{1} << 40, &bytes);
  std::string_view truncated(bytes.data(), bytes.size() - 1);
  uint64_t v;
  EXPECT_FALSE(GetVarint(&truncated, &v));
  EXPECT_EQ(truncated.size(), bytes.size() - 1);  // unchanged

  const std::string eleven(11, '\x80');
  std::string_view in = eleven;
  EXPECT_FALSE(GetVarint(&in, &v));
  // Ten bytes whose last carries bits beyond the 64th.
  std::string overflow(9, '\xFF');
  overflow.push_back('\x02');
  in = overflow;
  EXPECT_FALSE(GetVarint(&in, &v));
}

}  // namespace
}  // namespace trainwatch::codec
