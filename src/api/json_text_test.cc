#include "api/json_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

std::string Ours(double v) {
  std::string s;
  AppendJsonDouble(&s, v);
  return s;
}

std::string Theirs(double v) { return nlohmann::ordered_json(v).dump(); }

TEST(JsonText, DoublesLookLikeNlohmannsDump) {
  for (double v : {1.0, -1.0, 0.25, 0.1, 1736942400.0, 1736942400.5, 1736942400.123, 1e15, 1e16,
                   123456789012345.0, 1234567890123456.0, 1.5e-5, 0.0001, 0.00012345, 1e-4,
                   1e-5, 2.5e300, -3.75e-300, 5e-324, std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::min(), 100000.0, 0.5, 95.0, 0.111252}) {
    EXPECT_EQ(Ours(v), Theirs(v)) << v;
  }
  // Whole numbers take a shortcut of their own: timestamps, counts, bytes.
  for (double v : {7.0, -42.0, 1e14, -1e14, 999999999999999.0, -999999999999999.0,
                   4503599627370496.0, 1e21}) {
    EXPECT_EQ(Ours(v), Theirs(v)) << v;
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const double v = static_cast<double>(static_cast<int64_t>(rng() % 2'000'000'000'000'000ULL) -
                                         1'000'000'000'000'000LL);
    EXPECT_EQ(Ours(v), Theirs(v)) << v;
  }
  EXPECT_EQ(Ours(0.0), "0.0");
  EXPECT_EQ(Ours(-0.0), "-0.0");
  EXPECT_EQ(Ours(std::nan("")), "null");
  EXPECT_EQ(Ours(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonText, RandomDoublesRoundTripAndMatch) {
  std::mt19937_64 rng(20261130);
  int differ = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    if (!std::isfinite(v)) continue;
    const std::string s = Ours(v);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;  // lossless
    const std::string t = Theirs(v);
    if (s != t) {
      // Grisu2 (nlohmann) is not always shortest; ours (std::to_chars) is.
      ++differ;
      EXPECT_LE(s.size(), t.size()) << s << " vs " << t;
    }
  }
  EXPECT_LT(differ, 1000);  // of ~200,000: the layout is the same
}

TEST(JsonText, FixedNotationRangeMatchesTheLayout) {
  // Values from 1e-4 to 1e15 take std::to_chars' fixed notation directly;
  // its edges, and values near them, must keep nlohmann's layout.
  for (double v : {1e-4, std::nextafter(1e-4, 0.0), std::nextafter(1e-4, 1.0), 0.00012345,
                   0.000123456789012345, 0.0009999, 0.001, 1e15 - 0.5, 999999999999999.9,
                   std::nextafter(1e15, 0.0), 1e15 + 0.5, 0.5, -0.5, -0.000123, 123.456,
                   0.6050331899544783, 366.3, 0.9565}) {
    EXPECT_EQ(Ours(v), Theirs(v)) << v;
    EXPECT_EQ(std::strtod(Ours(v).c_str(), nullptr), v) << v;
  }
  // Random values in every decade of the range: full precision (as averages
  // come out) and, every third, four significant digits.
  std::mt19937_64 rng(20261202);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int differ = 0;
  int checked = 0;
  for (int decade = -4; decade < 15; ++decade) {
    for (int i = 0; i < 2000; ++i) {
      double v = std::pow(10.0, decade) * (1.0 + 9.0 * unit(rng));
      if (i % 3 == 0) {  // four significant digits
        const double scale = std::pow(10.0, 3 - decade);
        v = std::round(v * scale) / scale;
      }
      if (i % 2 == 0) v = -v;
      const std::string s = Ours(v);
      ++checked;
      EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
      EXPECT_EQ(s.find('e'), std::string::npos) << s;
      const std::string t = Theirs(v);
      if (s != t) {
        ++differ;  // Grisu2 not shortest: same layout, a digit more
        EXPECT_LE(s.size(), t.size()) << s << " vs " << t;
        EXPECT_EQ(s.find('.') == std::string::npos, t.find('.') == std::string::npos) << s;
      }
    }
  }
  EXPECT_LT(differ, checked / 100);
}

TEST(JsonText, StringsAreEscaped) {
  std::string s;
  AppendJsonString(&s, "a\"b\\c\n\x01");
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\n\\u0001\"");
  s.clear();
  AppendJsonString(&s, "\xff");
  EXPECT_EQ(s, "\"\xef\xbf\xbd\"");
}

}  // namespace
}  // namespace trainwatch::api
