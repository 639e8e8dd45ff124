#include "archive/job_archive.h"

#include <filesystem>
#include <stop_token>

#include "absl/strings/str_split.h"
#include "archive/local_folder_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "query/store_reader.h"
#include "store/test_util.h"
#include "util/gzip.h"

namespace trainwatch::archive {
namespace {

constexpr int64_t kT0 = 1736942400000;  // the fake clock's start

model::SeriesKey Key(const std::string& ns, const std::string& metric,
                     std::vector<model::Dimension> dims) {
  return *model::MakeSeriesKey(ns, metric, std::move(dims));
}

class JobArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = store::testing::OpenWriterOrDie(dir_.path() + "/data", &clock_);
    ASSERT_NE(db_, nullptr);
    reader_ = std::make_unique<query::StoreReader>(*db_);
    auto folder = LocalFolderStore::Open(dir_.path() + "/archive");
    ASSERT_TRUE(folder.ok()) << folder.status();
    archive_ = *std::move(folder);
    job_.name = "mnist-1";
    job_.creation_ms = kT0;
    job_.log_stream = "mnist-1/algo-1-1736942400";
    ASSERT_TRUE(db_->CreateJob(job_).ok());
  }

  // A sample a second of the job's loss, its host's CPU, and a log line,
  // over [from_s, to_s) seconds after kT0.
  void Write(int from_s, int to_s) {
    model::SampleBatch batch;
    model::SeriesSamples loss{Key("/aws/sagemaker/TrainingJobs", "train:loss",
                                  {{"TrainingJobName", job_.name}}),
                              1, {}, {}, {}};
    model::SeriesSamples cpu{Key("trainwatch/Hosts", "CPUUtilization", {{"Host", "mnist-1/algo-1"}}),
                             1, {}, {}, {}};
    cpu.key.unit = "Percent";
    model::LogBatch logs{{std::string(model::kTrainingJobsLogGroup), job_.log_stream}, {}};
    for (int s = from_s; s < to_s; ++s) {
      loss.samples.push_back({kT0 + s * 1000, 1.0 / (s + 1)});
      cpu.samples.push_back({kT0 + s * 1000, 50.5});
      logs.events.push_back({kT0 + s * 1000, "step " + std::to_string(s) + ", \"quoted\""});
    }
    batch.series = {loss, cpu};
    ASSERT_TRUE(db_->PutSamples(batch).ok());
    ASSERT_TRUE(db_->PutLogs(logs).ok());
  }

