#include "query/metric_math.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMin = 60000;

MathSeries S(std::string label, std::vector<std::pair<int, double>> points) {
  MathSeries s;
  s.label = std::move(label);
  for (auto [minute, v] : points) {
    s.t_ms.push_back(minute * kMin);
    s.values.push_back(v);
  }
  return s;
}

class MetricMathTest : public ::testing::Test {
 protected:
  MetricMathTest() {
    series_["m1"] = S("loss train", {{0, 1}, {1, 2}, {2, 4}, {4, 8}});
    series_["m2"] = S("loss eval", {{0, 10}, {2, 20}, {3, 30}, {4, 40}});
    series_["m3"] = S("gpu", {{0, -5}, {1, 5}});
    series_["none"] = S("no data", {});
    context_.start_ms = 0;
    context_.end_ms = 5 * kMin;
    context_.period_ms = kMin;
    context_.lookup = [this](std::string_view id) -> absl::StatusOr<MathValue> {
      auto it = series_.find(std::string(id));
      if (it == series_.end()) return absl::NotFoundError(std::string(id));
      MathValue v;
      v.series.push_back(it->second);
      return v;
    };
    context_.metrics = [this] {
      return std::vector<MathSeries>{series_["m1"], series_["m2"], series_["m3"]};
    };
  }

  MathValue Eval(std::string_view text) {
    absl::StatusOr<MetricMath> e = MetricMath::Parse(text);
    EXPECT_TRUE(e.ok()) << text << ": " << e.status();
    if (!e.ok()) return {};
    absl::StatusOr<MathValue> v = e->Evaluate(context_);
    EXPECT_TRUE(v.ok()) << text << ": " << v.status();
    return v.ok() ? *v : MathValue{};
  }
  // The one series' (minute, value) points.
  std::vector<std::pair<int, double>> Points(std::string_view text, size_t which = 0) {
    MathValue v = Eval(text);
    std::vector<std::pair<int, double>> out;
    if (v.series.size() <= which) {
      ADD_FAILURE() << text << ": no series " << which;
      return out;
    }
    const MathSeries& s = v.series[which];
    for (size_t i = 0; i < s.t_ms.size(); ++i) {
      out.emplace_back(static_cast<int>(s.t_ms[i] / kMin), s.values[i]);
    }
    return out;
  }
  using P = std::pair<int, double>;

  std::map<std::string, MathSeries> series_;
  MathContext context_;
};

TEST_F(MetricMathTest, ArithmeticAlignsTimestampsAndTakesNumbers) {
  EXPECT_THAT(Points("m1 + m2"), ElementsAre(P{0, 11}, P{2, 24}, P{4, 48}));
  EXPECT_THAT(Points("m2 / m1 * 100"), ElementsAre(P{0, 1000}, P{2, 500}, P{4, 500}));
  EXPECT_THAT(Points("(m1 - 1) ^ 2"), ElementsAre(P{0, 0}, P{1, 1}, P{2, 9}, P{4, 49}));
  EXPECT_THAT(Points("-m3"), ElementsAre(P{0, 5}, P{1, -5}));
  EXPECT_THAT(Points("m1 / (m3 + 5)"), ElementsAre(P{1, 0.2})) << "x / 0 is left out";
  EXPECT_EQ(Eval("2 * 3 + 1").scalar, 7);
}

TEST_F(MetricMathTest, MetricsAndAggregates) {
  MathValue all = Eval("METRICS()");
  EXPECT_TRUE(all.array);
  EXPECT_EQ(all.series.size(), 3u);
  EXPECT_EQ(Eval("METRICS(\"loss\")").series.size(), 2u) << "labels containing loss";
  EXPECT_THAT(Points("SUM(METRICS(\"loss\"))"),
              ElementsAre(P{0, 11}, P{1, 2}, P{2, 24}, P{3, 30}, P{4, 48}));
  EXPECT_THAT(Points("MAX(METRICS())"),
              ElementsAre(P{0, 10}, P{1, 5}, P{2, 20}, P{3, 30}, P{4, 40}));
  EXPECT_THAT(Points("MIN(METRICS())", 0), ElementsAre(P{0, -5}, P{1, 2}, P{2, 4}, P{3, 30}, P{4, 8}));
  EXPECT_THAT(Points("AVG(METRICS(\"loss\"))"), ElementsAre(P{0, 5.5}, P{1, 2}, P{2, 12}, P{3, 30}, P{4, 24}));
  // One series: one number.
  EXPECT_EQ(Eval("SUM(m1)").scalar, 15);
  EXPECT_EQ(Eval("AVG(m1)").scalar, 3.75);
  EXPECT_NEAR(*Eval("STDDEV(m3)").scalar, 7.0710678, 1e-6);
  // An array with a number stays an array, each series keeps its label.
  MathValue scaled = Eval("METRICS(\"loss\") * 2");
  ASSERT_EQ(scaled.series.size(), 2u);
  EXPECT_EQ(scaled.series[1].label, "loss eval");
  EXPECT_EQ(scaled.series[1].values[0], 20);
  // A series minus its own mean.
  EXPECT_THAT(Points("m1 - AVG(m1)"), ElementsAre(P{0, -2.75}, P{1, -1.75}, P{2, 0.25}, P{4, 4.25}));
}

