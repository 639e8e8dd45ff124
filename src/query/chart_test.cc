// Chart reads over the store: M4 at full zoom-out keeps every spike and dip,
// equals the brute-force reference on random data (units merged, sealed
// chunks, the head, late data, statistic sets), zooming in ends at raw
// samples, old ranges read rollup tiers, x=step; and the job's series list.
#include "query/chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "model/job_events.h"
#include "model/log_event.h"
#include "query/store_reader.h"
#include "query/testing/chart_reference.h"
#include "store/db.h"
#include "store/rollup.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::query {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kT0 = 1736942400000;  // 2025-01-15T12:00:00Z, on the hour
const std::string kNs(model::kTrainingJobsNamespace);

class ChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = store::testing::OpenWriterOrDie(dir_.Sub("data"), &clock_);
    ASSERT_NE(db_, nullptr);
    reader_ = std::make_unique<StoreReader>(*db_);
  }
  static model::SeriesKey Key(const std::string& unit = "None",
                              const std::string& metric = "train:loss") {
    return *model::MakeSeriesKey(kNs, metric, {{"TrainingJobName", "job-1"}}, unit);
  }
  void Put(const model::SeriesKey& key, std::vector<model::Sample> samples,
           std::vector<model::StatisticSet> sets = {}) {
    model::SampleBatch b;
    b.series.push_back({key, 1, std::move(samples), {}, std::move(sets)});
    ASSERT_TRUE(db_->PutSamples(b).ok());
  }
  ChartQuery Query(int64_t start, int64_t end, int width,
                   std::optional<std::string> unit = std::nullopt) {
    ChartQuery q;
    q.metric = {kNs, "train:loss", {{"TrainingJobName", "job-1"}}};
    q.unit = std::move(unit);
    q.start_ms = start;
    q.end_ms = end;
    q.width = width;
    return q;
  }
  ChartAnswer Chart(const ChartQuery& q) {
    absl::StatusOr<ChartAnswer> a = reader_->Chart(q);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : ChartAnswer{};
  }
  static std::vector<ChartPoint> Points(const ChartAnswer& a) {
    std::vector<ChartPoint> out;
    for (size_t i = 0; i < a.x.size(); ++i) out.push_back({a.x[i], a.t[i], a.y[i]});
    return out;
  }
  static std::vector<ChartPoint> TimePoints(const std::vector<model::Sample>& samples) {
    std::vector<ChartPoint> out;
    for (const model::Sample& s : samples) out.push_back({s.t_ms, s.t_ms, s.value});
    return out;
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{kT0};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<StoreReader> reader_;
};

