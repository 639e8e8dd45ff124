// CloudWatch query semantics: periods, rounding, tiers by age, limits,
// units, resolution, percentiles, GetMetricData paging, ListMetrics.
#include "query/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/errors.h"
#include "store/db.h"
#include "store/rollup.h"
#include "store/test_util.h"
#include "util/clock.h"
#include "util/time_parse.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
constexpr char kNs[] = "/aws/sagemaker/TrainingJobs";

int64_t T(const char* iso) { return *util::ParseTimeMs(iso, 0); }

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::DbOptions o;
    o.data_dir = dir_.Sub("data");
    o.clock = &clock_;
    o.background_thread = false;
    auto db = store::Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  model::SeriesKey Key(const std::string& unit = "None", const std::string& metric = "train:loss") {
    return *model::MakeSeriesKey(kNs, metric, {{"TrainingJobName", "job-1"}}, unit);
  }
  void Put(std::vector<model::Sample> samples, const std::string& unit = "None",
           int resolution = 1, const std::string& metric = "train:loss") {
    model::SampleBatch b;
    b.series.push_back({Key(unit, metric), resolution, std::move(samples), {}, {}});
    ASSERT_TRUE(db_->PutSamples(b).ok());
  }
  store::ReadView View() { return std::move(db_->View().value()); }
  GetMetricStatisticsRequest Gms(int64_t start, int64_t end, int64_t period,
                                 std::vector<std::string> stats = {"Average", "SampleCount"}) {
    GetMetricStatisticsRequest r;
    r.ns = kNs;
    r.metric = "train:loss";
    r.dimensions = {{"TrainingJobName", "job-1"}};
    r.start_ms = start;
    r.end_ms = end;
    r.period_s = period;
    r.statistics = std::move(stats);
    return r;
  }
  std::vector<int64_t> Times(const GetMetricStatisticsResponse& r) {
    std::vector<int64_t> out;
    for (const auto& d : r.datapoints) out.push_back(d.t_ms);
    return out;
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{T("2025-01-15T01:05:23Z")};
  std::unique_ptr<store::Db> db_;
};

TEST_F(MetricsTest, PeriodsOutsideCloudWatchsSetAreInvalid) {
  const int64_t now = clock_.NowMs();
  for (int64_t p : {1, 5, 10, 20, 30, 60, 120, 3600}) {
    EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - kMinute, now, p)).ok()) << p;
  }
  for (int64_t p : {0, 2, 7, 45, 90}) {
    auto r = GetMetricStatistics(View(), Gms(now - kMinute, now, p));
    EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kInvalidValue) << p;
  }
  auto r = GetMetricStatistics(View(), Gms(now, now, 60));
  EXPECT_THAT(r.status().message(), HasSubstr("StartTime must be less than"));
}

TEST_F(MetricsTest, ShortPeriodsRoundTheStartWithinTheMinute) {
  // The spec's example: at 01:05:23, the previous 10 s with Period 10 start at 01:05:10.
  Put({{T("2025-01-15T01:05:12Z"), 1}, {T("2025-01-15T01:05:21Z"), 3}});
  auto r = GetMetricStatistics(View(), Gms(T("2025-01-15T01:05:13Z"), clock_.NowMs(), 10));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Times(*r), ElementsAre(T("2025-01-15T01:05:10Z"), T("2025-01-15T01:05:20Z")));
  // Period 60: rounded to the minute; end exclusive.
  auto m = GetMetricStatistics(View(), Gms(T("2025-01-15T01:05:13Z"), T("2025-01-15T01:05:21Z"), 60));
  ASSERT_EQ(m->datapoints.size(), 1u);
  EXPECT_EQ(m->datapoints[0].t_ms, T("2025-01-15T01:05:00Z"));
  EXPECT_EQ(m->datapoints[0].sample_count, 1);
  EXPECT_EQ(m->datapoints[0].average, 1);
  EXPECT_FALSE(m->datapoints[0].sum.has_value());  // not requested
  EXPECT_EQ(m->label, "train:loss");
}

