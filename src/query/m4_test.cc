// M4 against a brute-force reference, and the line it draws against the line
// of every point; the step a time belongs to.
#include "query/m4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "query/testing/chart_reference.h"

namespace trainwatch::query {
namespace {

std::vector<ChartPoint> Run(const std::vector<ChartPoint>& points, int64_t x0, int64_t x1,
                            int width) {
  M4 m4(x0, x1, width);
  for (const ChartPoint& p : points) m4.Add(p.x, p.t, p.v);
  std::vector<ChartPoint> out;
  m4.Finish(&out);
  return out;
}

TEST(M4Test, KeepsEachColumnsFirstMinMaxLastLikeTheBruteForceReference) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    const int width = std::uniform_int_distribution<int>(1, 50)(rng);
    const int64_t x0 = std::uniform_int_distribution<int64_t>(-1000, 1000)(rng);
    const int64_t span = std::uniform_int_distribution<int64_t>(1, round % 3 == 0 ? 20 : 100000)(rng);
    const int n = std::uniform_int_distribution<int>(0, round % 2 == 0 ? 4 * width : 3000)(rng);
    std::vector<ChartPoint> points;
    for (int i = 0; i < n; ++i) {
      // Out of the range too, repeated times and values, any order.
      const int64_t x = x0 + std::uniform_int_distribution<int64_t>(-span / 10, span + span / 10)(rng);
      const double v = std::uniform_int_distribution<int>(-20, 20)(rng) * 0.5;
      points.push_back({x, x, v});
      if (i % 17 == 0) points.push_back({x, x, v});  // a repeated sample
    }
    const std::vector<ChartPoint> want =
        testing::ReferenceM4(points, x0, x0 + span, width);
    EXPECT_EQ(Run(points, x0, x0 + span, width), want)
        << "round " << round << ": width " << width << ", span " << span << ", " << n
        << " points";
  }
}

TEST(M4Test, GivesEveryPointUpToFourPerColumn) {
  std::vector<ChartPoint> points;
  for (int i = 0; i < 40; ++i) points.push_back({i, i, std::sin(i)});
  std::reverse(points.begin(), points.end());
  M4 m4(0, 40, 10);
  for (const ChartPoint& p : points) m4.Add(p.x, p.t, p.v);
  EXPECT_TRUE(m4.every_point());
  std::vector<ChartPoint> out;
  m4.Finish(&out);
  ASSERT_EQ(out.size(), 40u);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  m4.Add(39, 39, 5);  // the 41st: now columns
  EXPECT_FALSE(m4.every_point());
}

TEST(M4Test, ColumnsSplitTheRangeEvenlyWhateverItsSpan) {
  // floor((x - x0) * width / span), also where the product passes 2^63.
  const int64_t x0 = -(int64_t{1} << 61), x1 = int64_t{1} << 61;
  M4 m4(x0, x1, 4000);
  EXPECT_EQ(m4.Column(x0), 0);
  EXPECT_EQ(m4.Column(x1 - 1), 3999);
  EXPECT_EQ(m4.Column(0), 2000);
  EXPECT_EQ(m4.Column(-1), 1999);
  M4 narrow(10, 13, 8);  // fewer x than columns: some columns stay empty
  EXPECT_EQ(narrow.Column(10), 0);
  EXPECT_EQ(narrow.Column(11), 2);
  EXPECT_EQ(narrow.Column(12), 5);
}

// The M4 promise itself: rasterised, the line through the answer and the line
// through every point light the same pixels.
TEST(M4Test, TheLineThroughTheAnswerIsPixelIdenticalToTheLineThroughEveryPoint) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    const int width = std::uniform_int_distribution<int>(5, 120)(rng);
    const int64_t span = std::uniform_int_distribution<int64_t>(width, 200000)(rng);
    std::vector<ChartPoint> points;
    double v = 0;
    for (int64_t x = 0; x < span; x += std::uniform_int_distribution<int64_t>(1, 30)(rng)) {
      v += std::normal_distribution<double>(0, 1)(rng);
      if (std::uniform_int_distribution<int>(0, 3000)(rng) == 0) v += 500;  // a spike
      points.push_back({x, x, v});
    }
    std::shuffle(points.begin(), points.end(), rng);
    const std::vector<ChartPoint> answer = Run(points, 0, span, width);
    std::sort(points.begin(), points.end());
    const int height = 300;
    EXPECT_EQ(testing::Rasterize(answer, 0, span, width, height),
              testing::Rasterize(points, 0, span, width, height))
        << "round " << round << ": " << points.size() << " points, " << answer.size()
        << " in the answer";
    EXPECT_LE(answer.size(), 4u * width);
  }
}

TEST(StepMapTest, ATimeBelongsToTheNewestStepAtOrBeforeIt) {
  StepMap steps({{300, 3}, {100, 1}, {200, 2}, {200, 7}});
  EXPECT_EQ(steps.At(99), std::nullopt);
  EXPECT_EQ(steps.At(100), 1);
  EXPECT_EQ(steps.At(199), 1);
  EXPECT_EQ(steps.At(200), 7);  // of steps at the same time, the largest
  EXPECT_EQ(steps.At(1000), 3);
  EXPECT_EQ(steps.At(150), 1);  // out of order after the hint moved on
  EXPECT_EQ(steps.Span(0, 100), std::nullopt);
  EXPECT_EQ(steps.Span(150, 250), std::make_pair(int64_t{1}, int64_t{8}));
  EXPECT_EQ(steps.Span(250, 260), std::make_pair(int64_t{7}, int64_t{8}));
  EXPECT_EQ(StepOfValue(41.9), 41);
  EXPECT_EQ(StepOfValue(1e300), int64_t{1} << 61);
}

TEST(ChartQueryTest, ErrorsNameTheFieldAndWhatItMustBe) {
  ChartQuery q;
  q.metric = {"ns", "loss", {}};
  q.start_ms = 10;
  q.end_ms = 20;
  EXPECT_TRUE(ValidateChartQuery(q).ok());
  q.width = 4001;
  EXPECT_EQ(ValidateChartQuery(q).message(), "chart: width 4001 is out of range; want 1 to 4000 columns");
  q.width = 0;
  EXPECT_FALSE(ValidateChartQuery(q).ok());
  q.width = 800;
  q.end_ms = 10;
  EXPECT_EQ(ValidateChartQuery(q).message(), "chart: start 10 must be before end 10");
  q.end_ms = 20;
  q.x = ChartX::kStep;
  EXPECT_EQ(ValidateChartQuery(q).message(), "chart: x=step needs the job whose steps to use");
  q.x = ChartX::kTime;
  q.metric.metric = "";
  EXPECT_EQ(ValidateChartQuery(q).message(), "chart: the metric is required");
}

}  // namespace
}  // namespace trainwatch::query
