#include "util/time_parse.h"

#include <gtest/gtest.h>

namespace trainwatch::util {
namespace {

TEST(ParseDurationMs, AcceptsEveryUnit) {
  EXPECT_EQ(*ParseDurationMs("100ms"), 100);
  EXPECT_EQ(*ParseDurationMs("1s"), 1000);
  EXPECT_EQ(*ParseDurationMs("1.5s"), 1500);
  EXPECT_EQ(*ParseDurationMs("5m"), 300000);
  EXPECT_EQ(*ParseDurationMs("3h"), 10800000);
  EXPECT_EQ(*ParseDurationMs("15d"), 1296000000);
  EXPECT_EQ(*ParseDurationMs("2w"), 1209600000);
  EXPECT_EQ(*ParseDurationMs("60"), 60000);
}

TEST(ParseDurationMs, RefusesWithAMessageThatQuotesTheInput) {
  for (const char* bad : {"", "abc", "5x", "-1s", "0.5ms", "1e400s", "s"}) {
    auto d = ParseDurationMs(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << d.status();
  }
}

TEST(FormatDurationMs, PicksTheLargestExactUnit) {
  EXPECT_EQ(FormatDurationMs(100), "100ms");
  EXPECT_EQ(FormatDurationMs(1000), "1s");
  EXPECT_EQ(FormatDurationMs(90000), "90s");
  EXPECT_EQ(FormatDurationMs(3600000), "1h");
  EXPECT_EQ(FormatDurationMs(0), "0s");
}

TEST(ParseTimeMs, IsoEpochAndRelative) {
  const int64_t now = 1736942400000;  // 2025-01-15T12:00:00Z
  EXPECT_EQ(*ParseTimeMs("2025-01-15T12:00:00Z", 0), now);
  EXPECT_EQ(*ParseTimeMs("2025-01-15T12:00:01.250Z", 0), now + 1250);
  EXPECT_EQ(*ParseTimeMs("2025-01-15T14:00:00+02:00", 0), now);
  EXPECT_EQ(*ParseTimeMs("2025-01-15", 0), now - 12 * 3600 * 1000);
  EXPECT_EQ(*ParseTimeMs("1736942400", 0), now);
  EXPECT_EQ(*ParseTimeMs("1736942400.5", 0), now + 500);
  EXPECT_EQ(*ParseTimeMs("now", now), now);
  EXPECT_EQ(*ParseTimeMs("now-3h", now), now - 3 * 3600 * 1000);
  EXPECT_EQ(*ParseTimeMs("-5m", now), now - 300000);
  EXPECT_FALSE(ParseTimeMs("yesterday", now).ok());
  EXPECT_FALSE(ParseTimeMs("2025-13-01", now).ok());
}

TEST(FormatIso8601Ms, RoundTrips) {
  EXPECT_EQ(FormatIso8601Ms(1736942400000), "2025-01-15T12:00:00Z");
  EXPECT_EQ(FormatIso8601Ms(1736942401250), "2025-01-15T12:00:01.250Z");
  EXPECT_EQ(FormatIso8601Ms(0), "1970-01-01T00:00:00Z");
  for (int64_t t : {int64_t{951782400123}, int64_t{4102444799999}, int64_t{-1000}}) {
    EXPECT_EQ(*ParseTimeMs(FormatIso8601Ms(t), 0), t);
  }
}

}  // namespace
}  // namespace trainwatch::util
