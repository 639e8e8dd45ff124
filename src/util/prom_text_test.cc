#include "util/prom_text.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace trainwatch::util {
namespace {

TEST(PromTextTest, FamiliesAndSamplesInTheTextFormat) {
  PromText t;
  t.Family("trainwatch_x_total", "counter", "Things\\counted.\nTwo lines.");
  t.Sample("trainwatch_x_total", {{"kind", "a\"b\\c\nd"}}, 3);
  t.Sample("trainwatch_x_total", {}, 0.1);
  EXPECT_EQ(t.str(),
            "# HELP trainwatch_x_total Things\\\\counted.\\nTwo lines.\n"
            "# TYPE trainwatch_x_total counter\n"
            "trainwatch_x_total{kind=\"a\\\"b\\\\c\\nd\"} 3\n"
            "trainwatch_x_total 0.1\n");
}

TEST(PromTextTest, LabelValuesAreValidUtf8) {
  EXPECT_EQ(EscapeLabelValue("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(EscapeLabelValue("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(EscapeLabelValue("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(EscapeLabelValue("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(EscapeLabelValue("end\xE2\x82"), "end\xEF\xBF\xBD\xEF\xBF\xBD");  // cut short
}

TEST(PromTextTest, ValuesReadBackExactly) {
  PromText t;
  t.Sample("a", {}, std::nan(""));
  t.Sample("b", {}, -std::numeric_limits<double>::infinity());
  t.Sample("c", {}, 9007199254740993.0);  // 2^53 + 1 rounds to 2^53: 17 digits
  t.Sample("d", {}, 0.30000000000000004);
  t.Sample("e", {}, 1234567);
  EXPECT_EQ(t.str(), "a NaN\nb -Inf\nc 9007199254740992\nd 0.30000000000000004\ne 1234567\n");
}

TEST(PromTextTest, HistogramBucketsAreCumulativeWithInfEqualToCount) {
  Histogram h;
  h.Observe(0.0002);
  h.Observe(0.003);
  h.Observe(0.003);
  h.Observe(60);  // above every bound: only +Inf
  PromText t;
  t.Histogram("lat_seconds", "Latency.", h, {{"op", "x"}});
  const std::string& s = t.str();
  EXPECT_NE(s.find("# TYPE lat_seconds histogram\n"), std::string::npos);
  EXPECT_NE(s.find("lat_seconds_bucket{op=\"x\",le=\"0.0005\"} 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_bucket{op=\"x\",le=\"0.0025\"} 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_bucket{op=\"x\",le=\"0.005\"} 3\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_bucket{op=\"x\",le=\"10\"} 3\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_bucket{op=\"x\",le=\"+Inf\"} 4\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_count{op=\"x\"} 4\n"), std::string::npos) << s;
  EXPECT_NE(s.find("lat_seconds_sum{op=\"x\"} 60.0062\n"), std::string::npos) << s;
}

}  // namespace
}  // namespace trainwatch::util
