#include "extract/number.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

TEST(ParseMetricValueTest, AcceptsTheGrammar) {
  struct Case {
    const char* text;
    double want;
  } cases[] = {
      {"0", 0.0},           {"1", 1.0},
      {"+1", 1.0},          {"-1", -1.0},
      {"007", 7.0},         {"1.", 1.0},
      {"1.5", 1.5},         {".5", 0.5},
      {"-.5", -0.5},        {"+.5", 0.5},
      {"1e5", 1e5},         {"1E5", 1e5},
      {"1e+5", 1e5},        {"1e-5", 1e-5},
      {"1.e5", 1e5},        {".5e+3", 500.0},
      {"2.5E-03", 2.5e-3},  {"0.0000e+00", 0.0},
      {"1.0000e-03", 1e-3}, {"123456789", 123456789.0},
      {"0.1", 0.1},         {"3.14159265358979323846", 3.14159265358979323846},
  };
  for (const Case& c : cases) {
    std::optional<double> got = ParseMetricValue(c.text);
    ASSERT_TRUE(got.has_value()) << c.text;
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseMetricValueTest, RejectsEverythingElse) {
  for (const char* text : {"",
                           " ",
                           ".",
                           "+",
                           "-",
                           "+.",
                           "e5",
                           ".e5",
                           "1e",
                           "1e+",
                           "1e-",
                           "1e5.5",
                           "nan",
                           "NaN",
                           "-nan",
                           "inf",
                           "-inf",
                           "Infinity",
                           "1,234.5",
                           "1,5",
                           "0x1p-3",
                           "0x10",
                           "1_000",
                           "1e999",
                           "-1e999",
                           "1.8e308",
                           "--1",
                           "+-1",
                           "1.2.3",
                           "1 2",
                           "1. 5",
                           "1e 5",
                           "1d5",
                           "1f",
                           "5%",
                           "$5",
                           "(1)",
                           "\xD9\xA1",      // Arabic-Indic digit one
                           "\xEF\xBC\x91",  // fullwidth digit one
                           "1\xEF\xBF\xBD",
                           "\xC2\xA0"
                           "1"}) {
    EXPECT_FALSE(ParseMetricValue(text).has_value()) << "\"" << text << "\"";
  }
}

TEST(ParseMetricValueTest, StripsAsciiWhiteSpaceOnly) {
  EXPECT_EQ(ParseMetricValue(" \t\n\v\f\r1.5 \t\n\v\f\r"), 1.5);
  EXPECT_EQ(ParseMetricValue("  -2  "), -2.0);
  // NO-BREAK SPACE and NARROW NO-BREAK SPACE are not ASCII white space.
  EXPECT_FALSE(ParseMetricValue("\xC2\xA0"
                                "1.5")
                   .has_value());
  EXPECT_FALSE(ParseMetricValue("1.5\xE2\x80\xAF").has_value());
  EXPECT_FALSE(ParseMetricValue(std::string("1.5\0", 4)).has_value());
}

TEST(ParseMetricValueTest, FiniteDoublesOnlyWithSubnormalsAccepted) {
  EXPECT_EQ(ParseMetricValue("1.7976931348623157e308"), std::numeric_limits<double>::max());
  EXPECT_FALSE(ParseMetricValue("1.7976931348623159e308").has_value());  // rounds to inf
  EXPECT_FALSE(ParseMetricValue("1e999").has_value());
  EXPECT_FALSE(ParseMetricValue("1e99999999999999999999").has_value());
  EXPECT_FALSE(ParseMetricValue("1000000000000000000000000000000e300").has_value());
  EXPECT_EQ(ParseMetricValue("4.9406564584124654e-324"), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ParseMetricValue("2.2250738585072009e-308"), 2.2250738585072009e-308);  // subnormal
  EXPECT_EQ(ParseMetricValue("2.2250738585072014e-308"), std::numeric_limits<double>::min());
  // Below the smallest subnormal: rounds to zero (as strtod and Python do), keeping the sign.
  std::optional<double> tiny = ParseMetricValue("1e-400");
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(*tiny, 0.0);
  EXPECT_FALSE(std::signbit(*tiny));
  std::optional<double> neg_tiny = ParseMetricValue("-0.00001e-999");
  ASSERT_TRUE(neg_tiny.has_value());
  EXPECT_TRUE(std::signbit(*neg_tiny));
  EXPECT_EQ(ParseMetricValue("0e999999"), 0.0);
  EXPECT_EQ(ParseMetricValue("0.000000000000000000000000001e330"), 1e303);
}

TEST(ParseMetricValueTest, CorrectlyRounded) {
  EXPECT_EQ(ParseMetricValue("0.30000000000000004"), 0.30000000000000004);
  EXPECT_EQ(ParseMetricValue("9007199254740993"), 9007199254740992.0);  // ties to even
  EXPECT_EQ(ParseMetricValue("-0"), 0.0);
  EXPECT_TRUE(std::signbit(*ParseMetricValue("-0")));
}

TEST(ParseNonFiniteValueTest, TheSpellingsScriptsPrint) {
  EXPECT_TRUE(std::isnan(*ParseNonFiniteValue("nan")));
  EXPECT_TRUE(std::isnan(*ParseNonFiniteValue(" -NaN ")));
  EXPECT_EQ(*ParseNonFiniteValue("inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*ParseNonFiniteValue("+Infinity"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*ParseNonFiniteValue("-INF"), -std::numeric_limits<double>::infinity());
  for (std::string_view other : {"", "na", "nano", "1.5", "infinite", "--inf", "n a n"}) {
    EXPECT_FALSE(ParseNonFiniteValue(other).has_value()) << other;
  }
}

}  // namespace
}  // namespace trainwatch::extract
