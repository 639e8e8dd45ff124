#include "ingest/ingest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "store/test_util.h"

namespace trainwatch::ingest {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1736942400000;
constexpr int64_t kDay = 86'400'000;

model::SeriesKey Key(const std::string& metric) {
  return *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", metric,
                               {{"TrainingJobName", "job-1"}});
}

model::SampleBatch One(double v, int64_t t = kNow, const std::string& metric = "train:loss") {
  model::SampleBatch b;
  b.series.push_back({Key(metric), 1, {{t, v}}, {}, {}});
  return b;
}

TEST(Validate, NonFiniteValuesNameSeriesSampleAndRule) {
  auto s = ValidateSamples(One(std::nan("")), kNow);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("train:loss"));
  EXPECT_THAT(s.message(), HasSubstr("TrainingJobName=\"job-1\""));
  EXPECT_THAT(s.message(), HasSubstr("2025-01-15T12:00:00Z"));
  EXPECT_THAT(s.message(), HasSubstr("NaN"));
  EXPECT_THAT(ValidateSamples(One(-std::numeric_limits<double>::infinity()), kNow).message(),
              HasSubstr("-Infinity"));
  EXPECT_THAT(ValidateSamples(One(std::ldexp(1.0, 361)), kNow).message(), HasSubstr("2^360"));
  EXPECT_TRUE(ValidateSamples(One(std::ldexp(1.0, 360)), kNow).ok());
}

TEST(Validate, TimestampWindowIsFourteenDaysBackTwoHoursAhead) {
  EXPECT_TRUE(ValidateSamples(One(1, kNow - 14 * kDay), kNow).ok());
  auto old = ValidateSamples(One(1, kNow - 14 * kDay - 1), kNow);
  EXPECT_THAT(old.message(), HasSubstr("in the past"));
  EXPECT_THAT(old.message(), HasSubstr("trainwatch import"));
  EXPECT_TRUE(ValidateSamples(One(1, kNow + 2 * 3'600'000), kNow).ok());
  EXPECT_THAT(ValidateSamples(One(1, kNow + 2 * 3'600'000 + 1), kNow).message(),
              HasSubstr("in the future"));
}

TEST(Validate, StatisticSetsCountsAndKeys) {
  model::SampleBatch b;
  b.series.push_back({Key("gpu"), 1, {}, {}, {{kNow, 0, 0, 1, 1}}});
  EXPECT_THAT(ValidateSamples(b, kNow).message(), HasSubstr("SampleCount 0"));
  b.series[0].statistic_sets = {{kNow, 2, 10, 6, 4}};
  EXPECT_THAT(ValidateSamples(b, kNow).message(), HasSubstr("Minimum 6 is greater than Maximum 4"));
  b.series[0].statistic_sets = {{kNow, 2, 10, 4, 6}};
  EXPECT_TRUE(ValidateSamples(b, kNow).ok());
  b.series[0].weighted = {{kNow, 1, -1}};
  EXPECT_THAT(ValidateSamples(b, kNow).message(), HasSubstr("negative"));
  b.series[0].weighted = {{kNow, 1, 0}};
  EXPECT_TRUE(ValidateSamples(b, kNow).ok());
  b.series[0].storage_resolution_s = 5;
  EXPECT_THAT(ValidateSamples(b, kNow).message(), HasSubstr("storage resolution 5"));
  model::SampleBatch k = One(1);
  k.series[0].key.dimensions = {{"b", "1"}, {"a", "2"}};
  EXPECT_THAT(ValidateSamples(k, kNow).message(), HasSubstr("MakeSeriesKey"));
  // Unsorted and a name twice (not side by side): the bad part is named.
  k.series[0].key.dimensions = {{"a", "2"}, {"b", "1"}, {"a", "1"}};
  EXPECT_THAT(ValidateSamples(k, kNow).message(), HasSubstr("dimension \"a\" is given twice"));
  k.series[0].key.dimensions = std::vector<model::Dimension>(31, {"a", "b"});
  EXPECT_FALSE(ValidateSamples(k, kNow).ok());
}

