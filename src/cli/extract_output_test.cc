#include "cli/extract_output.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::cli {
namespace {

TEST(JsonStringTest, Escapes) {
  EXPECT_EQ(JsonString("train:loss"), "\"train:loss\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString(std::string("t\tn\nr\rz\0e\x1b", 10)), "\"t\\tn\\nr\\rz\\u0000e\\u001b\"");
  EXPECT_EQ(JsonString("\xC3\xA9poque"), "\"\xC3\xA9poque\"");
  EXPECT_EQ(JsonString("bad\xFF"), "\"bad\xEF\xBF\xBD\"");
}

double ReadBack(const std::string& s) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_EQ(r.ptr, s.data() + s.size()) << s;
  return v;
}

TEST(AppendNumberTest, ShortestFormThatRoundTrips) {
  auto f = [](double v) {
    std::string s;
    AppendNumber(v, &s);
    return s;
  };
  EXPECT_EQ(f(0.25), "0.25");
  EXPECT_EQ(f(3), "3");
  EXPECT_EQ(f(1e-05), "1e-05");
  EXPECT_EQ(f(0.1), "0.1");
  EXPECT_EQ(f(-2.5), "-2.5");
  EXPECT_EQ(f(0.0), "0");
  EXPECT_EQ(f(-0.0), "-0.0");
  EXPECT_EQ(f(1e22), "1e+22");
  EXPECT_EQ(f(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(f(std::numeric_limits<double>::denorm_min()), "5e-324");
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    if (!std::isfinite(v)) continue;
    ASSERT_EQ(ReadBack(f(v)), v) << f(v);
  }
}

// The fast path for short decimals must lay numbers out exactly as to_chars.
TEST(AppendNumberTest, SameTextAsToChars) {
  auto to_chars = [](double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
  };
  std::vector<double> values = {3.765,     0.6931,   4.9466e-05, 1e-05,   1.25e-07,
                                1e-07,     9.99e-08, 100,        1500,    123456789012345.0,
                                1e14,      1e15 - 1, 0.1,        0.001,   0.0001,
                                12345.678, 2.5e-05,  3e-4,       17935.0, 1e-06};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 50000; ++i) {
    uint64_t digits = rng() % 1000000000000000ULL >> (rng() % 50);
    int k = static_cast<int>(rng() % 24);
    double v = static_cast<double>(digits);
    for (int j = 0; j < k; ++j) v /= 10;  // not always the nearest double: both paths must cope
    values.push_back(rng() % 2 ? -v : v);
    values.push_back(std::stod(std::to_string(digits) + "e-" + std::to_string(k)));
  }
  for (double v : values) {
    if (v == 0) continue;
    std::string got;
    AppendNumber(v, &got);
    ASSERT_EQ(got, to_chars(v)) << v;
  }
}

TEST(JsonlFormatterTest, OneObjectPerDatapoint) {
  JsonlFormatter fmt({{"train:loss", "(x)"}, {"say \"hi\"", "(y)"}});
  std::string out;
  fmt.Append({{0, 0.5}, {1, -1.0}, {0, 1e-07}}, &out);
  EXPECT_EQ(out,
            "{\"metric\": \"train:loss\", \"value\": 0.5}\n"
            "{\"metric\": \"say \\\"hi\\\"\", \"value\": -1}\n"
            "{\"metric\": \"train:loss\", \"value\": 1e-07}\n");
}

TEST(SummaryTableTest, CountsLastMinMax) {
  SummaryTable table(3);
  table.Add({{0, 2.0}, {0, 1.0}, {1, 7.0}});
  table.Add({{0, 1.5}});
  ASSERT_EQ(table.rows()[0].datapoints, 3u);
  EXPECT_EQ(table.rows()[0].last, 1.5);
  EXPECT_EQ(table.rows()[0].min, 1.0);
  EXPECT_EQ(table.rows()[0].max, 2.0);
  std::string text = table.Render({{"loss", "(a)"}, {"acc", "(b)"}, {"never", "(c)"}}, {0, 4, 0});
  EXPECT_EQ(text,
            "METRIC  DATAPOINTS  REJECTED  LAST  MIN  MAX\n"
            "loss             3         0   1.5    1    2\n"
            "acc              1         4     7    7    7\n"
            "never            0         0     -    -    -\n");
}

}  // namespace
}  // namespace trainwatch::cli