TEST_F(MetricsTest, TheAgeOfTheStartChoosesTheTier) {
  const int64_t now = clock_.NowMs();
  Put({{now - 4 * kHour, 10}, {now - 4 * kHour + 1000, 20}});
  Put({{now - 20 * kDay, 5}});
  Put({{now - 100 * kDay, 7}});
  // 4 h ago: raw data expired, so Period 1 returns nothing, 60 works.
  EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - 4 * kHour, now - 4 * kHour + 10 * kMinute, 1))
                  ->datapoints.empty());
  auto m = GetMetricStatistics(View(), Gms(now - 4 * kHour, now, 60));
  ASSERT_EQ(m->datapoints.size(), 1u);
  EXPECT_EQ(m->datapoints[0].average, 15);
  // 20 days ago: 60 s data expired; multiples of 300 work, rounded to 5 minutes.
  EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - 20 * kDay, now - 20 * kDay + kHour, 60))
                  ->datapoints.empty());
  auto five = GetMetricStatistics(View(), Gms(now - 20 * kDay, now - 19 * kDay, 300));
  ASSERT_EQ(five->datapoints.size(), 1u);
  EXPECT_EQ(five->datapoints[0].t_ms % (5 * kMinute), 0);
  // 100 days ago: hours only.
  EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - 100 * kDay, now - 100 * kDay + kHour, 300))
                  ->datapoints.empty());
  auto hour = GetMetricStatistics(View(), Gms(now - 100 * kDay, now - 99 * kDay, 3600));
  ASSERT_EQ(hour->datapoints.size(), 1u);
  EXPECT_EQ(hour->datapoints[0].t_ms % kHour, 0);
  // The same answers once everything is sealed into chunks and rollups.
  ASSERT_TRUE(db_->SealAll().ok());
  EXPECT_EQ(GetMetricStatistics(View(), Gms(now - 4 * kHour, now, 60))->datapoints[0].average, 15);
  EXPECT_EQ(GetMetricStatistics(View(), Gms(now - 100 * kDay, now - 99 * kDay, 3600))
                ->datapoints.size(),
            1u);
}

TEST_F(MetricsTest, MoreThan1440DatapointsIsAnErrorWithAwsWording) {
  const int64_t now = clock_.NowMs();
  auto r = GetMetricStatistics(View(), Gms(now - kDay, now, 60));  // 1441 after rounding
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kInvalidCombination);
  EXPECT_THAT(r.status().message(), HasSubstr("exceeds the limit of 1440"));
  EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - kDay + kMinute, now, 60)).ok());
}