TEST(SplitLongEvents, KeepsEveryByteAndUtf8Characters) {
  std::string msg;
  for (int i = 0; i < 100; ++i) msg += "ab\xC3\xA9";  // "abé" x 100, 400 bytes
  auto out = SplitLongEvents({{5, msg}, {6, "short"}}, 7);
  std::string joined;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    EXPECT_EQ(out[i].t_ms, 5);
    EXPECT_LE(out[i].message.size(), 7u);
    // No piece starts with a continuation byte.
    EXPECT_NE(static_cast<uint8_t>(out[i].message[0]) & 0xC0, 0x80);
    joined += out[i].message;
  }
  EXPECT_EQ(joined, msg);
  EXPECT_EQ(out.back().message, "short");
  // Bytes that are not UTF-8 are split anyway.
  auto raw = SplitLongEvents({{1, std::string(20, '\x80')}}, 7);
  EXPECT_EQ(raw.size(), 3u);
}

class RecordingSink : public model::IngestObserver {
 public:
  void OnSamples(const model::SampleBatch& batch) override {
    std::lock_guard<std::mutex> lock(mu);
    n += batch.SampleCount();
  }
  void OnLogs(const model::LogBatch& batch) override {
    std::lock_guard<std::mutex> lock(mu);
    log_events += batch.events.size();
  }
  void OnJob(const model::JobRecord& job) override {
    std::lock_guard<std::mutex> lock(mu);
    jobs.push_back(job.name + ":" + std::string(model::JobStatusName(job.status)));
  }
  void OnRuleStatuses(const std::string& job, int host_index,
                      const std::vector<model::RuleStatus>& statuses) override {
    std::lock_guard<std::mutex> lock(mu);
    jobs.push_back(absl::StrFormat("%s/%d:%d rules", job, host_index, statuses.size()));
  }
  std::mutex mu;
  size_t n = 0;
  size_t log_events = 0;
  std::vector<std::string> jobs;
};

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::DbOptions o;
    o.data_dir = dir_.Sub("data");
    o.clock = &clock_;
    o.background_thread = false;
    auto db = store::Db::Open(o);
    ASSERT_TRUE(db.ok());
    db_ = std::move(*db);
    ingest_ = std::make_unique<Ingest>(db_.get());
  }
  store::testing::TempDir dir_;
  util::FakeClock clock_{kNow};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<Ingest> ingest_;
};

TEST_F(IngestTest, SubscribersSeeAcceptedBatchesOnly) {
  RecordingSink sink;
  ingest_->Subscribe(&sink);
  ASSERT_TRUE(ingest_->Put(One(1)).ok());
  EXPECT_FALSE(ingest_->Put(One(std::nan(""))).ok());
  EXPECT_EQ(sink.n, 1u);
  ASSERT_TRUE(ingest_->PutLogs({{"g", "s"}, {{kNow, "a"}, {kNow, "b"}}}).ok());
  EXPECT_EQ(sink.log_events, 2u);
  model::JobRecord job;
  job.name = "observed";
  job.creation_ms = job.last_modified_ms = kNow;
  ASSERT_TRUE(ingest_->CreateJob(job).ok());
  EXPECT_FALSE(ingest_->CreateJob(job).ok());  // refused: not seen
  job.status = model::JobStatus::kCompleted;
  ASSERT_TRUE(ingest_->UpdateJob(job).ok());
  EXPECT_EQ(sink.jobs, (std::vector<std::string>{"observed:InProgress", "observed:Completed"}));
  // The rule engine's statuses reach observers too (the dashboard's job
  // events), and only once stored.
  model::RuleStatus status;
  status.configuration_name = status.rule = "LossNotDecreasing";
  ASSERT_TRUE(ingest_->SetRuleStatuses("observed", 1, {status}).ok());
  EXPECT_FALSE(ingest_->SetRuleStatuses("unknown-job", 1, {status}).ok());
  EXPECT_EQ(sink.jobs.back(), "observed/1:1 rules");
  EXPECT_EQ(sink.jobs.size(), 3u);
  ingest_->Unsubscribe(&sink);
  ASSERT_TRUE(ingest_->Put(One(2)).ok());
  EXPECT_EQ(sink.n, 1u);
}