// A query without data in the range gives an empty series, and every
// function of it an empty series (not a crash, not an error).
TEST_F(MetricMathTest, QueriesWithoutDataGiveEmptySeries) {
  for (const char* e : {"none - AVG(none)", "SUM(SUM(none))", "IF(AVG(none) > 1, m1, 0)",
                        "m1 + MAX(none)", "RATE(none)", "FILL(none, REPEAT)", "ABS(AVG(none))"}) {
    MathValue v = Eval(e);
    ASSERT_EQ(v.series.size(), 1u) << e;
    EXPECT_TRUE(v.series[0].t_ms.empty()) << e;
  }
  EXPECT_THAT(Points("FILL(none, 7)"), ElementsAre(P{0, 7}, P{1, 7}, P{2, 7}, P{3, 7}, P{4, 7}));
}

TEST_F(MetricMathTest, PointFunctions) {
  EXPECT_THAT(Points("ABS(m3)"), ElementsAre(P{0, 5}, P{1, 5}));
  EXPECT_THAT(Points("DIFF(m1)"), ElementsAre(P{1, 1}, P{2, 2}, P{4, 4}));
  EXPECT_THAT(Points("DIFF_TIME(m1)"), ElementsAre(P{1, 60}, P{2, 60}, P{4, 120}));
  EXPECT_THAT(Points("RATE(m1)"), ElementsAre(P{1, 1.0 / 60}, P{2, 2.0 / 60}, P{4, 4.0 / 120}));
}

TEST_F(MetricMathTest, FillGivesEveryPeriodAPoint) {
  EXPECT_THAT(Points("FILL(m1, 0)"), ElementsAre(P{0, 1}, P{1, 2}, P{2, 4}, P{3, 0}, P{4, 8}));
  EXPECT_THAT(Points("FILL(m1, REPEAT)"), ElementsAre(P{0, 1}, P{1, 2}, P{2, 4}, P{3, 4}, P{4, 8}));
  EXPECT_THAT(Points("fill(m1, linear)"), ElementsAre(P{0, 1}, P{1, 2}, P{2, 4}, P{3, 6}, P{4, 8}))
      << "functions are case-insensitive";
  EXPECT_THAT(Points("FILL(m3, LINEAR)"), ElementsAre(P{0, -5}, P{1, 5}, P{2, 5}, P{3, 5}, P{4, 5}));
}

TEST_F(MetricMathTest, IfAndComparisons) {
  EXPECT_THAT(Points("m1 > 2"), ElementsAre(P{0, 0}, P{1, 0}, P{2, 1}, P{4, 1}));
  EXPECT_THAT(Points("IF(m1 > 2, m1)"), ElementsAre(P{2, 4}, P{4, 8}));
  EXPECT_THAT(Points("IF(m1 > 2, m2, 0)"), ElementsAre(P{0, 0}, P{1, 0}, P{2, 20}, P{4, 40}));
  EXPECT_THAT(Points("IF(m1 >= 2 AND m1 < 8, 1, 0)"), ElementsAre(P{0, 0}, P{1, 1}, P{2, 1}, P{4, 0}));
  EXPECT_THAT(Points("IF(NOT (m1 == 2) OR m1 == 1, m1)"), ElementsAre(P{0, 1}, P{2, 4}, P{4, 8}));
}

TEST_F(MetricMathTest, ErrorsNameTheProblem) {
  struct Case {
    const char* expression;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"m1 +", "ends where a value is expected (column 5)"},
           {"(m1", "')' expected"},
           {"SEARCH('{AWS/EC2} CPU', 'Average')", "the function SEARCH is not supported by trainwatch"},
           {"sqrt(m1)", "the function SQRT is not supported"},
           {"FROB(m1)", "unknown function FROB"},
           {"M1 * 2", "\"M1\" is neither a query Id"},
           {"m1 $ 2", "unexpected '$'"},
           {"1e999", "is not a number"},
       }) {
    absl::StatusOr<MetricMath> e = MetricMath::Parse(c.expression);
    ASSERT_FALSE(e.ok()) << c.expression;
    EXPECT_THAT(e.status().message(), HasSubstr(c.message)) << c.expression;
  }
  for (const Case& c : std::vector<Case>{
           {"FILL(m1, m2)", "FILL's second argument is a number, REPEAT or LINEAR"},
           {"RATE(3)", "RATE needs a time series"},
           {"METRICS() + METRICS()", "between two arrays"},
           {"IF(3, m1)", "IF's condition must be a time series"},
           {"IF(m1 > 1, METRICS())", "IF's values must be single series or numbers"},
           {"SUM(m1, m2)", "SUM takes 1 argument"},
       }) {
    absl::StatusOr<MetricMath> e = MetricMath::Parse(c.expression);
    ASSERT_TRUE(e.ok()) << c.expression << e.status();
    absl::StatusOr<MathValue> v = e->Evaluate(context_);
    ASSERT_FALSE(v.ok()) << c.expression;
    EXPECT_THAT(v.status().message(), HasSubstr(c.message)) << c.expression;
  }
  absl::StatusOr<MetricMath> e = MetricMath::Parse("m9 * 2");
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->references(), ElementsAre("m9"));
  EXPECT_TRUE(absl::IsNotFound(e->Evaluate(context_).status()));
}

}  // namespace
}  // namespace trainwatch::query