TEST_F(MetricsTest, UnitsAreAggregatedApartUnlessOneIsAsked) {
  const int64_t now = clock_.NowMs();
  Put({{now - 10'000, 1}}, "None");
  Put({{now - 10'000, 100}}, "Percent");
  auto all = GetMetricStatistics(View(), Gms(now - kMinute, now, 60));
  ASSERT_EQ(all->datapoints.size(), 2u);
  EXPECT_EQ(all->datapoints[0].unit, "None");
  EXPECT_EQ(all->datapoints[1].unit, "Percent");
  auto req = Gms(now - kMinute, now, 60);
  req.unit = "Percent";
  auto one = GetMetricStatistics(View(), req);
  ASSERT_EQ(one->datapoints.size(), 1u);
  EXPECT_EQ(one->datapoints[0].average, 100);
  // GetMetricData's MetricStat without Unit: one datapoint for every unit.
  req = Gms(now - kMinute, now, 60);
  req.merge_units = true;
  req.statistics = {"Sum", "SampleCount"};
  auto merged = GetMetricStatistics(View(), req);
  ASSERT_EQ(merged->datapoints.size(), 1u);
  EXPECT_EQ(merged->datapoints[0].sum, 101);
  EXPECT_EQ(merged->datapoints[0].sample_count, 2);
  EXPECT_EQ(merged->datapoints[0].unit, "") << "the units differ";
  req.unit = "Percent";
  merged = GetMetricStatistics(View(), req);
  ASSERT_EQ(merged->datapoints.size(), 1u);
  EXPECT_EQ(merged->datapoints[0].sum, 100);
  EXPECT_EQ(merged->datapoints[0].unit, "Percent");
}

TEST_F(MetricsTest, StandardResolutionDataOnlyAtPeriodsOfAMinute) {
  const int64_t now = clock_.NowMs();
  Put({{now - 10'000, 1}}, "None", 60);
  EXPECT_TRUE(GetMetricStatistics(View(), Gms(now - kMinute, now, 1))->datapoints.empty());
  EXPECT_EQ(GetMetricStatistics(View(), Gms(now - kMinute, now, 60))->datapoints.size(), 1u);
}

TEST_F(MetricsTest, PercentilesAreNearestRankAndOmittedWhereUndefined) {
  const int64_t now = clock_.NowMs();
  const int64_t m0 = store::AlignDown(now, kMinute) - 3 * kMinute;
  std::vector<model::Sample> s;
  for (int i = 1; i <= 100; ++i) s.push_back({m0 + i * 100, double(i)});
  s.push_back({m0 + kMinute + 1, -1});  // second minute has a negative value
  s.push_back({m0 + kMinute + 2, 5});
  Put(s);
  model::SampleBatch b;
  b.series.push_back({Key(), 1, {}, {}, {{m0 + 2 * kMinute, 10, 50, 5, 5}}});  // identical values
  ASSERT_TRUE(db_->PutSamples(b).ok());
  auto req = Gms(m0, m0 + 3 * kMinute, 60, {});
  req.extended_statistics = {"p50", "p99", "p100", "p0.0"};
  auto r = GetMetricStatistics(View(), req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->datapoints.size(), 3u);
  EXPECT_THAT(r->datapoints[0].extended,
              ElementsAre(std::pair<std::string, double>("p50", 50),
                          std::pair<std::string, double>("p99", 99),
                          std::pair<std::string, double>("p100", 100),
                          std::pair<std::string, double>("p0.0", 1)));
  EXPECT_TRUE(r->datapoints[1].extended.empty());  // a negative value: no percentiles
  ASSERT_EQ(r->datapoints[2].extended.size(), 4u);
  EXPECT_EQ(r->datapoints[2].extended[0].second, 5);

  // A statistic set of different values: no percentiles.
  model::SampleBatch c;
  c.series.push_back({Key(), 1, {}, {}, {{m0 + 2 * kMinute + 5, 2, 30, 10, 20}}});
  ASSERT_TRUE(db_->PutSamples(c).ok());
  EXPECT_TRUE(GetMetricStatistics(View(), req)->datapoints[2].extended.empty());
}

TEST_F(MetricsTest, StatisticListsAreChecked) {
  const int64_t now = clock_.NowMs();
  auto both = Gms(now - kMinute, now, 60);
  both.extended_statistics = {"p99"};
  EXPECT_EQ(GetErrorKind(GetMetricStatistics(View(), both).status()),
            ErrorKind::kInvalidCombination);
  auto neither = Gms(now - kMinute, now, 60, {});
  EXPECT_EQ(GetErrorKind(GetMetricStatistics(View(), neither).status()),
            ErrorKind::kInvalidCombination);
  auto bad = Gms(now - kMinute, now, 60, {"Median"});
  EXPECT_THAT(GetMetricStatistics(View(), bad).status().message(), HasSubstr("Median"));
  auto tm = Gms(now - kMinute, now, 60, {});
  tm.extended_statistics = {"tm90"};
  EXPECT_THAT(GetMetricStatistics(View(), tm).status().message(),
              HasSubstr("not supported by trainwatch"));
  tm.extended_statistics = {"p101"};
  EXPECT_THAT(GetMetricStatistics(View(), tm).status().message(),
              HasSubstr("not a valid extended statistic"));
  auto missing = Gms(now - kMinute, now, 60);
  missing.ns.clear();
  EXPECT_EQ(GetErrorKind(GetMetricStatistics(View(), missing).status()),
            ErrorKind::kMissing);
}

TEST_F(MetricsTest, GetMetricDataPagesThroughEveryDatapoint) {
  const int64_t now = clock_.NowMs();
  const int64_t start = store::AlignDown(now, kMinute) - 10 * kMinute;
  std::vector<model::Sample> s;
  for (int i = 0; i < 10; ++i) s.push_back({start + i * kMinute, double(i)});
  Put(s);
  Put(s, "None", 1, "val:acc");
  GetMetricDataRequest req;
  req.start_ms = start;
  req.end_ms = start + 10 * kMinute;
  req.max_datapoints = 4;
  req.scan_ascending = true;
  for (const char* m : {"train:loss", "val:acc"}) {
    MetricDataQuery q;
    q.id = m[0] == 't' ? "loss" : "acc";
    q.ns = kNs;
    q.metric = m;
    q.dimensions = {{"TrainingJobName", "job-1"}};
    q.period_s = 60;
    q.stat = "Maximum";
    req.queries.push_back(q);
  }
  std::map<std::string, std::vector<double>> got;
  int pages = 0;
  do {
    auto r = GetMetricData(View(), req);
    ASSERT_TRUE(r.ok()) << r.status();
    size_t n = 0;
    for (const auto& res : r->results) {
      got[res.id].insert(got[res.id].end(), res.values.begin(), res.values.end());
      n += res.values.size();
      if (!res.complete) {  // PartialData: the last result of a page that has a token
        EXPECT_EQ(&res, &r->results.back());
        EXPECT_FALSE(r->next_token.empty());
      }
    }
    EXPECT_LE(n, 4u);
    req.next_token = r->next_token;
    ASSERT_LT(++pages, 10);
  } while (!req.next_token.empty());
  EXPECT_EQ(pages, 5);
  EXPECT_EQ(got["loss"], (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(got["acc"], got["loss"]);

  // Default order is newest first; labels default to the metric name.
  req.max_datapoints.reset();
  req.scan_ascending = false;
  auto desc = GetMetricData(View(), req);
  EXPECT_EQ(desc->results[0].values.front(), 9);
  EXPECT_EQ(desc->results[0].label, "train:loss");
  EXPECT_GT(desc->results[0].timestamps_ms[0], desc->results[0].timestamps_ms[1]);

  req.next_token = "garbage";
  EXPECT_EQ(GetErrorKind(GetMetricData(View(), req).status()), ErrorKind::kInvalidCursor);
}

TEST_F(MetricsTest, GetMetricDataValidatesQueries) {
  const int64_t now = clock_.NowMs();
  GetMetricDataRequest req;
  req.start_ms = now - kHour;
  req.end_ms = now;
  MetricDataQuery q;
  q.id = "5xx_error";
  q.ns = kNs;
  q.metric = "m";
  q.period_s = 60;
  q.stat = "Average";
  req.queries = {q};
  auto r = GetMetricData(View(), req);
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kInvalidQuery);
  EXPECT_THAT(r.status().message(),
              HasSubstr("The value 5xx_error for parameter MetricDataQueries.member.1.Id is not "
                        "matching the expected pattern ^[a-z][a-zA-Z0-9_]*$."));
  q.id = "ok";
  q.stat = "Avg";
  req.queries = {q};
  EXPECT_THAT(GetMetricData(View(), req).status().message(),
              HasSubstr("The value Avg for parameter MetricDataQueries.member.1.MetricStat.Stat is "
                        "not a valid statistic."));
  q.stat = "Average";
  MetricDataQuery e;
  e.id = "e1";
  e.expression = "ok * 100";
  req.queries = {q, e};
  EXPECT_THAT(GetMetricData(View(), req).status().message(),
              HasSubstr("not supported by trainwatch yet"));
  q.period_s = 7;
  req.queries = {q};
  EXPECT_EQ(GetErrorKind(GetMetricData(View(), req).status()), ErrorKind::kInvalidValue);
  q.period_s = 1;
  req.queries = {q};
  req.start_ms = now - 2 * kDay;  // 172,800 one-second datapoints
  EXPECT_EQ(GetErrorKind(GetMetricData(View(), req).status()),
            ErrorKind::kInvalidCombination);
}

TEST_F(MetricsTest, SumAndAverageOfDecimalsAreExactBeforeAndAfterTheSeal) {
  // Ten 0.1 in a minute: Sum 1 (adding the doubles gives 0.9999999999999999).
  const int64_t minute = store::AlignDown(clock_.NowMs(), kMinute) - kMinute;
  std::vector<model::Sample> s;
  for (int i = 0; i < 10; ++i) s.push_back({minute + i * 1000, 0.1});
  Put(s);
  for (bool sealed : {false, true}) {
    if (sealed) {
      ASSERT_TRUE(db_->SealAll().ok());
    }
    auto r = GetMetricStatistics(View(), Gms(minute, minute + kMinute, 60, {"Sum", "Average"}));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->datapoints.size(), 1u);
    EXPECT_EQ(r->datapoints[0].sum, 1.0) << "sealed " << sealed;
    EXPECT_EQ(r->datapoints[0].average, 0.1) << "sealed " << sealed;
  }
}

TEST_F(MetricsTest, LastValueIsTheNewestSample) {
  const int64_t now = clock_.NowMs();
  Put({{now - 5, 1}, {now - 1, 3}, {now - 3, 2}});
  Put({{now - 10, 9}});  // late: not the last
  auto last = LastValue(View(), Key());
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->t_ms, now - 1);
  EXPECT_EQ((*last)->value, 3);
  EXPECT_FALSE(LastValue(View(), Key("Bytes"))->has_value());
}

}  // namespace
}  // namespace trainwatch::query