TEST_F(IngestTest, ConcurrentWritersAreAllStored) {
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(ingest_->Put(One(i, kNow + i, absl::StrFormat("m%d", w))).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto view = db_->View();
  for (int w = 0; w < 4; ++w) {
    std::vector<store::SeriesRef> refs;
    model::SeriesKey k = Key(absl::StrFormat("m%d", w));
    ASSERT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, nullptr, &refs).ok());
    ASSERT_EQ(refs.size(), 1u);
    int n = 0;
    ASSERT_TRUE(view->ScanRows(refs[0].id, 0, INT64_MAX, [&](uint8_t, const store::Row&) { ++n; }).ok());
    EXPECT_EQ(n, 100);
    EXPECT_EQ(view->GetLastValue(refs[0].id)->value().value, 99);
  }
}

// What runs at a quiet point sees every write that was stored passed to the
// observers, and no write is stored until it returns: the archive's pass
// reads the store there and watches for late data from there on.
TEST_F(IngestTest, NothingIsStoredWhileAQuietPointRuns) {
  RecordingSink sink;
  ingest_->Subscribe(&sink);
  ASSERT_TRUE(ingest_->Put(One(1)).ok());
  std::atomic<bool> written{false};
  std::thread writer;
  size_t seen_at_quiet_point = 0;
  ingest_->AtQuietPoint([&] {
    {
      std::lock_guard<std::mutex> lock(sink.mu);
      seen_at_quiet_point = sink.n;
    }
    writer = std::thread([&] {
      EXPECT_TRUE(ingest_->Put(One(2, kNow + 1)).ok());
      EXPECT_TRUE(ingest_->PutLogs({{"g", "s"}, {{kNow, "late"}}}).ok());
      written = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(written.load()) << "a write went through during the quiet point";
    auto view = db_->View();
    std::vector<store::SeriesRef> refs;
    model::SeriesKey k = Key("train:loss");
    ASSERT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, nullptr, &refs).ok());
    int rows = 0;
    ASSERT_TRUE(
        view->ScanRows(refs[0].id, 0, INT64_MAX, [&](uint8_t, const store::Row&) { ++rows; }).ok());
    EXPECT_EQ(rows, 1);
  });
  writer.join();
  EXPECT_EQ(seen_at_quiet_point, 1u);
  EXPECT_TRUE(written.load());
  EXPECT_EQ(sink.n, 2u);
  EXPECT_EQ(sink.log_events, 1u);
  ingest_->Unsubscribe(&sink);
}

TEST_F(IngestTest, LongLinesAreSplitAndJobNamesChecked) {
  ASSERT_TRUE(ingest_->PutLogs({{"g", "s"}, {{1, std::string(model::kMaxLogEventBytes + 10, 'x')}}}).ok());
  auto view = db_->View();
  auto stream = view->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 2u);
  EXPECT_EQ((*stream)->stored_bytes, model::kMaxLogEventBytes + 10);
  EXPECT_FALSE(ingest_->PutLogs({{"", "s"}, {{1, "x"}}}).ok());

  model::JobRecord job;
  job.name = "bad_name";
  EXPECT_THAT(ingest_->CreateJob(job).message(), HasSubstr("bad_name"));
  job.name = "good-name";
  ASSERT_TRUE(ingest_->CreateJob(job).ok());
  EXPECT_TRUE(ingest_->GetJob("GOOD-NAME")->has_value());
}

}  // namespace
}  // namespace trainwatch::ingest
