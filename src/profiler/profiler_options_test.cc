#include "profiler/profiler_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::profiler {
namespace {

TEST(ParseProfileIntervalTest, AcceptsSageMakersIntervals) {
  EXPECT_EQ(*ParseProfileInterval("100ms"), 100);
  EXPECT_EQ(*ParseProfileInterval("200ms"), 200);
  EXPECT_EQ(*ParseProfileInterval("500ms"), 500);
  EXPECT_EQ(*ParseProfileInterval("1s"), 1000);
  EXPECT_EQ(*ParseProfileInterval("5s"), 5000);
  EXPECT_EQ(*ParseProfileInterval("1m"), 60000);
  // Other spellings of the same values.
  EXPECT_EQ(*ParseProfileInterval("0.5s"), 500);
  EXPECT_EQ(*ParseProfileInterval("60s"), 60000);
  EXPECT_EQ(*ParseProfileInterval("1000ms"), 1000);
}

TEST(ParseProfileIntervalTest, OffIsZero) {
  EXPECT_EQ(*ParseProfileInterval("off"), 0);
  EXPECT_EQ(*ParseProfileInterval("OFF"), 0);
}

TEST(ParseProfileIntervalTest, RefusesOtherValuesQuotingThemAndListingTheAllowedOnes) {
  for (const char* bad : {"50ms", "2s", "0", "1h", "fast", "", "-100ms"}) {
    absl::StatusOr<int64_t> r = ParseProfileInterval(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
    EXPECT_THAT(std::string(r.status().message()),
                ::testing::HasSubstr(std::string("\"") + bad + "\""));
    EXPECT_THAT(std::string(r.status().message()),
                ::testing::HasSubstr("100ms, 200ms, 500ms, 1s, 5s, 1m or off"));
  }
}

TEST(ValidateProfileIntervalTest, ExactlyTheAllowedMilliseconds) {
  EXPECT_TRUE(ValidateProfileInterval(100).ok());
  EXPECT_TRUE(ValidateProfileInterval(60000).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateProfileInterval(0)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateProfileInterval(250)));
}

}  // namespace
}  // namespace trainwatch::profiler
