#include "store/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::store {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kHour = 3'600'000;
constexpr int64_t kDay = 24 * kHour;

TEST(Retention, DefaultsFollowCloudWatch) {
  RetentionPolicy p;
  TierRetention r = p.For("/aws/sagemaker/TrainingJobs");
  EXPECT_EQ(r.Get(Tier::kRaw), 3 * kHour);
  EXPECT_EQ(r.Get(Tier::k60), 15 * kDay);
  EXPECT_EQ(r.Get(Tier::k300), 63 * kDay);
  EXPECT_EQ(r.Get(Tier::k3600), 455 * kDay);
  EXPECT_TRUE(r.SketchesNeeded(Tier::k60));
}

TEST(Retention, ProfilerKeepsRawForeverAndNeedsNoSketches) {
  RetentionPolicy p;
  TierRetention r = p.For("trainwatch/Profiler");
  EXPECT_EQ(r.Get(Tier::kRaw), kForever);
  EXPECT_EQ(r.Get(Tier::k60), 15 * kDay);
  EXPECT_FALSE(r.SketchesNeeded(Tier::k3600));
  EXPECT_TRUE(r.Covers(Tier::kRaw, 0, 1'000'000'000'000));
}

TEST(Retention, TensorStatisticsKeepRawForever) {
  RetentionPolicy p;
  EXPECT_EQ(p.For("trainwatch/Tensors").Get(Tier::kRaw), kForever);
  EXPECT_EQ(p.For("trainwatch/TensorsAndMore").Get(Tier::kRaw), 3 * 3600 * 1000);
}

TEST(Retention, MostSpecificRuleWinsPerSetting) {
  auto p = RetentionPolicy::Parse(
      "# comment\n"
      "*            raw=1h\n"
      "team/*       raw=6h 60s=30d\n"
      "team/a/*     60s=forever\n"
      "team/a/b     raw=forever   # exact\n",
      "retention.conf");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->For("other").Get(Tier::kRaw), 1 * kHour);
  EXPECT_EQ(p->For("team/x").Get(Tier::kRaw), 6 * kHour);
  EXPECT_EQ(p->For("team/x").Get(Tier::k60), 30 * kDay);
  EXPECT_EQ(p->For("team/a/c").Get(Tier::kRaw), 6 * kHour);
  EXPECT_EQ(p->For("team/a/c").Get(Tier::k60), kForever);
  EXPECT_EQ(p->For("team/a/b").Get(Tier::kRaw), kForever);
  EXPECT_EQ(p->For("team/a/b").Get(Tier::k300), 63 * kDay);
  EXPECT_EQ(p->For("teamx").Get(Tier::kRaw), 1 * kHour);  // "team/*" needs the slash
}

TEST(Retention, BadLinesNameFileLineAndForm) {
  auto p = RetentionPolicy::Parse("*  raw=3h\nfoo raw=soon\n", "retention.conf");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("retention.conf:2"));
  EXPECT_THAT(p.status().message(), HasSubstr("raw=soon"));
  EXPECT_THAT(p.status().message(), HasSubstr("forever"));
  EXPECT_FALSE(RetentionPolicy::Parse("foo 90s=1d\n", "f").ok());
  EXPECT_FALSE(RetentionPolicy::Parse("foo\n", "f").ok());
  EXPECT_FALSE(RetentionPolicy::Parse("fo*o raw=1h\n", "f").ok());
}

TEST(Retention, AddRuleOverridesAndToTextRoundTrips) {
  RetentionPolicy p;
  ASSERT_TRUE(p.AddRule("trainwatch/Imported", "raw=forever 1m=forever").ok());
  ASSERT_TRUE(p.AddRule("trainwatch/Imported", "5m=forever 1h=forever").ok());
  auto back = RetentionPolicy::Parse(p.ToText(), "text");
  ASSERT_TRUE(back.ok()) << back.status();
  for (int t = 0; t < kTierCount; ++t) {
    EXPECT_EQ(back->For("trainwatch/Imported").keep_ms[t], kForever);
  }
  EXPECT_EQ(back->For("x").Get(Tier::kRaw), 3 * kHour);
}

TEST(Retention, Covers) {
  TierRetention r;
  const int64_t now = 100 * kDay;
  EXPECT_TRUE(r.Covers(Tier::kRaw, now - 3 * kHour, now));
  EXPECT_FALSE(r.Covers(Tier::kRaw, now - 3 * kHour - 1, now));
  EXPECT_TRUE(r.Covers(Tier::k60, now - 15 * kDay, now));
}

}  // namespace
}  // namespace trainwatch::store