  // A job that ran `minutes` minutes from kT0, its loss a sample a minute,
  // and has just ended.
  void WriteEndedJobOfMinutes(int minutes) {
    model::SampleBatch batch;
    model::SeriesSamples loss{Key("/aws/sagemaker/TrainingJobs", "train:loss",
                                  {{"TrainingJobName", job_.name}}),
                              1, {}, {}, {}};
    for (int m = 0; m < minutes; ++m) loss.samples.push_back({kT0 + m * 60'000, 1.0 * m});
    batch.series = {loss};
    clock_.AdvanceMs(minutes * 60'000LL);
    ASSERT_TRUE(db_->PutSamples(batch).ok());
    job_.status = model::JobStatus::kCompleted;
  }

  JobArchivePass Pass(int64_t now_ms) {
    ArchiveOptions options;
    options.now_ms = now_ms;
    options.settle_ms = 60'000;
    absl::StatusOr<JobArchivePass> pass =
        ArchiveJob({reader_.get(), reader_.get()}, job_, archive_.get(), options);
    EXPECT_TRUE(pass.ok()) << pass.status();
    return pass.ok() ? *pass : JobArchivePass{};
  }

  std::string Object(const std::string& key) {
    auto got = archive_->Get(key);
    EXPECT_TRUE(got.ok() && got->has_value()) << key;
    return got.ok() && got->has_value() ? **got : "";
  }

  std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
    return lines;
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{kT0};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<query::StoreReader> reader_;
  std::unique_ptr<LocalFolderStore> archive_;
  model::JobRecord job_;
};

TEST_F(JobArchiveTest, ARunningJobIsArchivedUpToTheSettleTimeThenTheRestWhenItEnds) {
  Write(0, 120);
  // At 130 s, with a minute to settle: the first 70 s.
  JobArchivePass first = Pass(kT0 + 130'000);
  ASSERT_EQ(first.segments.size(), 1u);
  EXPECT_EQ(first.series, 2);
  EXPECT_EQ(first.samples, 140);
  EXPECT_EQ(first.log_events, 70);
  EXPECT_FALSE(first.complete);
  EXPECT_EQ(first.segments[0], SegmentName(0, kT0 + 70'000));

  // Nothing new to settle: nothing written but job.json, which is unchanged.
  JobArchivePass again = Pass(kT0 + 130'000);
  EXPECT_TRUE(again.segments.empty());
  EXPECT_EQ(again.bytes, 0);

  // The job ends: the rest, and it is complete.
  job_.status = model::JobStatus::kCompleted;
  JobArchivePass last = Pass(kT0 + 200'000);
  ASSERT_EQ(last.segments.size(), 1u);
  EXPECT_EQ(last.samples, 100);
  EXPECT_EQ(last.log_events, 50);
  EXPECT_TRUE(last.complete);
  EXPECT_TRUE(Pass(kT0 + 300'000).skipped);
  // Nor does a pass whose settle time has not passed since the job ended (a
  // longer --settle than the pass that completed it) make it incomplete again.
  job_.training_end_ms = kT0 + 290'000;
  EXPECT_TRUE(Pass(kT0 + 300'000).skipped);

  nlohmann::json job = nlohmann::json::parse(Object("jobs/mnist-1/job.json"));
  EXPECT_EQ(job["format"], "trainwatch-archive");
  EXPECT_EQ(job["version"], 1);
  EXPECT_EQ(job["complete"], true);
  EXPECT_EQ(job["job"]["name"], "mnist-1");
  ASSERT_EQ(job["segments"].size(), 2u);

  // Every sample and event once, across the segments, as stored.
  int samples = 0, events = 0;
  for (const auto& name : job["segments"]) {
    const std::string prefix = "jobs/mnist-1/segments/" + name.get<std::string>();
    nlohmann::json manifest = nlohmann::json::parse(Object(prefix + "/manifest.json"));
    EXPECT_EQ(manifest["version"], 1);
    std::vector<std::string> series = Lines(Object(prefix + "/series.csv"));
    ASSERT_EQ(series.size(), 3u);
    EXPECT_EQ(series[0], "series,namespace,metric,unit,dimensions");
    EXPECT_EQ(series[1], R"(0,/aws/sagemaker/TrainingJobs,train:loss,None,"{""TrainingJobName"":""mnist-1""}")");
    EXPECT_EQ(series[2], R"(1,trainwatch/Hosts,CPUUtilization,Percent,"{""Host"":""mnist-1/algo-1""}")");
    auto csv = util::Gunzip(Object(prefix + "/samples.csv.gz"), 1 << 30);
    ASSERT_TRUE(csv.ok());
    std::vector<std::string> rows = Lines(*csv);
    EXPECT_EQ(rows[0], "series,timestamp_ms,value,count,sum,minimum,maximum,storage_resolution");
    samples += static_cast<int>(rows.size()) - 1;
    if (name == job["segments"][0]) {
      EXPECT_EQ(rows[1], "0,1736942400000,1,,,,,1");
      EXPECT_EQ(rows[2], "0,1736942401000,0.5,,,,,1");
    }
    EXPECT_EQ(manifest["objects"]["samples.csv.gz"]["rows"], rows.size() - 1);
    auto logs = util::Gunzip(Object(prefix + "/logs.jsonl.gz"), 1 << 30);
    ASSERT_TRUE(logs.ok());
    for (const std::string& line : Lines(*logs)) {
      nlohmann::json e = nlohmann::json::parse(line);
      EXPECT_EQ(e["stream"], job_.log_stream);
      EXPECT_EQ(e["message"], "step " + std::to_string(events) + ", \"quoted\"");
      EXPECT_EQ(e["timestamp_ms"], kT0 + events * 1000);
      ++events;
    }
  }
  EXPECT_EQ(samples, 240);
  EXPECT_EQ(events, 120);
}

TEST_F(JobArchiveTest, AnotherJobOfTheSameNameIsRefusedNotMixedOrSkipped) {
  Write(0, 10);
  job_.status = model::JobStatus::kCompleted;
  ASSERT_TRUE(Pass(kT0 + 100'000).complete);
  const std::string stored = Object("jobs/mnist-1/job.json");
  // The same name, run later in another data folder (or after a wipe).
  model::JobRecord other = job_;
  other.creation_ms = kT0 + 3'600'000;
  ArchiveOptions options;
  options.now_ms = kT0 + 4'000'000;
  absl::StatusOr<JobArchivePass> pass =
      ArchiveJob({reader_.get(), reader_.get()}, other, archive_.get(), options);
  ASSERT_FALSE(pass.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(pass.status())) << pass.status();
  EXPECT_THAT(std::string(pass.status().message()),
              ::testing::HasSubstr("job mnist-1: the archive holds another job of that name "
                                   "(created 2025-01-15T12:00:00Z, this one 2025-01-15T13:00:00Z)"));
  EXPECT_EQ(Object("jobs/mnist-1/job.json"), stored) << "the archived job is left as it was";
}

TEST_F(JobArchiveTest, StatisticSetsAndWeightedSamplesKeepEveryField) {
  model::SampleBatch batch;
  model::SeriesSamples s{Key("/aws/sagemaker/TrainingJobs", "batch_time",
                             {{"TrainingJobName", job_.name}}),
                         60, {}, {}, {}};
  s.weighted.push_back({kT0 + 1000, 0.25, 3});
  s.statistic_sets.push_back({kT0 + 2000, 4, 10, 1, 4});
  batch.series = {s};
  ASSERT_TRUE(db_->PutSamples(batch).ok());
  job_.status = model::JobStatus::kFailed;
  JobArchivePass pass = Pass(kT0 + 10'000);
  ASSERT_EQ(pass.segments.size(), 1u);
  auto csv = util::Gunzip(
      Object("jobs/mnist-1/segments/" + pass.segments[0] + "/samples.csv.gz"), 1 << 30);
  ASSERT_TRUE(csv.ok());
  std::vector<std::string> rows = Lines(*csv);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1], "0,1736942401000,0.25,3,,,,60");
  EXPECT_EQ(rows[2], "0,1736942402000,,4,10,1,4,60");
}

// A segment whose manifest did not get written (a crash, a failed upload) is
// not one: the next pass writes that window again, and readers skip it.
TEST_F(JobArchiveTest, ASegmentWithoutItsManifestIsWrittenAgain) {
  Write(0, 10);
  job_.status = model::JobStatus::kStopped;
  JobArchivePass pass = Pass(kT0 + 20'000);
  ASSERT_EQ(pass.segments.size(), 1u);
  const std::string folder = dir_.path() + "/archive/jobs/mnist-1";
  std::filesystem::remove(folder + "/segments/" + pass.segments[0] + "/manifest.json");
  std::filesystem::remove(folder + "/job.json");
  auto segments = CompleteSegments(archive_.get(), job_.name);
  ASSERT_TRUE(segments.ok());
  EXPECT_TRUE(segments->empty());
  JobArchivePass again = Pass(kT0 + 20'000);
  EXPECT_EQ(again.segments, pass.segments);
  EXPECT_EQ(again.samples, 20);
  EXPECT_TRUE(again.complete);
}

// A plan starts where an earlier pass read to (past windows without data),
// unless the archive has no record of the job (wiped, or a new one): then
// from the start.
TEST_F(JobArchiveTest, APlanStartsWhereTheLastPassReadToInAnArchiveThatHasTheJob) {
  ArchiveOptions options;
  options.now_ms = kT0 + 600'000;
  options.settle_ms = 60'000;
  auto fresh = PlanJobArchive(job_, archive_.get(), options, kT0 + 300'000);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->from_ms, 0);
  Write(0, 10);
  Pass(kT0 + 60'000);  // a segment to kT0, and job.json
  auto known = PlanJobArchive(job_, archive_.get(), options, kT0 + 300'000);
  ASSERT_TRUE(known.ok()) << known.status();
  EXPECT_EQ(known->from_ms, kT0 + 300'000);
  EXPECT_EQ(known->to_ms, kT0 + 540'000);
}

// A long job archived at once is cut into windows of at most an hour.
TEST_F(JobArchiveTest, ALongJobIsCutIntoSegmentsOfAnHourAtMost) {
  WriteEndedJobOfMinutes(150);
  std::vector<int64_t> progress;
  ArchiveOptions options;
  options.now_ms = kT0 + 150 * 60'000;
  options.on_segment = [&](const JobArchivePass& p) { progress.push_back(p.samples); };
  auto pass = ArchiveJob({reader_.get(), reader_.get()}, job_, archive_.get(), options);
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->segments.size(), 3u);
  EXPECT_EQ(pass->segments[0], SegmentName(0, kT0 + 3'600'000));
  EXPECT_EQ(pass->segments[1], SegmentName(kT0 + 3'600'000, kT0 + 7'200'000));
  EXPECT_EQ(progress, (std::vector<int64_t>{60, 120, 150}));
}

// A stop asked for during a pass ends it after the segment being written;
// the next pass goes on from there and completes the job.
TEST_F(JobArchiveTest, AStopEndsThePassAfterTheSegmentAndTheNextPassGoesOn) {
  WriteEndedJobOfMinutes(150);
  std::stop_source stop;
  ArchiveOptions options;
  options.now_ms = kT0 + 150 * 60'000;
  options.stop = stop.get_token();
  options.on_segment = [&](const JobArchivePass&) { stop.request_stop(); };  // Ctrl-C now
  auto first = ArchiveJob({reader_.get(), reader_.get()}, job_, archive_.get(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->interrupted);
  EXPECT_FALSE(first->complete);
  ASSERT_EQ(first->segments.size(), 1u);
  EXPECT_EQ(first->samples, 60);
  EXPECT_EQ(first->archived_to_ms, kT0 + 3'600'000);

  options.stop = {};
  options.on_segment = nullptr;
  auto second = ArchiveJob({reader_.get(), reader_.get()}, job_, archive_.get(), options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->interrupted);
  EXPECT_TRUE(second->complete);
  EXPECT_EQ(second->segments.size(), 2u);
  EXPECT_EQ(second->samples, 90);
}

TEST(LocalFolderStoreTest, KeysAreCheckedAndListedInOrder) {
  util::testing::TempDir dir;
  auto store = LocalFolderStore::Open(dir.path() + "/a");
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Put("x/b.csv", "2").ok());
  EXPECT_TRUE((*store)->Put("x/a.csv", "1").ok());
  EXPECT_TRUE((*store)->Put("y", "3").ok());
  EXPECT_EQ((*store)->Put("../escape", "no").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*store)->Put("x//y", "no").code(), absl::StatusCode::kInvalidArgument);
  auto listed = (*store)->List("x/");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, (std::vector<std::string>{"x/a.csv", "x/b.csv"}));
  auto got = (*store)->Get("x/a.csv");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "1");
  auto missing = (*store)->Get("x/c.csv");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // A file where the folder should be.
  EXPECT_EQ(LocalFolderStore::Open(dir.path() + "/a/y").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainwatch::archive
