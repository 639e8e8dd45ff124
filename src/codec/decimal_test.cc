#include "codec/decimal.h"

#include <bit>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

TEST(Decimal, FindsTheSmallestScale) {
  EXPECT_EQ(DecimalScale(100.0, 0), 0);
  EXPECT_EQ(DecimalScale(0.0, 0), 0);
  EXPECT_EQ(DecimalScale(1.5, 0), 1);
  EXPECT_EQ(DecimalScale(0.1, 0), 1);
  EXPECT_EQ(DecimalScale(99.99, 0), 2);
  EXPECT_EQ(DecimalScale(0.9871, 0), 4);
  EXPECT_EQ(DecimalScale(1e-7, 0), 7);
  EXPECT_EQ(DecimalScale(123456789.125, 0), 3);
  EXPECT_EQ(DecimalScale(-42.5, 0), 1);
  // A scale at least as large as asked is returned.
  EXPECT_EQ(DecimalScale(1.5, 3), 3);
}

TEST(Decimal, RoundTripsBitExactly) {
  for (double v : {0.1, 0.2, 0.3, 1e-7, 123456789.125, 99.99, -0.0001, 45.67, 1e15, 0.9871}) {
    const int k = DecimalScale(v, 0);
    ASSERT_GE(k, 0) << v;
    int64_t d;
    ASSERT_TRUE(ToDecimal(v, k, &d));
    EXPECT_EQ(std::bit_cast<uint64_t>(FromDecimal(d, k)), std::bit_cast<uint64_t>(v)) << v;
  }
}

TEST(Decimal, RejectsWhatOnlyLooksDecimal) {
  // 0.1 + 0.2 prints as 0.30000000000000004: 17 digits, past 2^53 as an integer.
  EXPECT_EQ(DecimalScale(0.1 + 0.2, 0), -1);
  // The double next to 0.1 is not the double nearest to any short decimal.
  EXPECT_EQ(DecimalScale(std::nextafter(0.1, 1.0), 0), -1);
  // -0.0 would come back as +0.0; NaN and infinities are no decimals at all.
  EXPECT_EQ(DecimalScale(-0.0, 0), -1);
  EXPECT_EQ(DecimalScale(std::numeric_limits<double>::quiet_NaN(), 0), -1);
  EXPECT_EQ(DecimalScale(std::numeric_limits<double>::infinity(), 0), -1);
  EXPECT_EQ(DecimalScale(-std::numeric_limits<double>::infinity(), 0), -1);
  EXPECT_EQ(DecimalScale(std::numeric_limits<double>::denorm_min(), 0), -1);
  // Integers are decimal up to 2^53 and not beyond.
  EXPECT_EQ(DecimalScale(9007199254740992.0, 0), 0);
  EXPECT_EQ(DecimalScale(18014398509481984.0, 0), -1);
}

TEST(Decimal, ToDecimalsStopsAtTheFirstMiss) {
  const double values[] = {1.25, 2.5, 0.1 + 0.2};
  int64_t d[3];
  EXPECT_TRUE(ToDecimals(values, 2, 2, d));
  EXPECT_EQ(d[0], 125);
  EXPECT_EQ(d[1], 250);
  EXPECT_FALSE(ToDecimals(values, 3, 2, d));
}

}  // namespace
}  // namespace trainwatch::codec