TEST_F(ChartTest, ASingleSampleSpikeAndDipAmongAMillionPointsShowAtFullZoomOut) {
  constexpr int kN = 1'000'000;
  constexpr int kSpike = 123'457, kDip = 876'543;
  std::vector<model::Sample> all;
  all.reserve(kN);
  for (int i = 0; i < kN; ++i) {
    double v = 0.5 + 0.4 * std::sin(i / 5000.0) + 0.01 * (i % 7);
    if (i == kSpike) v = 1000;
    if (i == kDip) v = -1000;
    all.push_back({kT0 + int64_t{i} * 10, v});
  }
  for (int from = 0; from < kN; from += 100'000) {
    Put(Key(), std::vector<model::Sample>(all.begin() + from, all.begin() + from + 100'000));
    if (from == 500'000) ASSERT_TRUE(db_->SealAll().ok());  // chunks, then the head
  }
  clock_.SetNowMs(kT0 + int64_t{kN} * 10 + kMinute);  // the raw tier still covers it all
  const int64_t end = kT0 + int64_t{kN} * 10;
  ChartAnswer a = Chart(Query(kT0, end, 800));
  EXPECT_EQ(a.tier_period_s, 0);
  EXPECT_FALSE(a.raw);
  EXPECT_EQ(a.x_start, kT0);
  EXPECT_EQ(a.x_end, end);
  EXPECT_DOUBLE_EQ(a.column, 12'500);
  EXPECT_LE(a.x.size(), 4u * 800);
  EXPECT_EQ(a.x, a.t);
  const std::vector<ChartPoint> got = Points(a);
  EXPECT_NE(std::find(got.begin(), got.end(), ChartPoint{all[kSpike].t_ms, all[kSpike].t_ms, 1000}),
            got.end());
  EXPECT_NE(std::find(got.begin(), got.end(), ChartPoint{all[kDip].t_ms, all[kDip].t_ms, -1000}),
            got.end());
  EXPECT_EQ(got, testing::ReferenceM4(TimePoints(all), kT0, end, 800));
}

TEST_F(ChartTest, EqualsTheReferenceOnRandomDataAcrossUnitsChunksTheHeadAndLateData) {
  std::mt19937_64 rng(3);
  std::vector<ChartPoint> every, percent_only;
  std::map<std::string, std::set<int64_t>> used;  // one sample per time and series
  auto put_run = [&](const std::string& unit, int64_t from, int n, int64_t step_max) {
    std::vector<model::Sample> s;
    int64_t t = from;
    for (int i = 0; i < n; ++i) {
      t += std::uniform_int_distribution<int64_t>(1, step_max)(rng);
      if (!used[unit].insert(t).second) continue;
      s.push_back({t, std::uniform_int_distribution<int>(-50, 50)(rng) * 0.25});
    }
    for (const ChartPoint& p : TimePoints(s)) {
      every.push_back(p);
      if (unit == "Percent") percent_only.push_back(p);
    }
    Put(Key(unit), std::move(s));
  };
  put_run("None", kT0, 20000, 300);
  put_run("Percent", kT0 + 7, 5000, 1000);
  ASSERT_TRUE(db_->SealAll().ok());
  put_run("None", kT0 + 20000 * 150, 20000, 300);  // the head
  put_run("Percent", kT0 - 5, 3000, 1000);          // late: overlaps what is sealed
  // Statistic sets: their minimum and maximum.
  std::vector<model::StatisticSet> sets;
  for (int i = 0; i < 200; ++i) {
    const int64_t t = kT0 + 13 + i * 30'000;
    const double lo = i % 5, hi = i % 3 == 0 ? lo : lo + 40;
    sets.push_back({t, 3, lo + hi + lo, lo, hi});
    every.push_back({t, t, lo});
    if (hi != lo) every.push_back({t, t, hi});
  }
  Put(Key("Count"), {}, sets);
  clock_.SetNowMs(kT0 + 2 * kHour);

  for (int round = 0; round < 40; ++round) {
    const int width = std::uniform_int_distribution<int>(1, 900)(rng);
    const int64_t start = kT0 + std::uniform_int_distribution<int64_t>(-10'000, 3'000'000)(rng);
    const int64_t end = start + std::uniform_int_distribution<int64_t>(1, 7'000'000)(rng);
    const bool percent = round % 4 == 1;
    ChartAnswer a = Chart(Query(start, end, width,
                                percent ? std::optional<std::string>("Percent") : std::nullopt));
    EXPECT_EQ(Points(a), testing::ReferenceM4(percent ? percent_only : every, start, end, width))
        << "round " << round << ": [" << start << ", " << end << ") width " << width;
  }
}

TEST_F(ChartTest, ZoomingInEndsAtRawSamples) {
  std::vector<model::Sample> s;
  for (int i = 0; i < 10000; ++i) s.push_back({kT0 + i * 10, double(i % 13)});
  Put(Key(), s);
  ASSERT_TRUE(db_->SealAll().ok());
  clock_.SetNowMs(kT0 + kMinute);
  ChartAnswer wide = Chart(Query(kT0, kT0 + 100'000, 800));
  EXPECT_FALSE(wide.raw);
  // 1,000 ms of 10 ms samples: 100 points, fewer than 4 per column.
  ChartAnswer narrow = Chart(Query(kT0 + 5000, kT0 + 6000, 800));
  EXPECT_TRUE(narrow.raw);
  EXPECT_EQ(Points(narrow),
            TimePoints(std::vector<model::Sample>(s.begin() + 500, s.begin() + 600)));
  // At the limit: 4 points per column are still every point.
  EXPECT_TRUE(Chart(Query(kT0, kT0 + 100'000, 2500)).raw);
  EXPECT_FALSE(Chart(Query(kT0, kT0 + 100'000, 2499)).raw);
}

TEST_F(ChartTest, ARangeOlderThanTheRawTierReadsTheFinestRollupTierThatCoversIt) {
  std::vector<model::Sample> s;
  for (int i = 0; i < 7200; ++i) s.push_back({kT0 + i * 1000, double(i % 60)});
  s[100].value = 500;   // a spike in minute 1
  s[4000].value = 700;  // and one in minute 66
  Put(Key(), s);
  ASSERT_TRUE(db_->SealAll().ok());  // rollups are made when chunks are sealed

  // Six hours later the raw tier (3 h) no longer covers the two hours.
  clock_.SetNowMs(kT0 + 6 * kHour);
  ChartAnswer old = Chart(Query(kT0 + 30'000, kT0 + 2 * kHour, 800));
  EXPECT_EQ(old.tier_period_s, 60);
  EXPECT_FALSE(old.raw);
  // Each minute gives its minimum and maximum at its start (the first one,
  // which begins before the range, at the range's start).
  std::vector<ChartPoint> want;
  for (int m = 0; m < 120; ++m) {
    const int64_t t = m == 0 ? kT0 + 30'000 : kT0 + m * kMinute;
    want.push_back({t, t, 0});
    want.push_back({t, t, m == 1 ? 500.0 : m == 66 ? 700.0 : 59.0});
  }
  EXPECT_EQ(Points(old), want);

  // Three and a half hours later, the raw tier covers the last 90 minutes:
  // the first 30 come from the 60 s tier, the rest are raw samples.
  clock_.SetNowMs(kT0 + 3 * kHour + 30 * kMinute);
  ChartAnswer both = Chart(Query(kT0, kT0 + 2 * kHour, 800));
  EXPECT_EQ(both.tier_period_s, 60);
  EXPECT_FALSE(both.raw);
  std::vector<ChartPoint> points;
  for (int m = 0; m < 30; ++m) {
    points.push_back({kT0 + m * kMinute, kT0 + m * kMinute, 0});
    points.push_back({kT0 + m * kMinute, kT0 + m * kMinute, m == 1 ? 500.0 : 59.0});
  }
  for (const ChartPoint& p : TimePoints(s)) {
    if (p.t >= kT0 + 30 * kMinute) points.push_back(p);
  }
  EXPECT_EQ(Points(both), testing::ReferenceM4(points, kT0, kT0 + 2 * kHour, 800));
  const std::vector<ChartPoint> got = Points(both);
  EXPECT_NE(std::find(got.begin(), got.end(),
                      ChartPoint{kT0 + 4000'000, kT0 + 4000'000, 700}),
            got.end());
}

TEST_F(ChartTest, XStepMapsEachSampleToTheStepCurrentAtItsTime) {
  model::JobRecord job;
  job.name = "job-1";
  job.creation_ms = kT0 - kMinute;
  job.last_modified_ms = job.creation_ms;
  job.step_metric = "step";
  ASSERT_TRUE(db_->CreateJob(job).ok());
  std::vector<model::Sample> steps;
  for (int k = 0; k < 100; ++k) steps.push_back({kT0 + k * 1000, double(k)});
  Put(Key("None", "step"), steps);
  std::vector<model::Sample> loss;
  std::vector<ChartPoint> want;
  for (int i = -2; i < 400; ++i) {
    const int64_t t = kT0 + i * 250;
    loss.push_back({t, 1000.0 - i});
    if (i >= 0) want.push_back({i / 4, t, 1000.0 - i});  // before step 0: left out
  }
  Put(Key(), loss);
  clock_.SetNowMs(kT0 + 2 * kMinute);

  ChartQuery q = Query(kT0 - 1000, kT0 + 100'000, 800);
  q.x = ChartX::kStep;
  q.job = "JOB-1";  // as GetJob finds it
  ChartAnswer a = Chart(q);
  EXPECT_EQ(a.x_kind, ChartX::kStep);
  EXPECT_EQ(a.x_start, 0);
  EXPECT_EQ(a.x_end, 100);
  EXPECT_DOUBLE_EQ(a.column, 0.125);
  EXPECT_TRUE(a.raw);
  EXPECT_EQ(Points(a), want);
  // Fewer columns than steps: M4 over steps.
  q.width = 10;
  EXPECT_EQ(Points(Chart(q)), testing::ReferenceM4(want, 0, 100, 10));
  // Only the steps of the range.
  q = Query(kT0 + 10'500, kT0 + 20'000, 800);
  q.x = ChartX::kStep;
  q.job = "job-1";
  a = Chart(q);
  EXPECT_EQ(a.x_start, 10);
  EXPECT_EQ(a.x_end, 20);
  EXPECT_EQ(a.x.front(), 10);
  EXPECT_EQ(a.t.front(), kT0 + 10'500);

  q.job = "nope";
  EXPECT_TRUE(absl::IsNotFound(reader_->Chart(q).status()));
  job.name = "job-2";
  job.step_metric = "";
  ASSERT_TRUE(db_->CreateJob(job).ok());
  q.job = "job-2";
  absl::Status s = reader_->Chart(q).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("job job-2 has no step metric"), std::string::npos) << s;
}

TEST_F(ChartTest, NoDataIsAnAnswerWithoutPoints) {
  ChartAnswer a = Chart(Query(kT0, kT0 + kHour, 800));
  EXPECT_TRUE(a.x.empty());
  EXPECT_TRUE(a.raw);
  EXPECT_TRUE(absl::IsInvalidArgument(reader_->Chart(Query(kT0, kT0, 800)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(reader_->Chart(Query(kT0, kT0 + 1, 0)).status()));
}

TEST_F(ChartTest, ListSeriesGivesEachUnitApartWithItsLastSample) {
  Put(Key(), {{kT0, 1}, {kT0 + 5, 2}});
  Put(Key("Percent"), {{kT0 + 1, 50}});
  Put(*model::MakeSeriesKey(kNs, "train:loss", {{"TrainingJobName", "job-2"}}), {{kT0, 9}});
  ListMetricsQuery q;
  q.dimensions = {{"TrainingJobName", std::string("job-1")}};
  absl::StatusOr<std::vector<SeriesInfo>> got = reader_->ListSeries(q);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], (SeriesInfo{Key("None"), LastSample{kT0 + 5, 2}}));
  EXPECT_EQ((*got)[1], (SeriesInfo{Key("Percent"), LastSample{kT0 + 1, 50}}));
}

}  // namespace
}  // namespace trainwatch::query
