// The AWS endpoints over the real store: what `trainwatch run` writes is what
// `aws logs ...` and `aws sagemaker ...` read through `trainwatch server`.
#include "app/api_backends.h"

#include <thread>

#include "api/api.h"
#include "api/testing/api_client.h"
#include "app/job_access.h"
#include "ingest/ingest.h"
#include "job/lifecycle.h"
#include "job/runner_identity.h"
#include "query/store_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::app {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1736942700000;
constexpr char kGroup[] = "/aws/sagemaker/TrainingJobs";

using store::testing::OpenWriterOrDie;

class StoreBackendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_ = OpenWriterOrDie(dir_.path(), &clock_);
    ASSERT_NE(writer_, nullptr);
    model::LogBatch a{{kGroup, "job-a/algo-1-1"}, {}};
    for (int i = 0; i < 30; ++i) {
      a.events.push_back({kNow - 60000 + i * 1000, "epoch=" + std::to_string(i) + " loss=0.5"});
    }
    ASSERT_TRUE(writer_->PutLogs(a).ok());
    ASSERT_TRUE(writer_->PutLogs({{kGroup, "job-b/algo-1-1"},
                                  {{kNow - 59500, "ERROR disk full"}, {kNow - 100, "done"}}})
                    .ok());
    model::JobRecord job;
    job.name = "job-a";
    job.arn = model::TrainingJobArn(job.name);
    job.status = model::JobStatus::kCompleted;
    job.secondary_status = model::SecondaryStatus::kCompleted;
    job.creation_ms = kNow - 61000;
    job.last_modified_ms = kNow;
    job.final_metrics = {{"loss", 0.5, kNow - 31000}};
    ASSERT_TRUE(writer_->CreateJob(job).ok());
    job.name = "job-b";
    job.status = model::JobStatus::kInProgress;  // no runner recorded: it died
    job.secondary_status = model::SecondaryStatus::kTraining;
    ASSERT_TRUE(writer_->CreateJob(job).ok());

    model::SeriesSamples loss;
    loss.key = *model::MakeSeriesKey(kGroup, "train:loss", {{"TrainingJobName", "job-a"}});
    loss.storage_resolution_s = 1;
    for (int i = 0; i < 30; ++i) loss.samples.push_back({kNow - 60000 + i * 1000, 1.0 + i});
    model::SeriesSamples gpu;
    gpu.key = *model::MakeSeriesKey(kGroup, "GPUUtilization", {{"Host", "job-a/algo-1"}}, "Percent");
    gpu.weighted = {{kNow - 59000, 80, 3}, {kNow - 58000, 90, 1}};
    ASSERT_TRUE(writer_->PutSamples({{loss, gpu}}).ok());

    absl::StatusOr<std::unique_ptr<store::Db>> follower = OpenFollower(dir_.path(), &clock_);
    ASSERT_TRUE(follower.ok()) << follower.status();
    follower_ = *std::move(follower);
    reader_ = std::make_unique<query::StoreReader>(*follower_);
    samples_ = std::make_unique<StoreSampleWriter>(*follower_);
    log_writer_ = std::make_unique<StoreLogsWriter>(*follower_, *reader_);
    jobs_ = std::make_unique<StoreJobsBackend>(*follower_);
    api_ = std::make_unique<api::Api>(api::ApiOptions{},
                                      api::Backends{.samples = samples_.get(),
                                                    .metrics = reader_.get(),
                                                    .logs = reader_.get(),
                                                    .log_writer = log_writer_.get(),
                                                    .jobs = jobs_.get()},
                                      clock_);
  }

  nlohmann::json Call(const api::HttpRequest& r, int status = 200) {
    api::HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, status) << out.body;
    return nlohmann::json::parse(out.body, nullptr, false);
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{kNow};
  std::unique_ptr<store::Db> writer_;
  std::unique_ptr<store::Db> follower_;
  std::unique_ptr<query::StoreReader> reader_;
  std::unique_ptr<StoreSampleWriter> samples_;
  std::unique_ptr<StoreLogsWriter> log_writer_;
  std::unique_ptr<StoreJobsBackend> jobs_;
  std::unique_ptr<api::Api> api_;
};

TEST_F(StoreBackendsTest, LogTailLoopReadsEveryEventOnceAndStops) {
  std::vector<std::string> seen;
  std::string token;
  for (int calls = 0; calls < 20; ++calls) {
    nlohmann::json body = {{"logGroupName", kGroup}, {"logStreamName", "job-a/algo-1-1"},
                           {"startFromHead", true}, {"limit", 7}};
    if (!token.empty()) body["nextToken"] = token;
    nlohmann::json j = Call(api::testing::LogsJson("GetLogEvents", body.dump()));
    for (const auto& e : j["events"]) seen.push_back(e["message"].get<std::string>());
    if (j["nextForwardToken"] == token) break;
    token = j["nextForwardToken"].get<std::string>();
  }
  ASSERT_EQ(seen.size(), 30u);
  EXPECT_EQ(seen[29], "epoch=29 loss=0.5");
  // The newest page, then backward to the start.
  nlohmann::json last = Call(api::testing::LogsJson(
      "GetLogEvents", R"({"logGroupName": "/aws/sagemaker/TrainingJobs",
                         "logStreamName": "job-a/algo-1-1", "limit": 10})"));
  ASSERT_EQ(last["events"].size(), 10u);
  EXPECT_EQ(last["events"][9]["message"], "epoch=29 loss=0.5");
  nlohmann::json back = Call(api::testing::LogsJson(
      "GetLogEvents", nlohmann::json{{"logGroupName", kGroup}, {"logStreamName", "job-a/algo-1-1"},
                                     {"nextToken", last["nextBackwardToken"]}}
                          .dump()));
  EXPECT_EQ(back["events"].size(), 20u);
  EXPECT_EQ(back["events"][0]["message"], "epoch=0 loss=0.5");
}

TEST_F(StoreBackendsTest, FilterAndDescribe) {
  nlohmann::json j = Call(api::testing::LogsJson(
      "FilterLogEvents", R"({"logGroupName": "/aws/sagemaker/TrainingJobs",
                            "filterPattern": "?ERROR ?\"epoch=1 \"", "limit": 2})"));
  ASSERT_EQ(j["events"].size(), 2u);
  EXPECT_EQ(j["events"][0]["message"], "ERROR disk full");  // 59.5 s ago, between two epochs
  EXPECT_EQ(j["events"][1]["message"], "epoch=1 loss=0.5");
  EXPECT_FALSE(j.contains("nextToken"));
  j = Call(api::testing::LogsJson("FilterLogEvents",
                                  R"({"logGroupName": "/aws/sagemaker/TrainingJobs",
                                     "logStreamNamePrefix": "job-a/", "limit": 25})"));
  EXPECT_EQ(j["events"].size(), 25u);
  ASSERT_TRUE(j.contains("nextToken"));
  j = Call(api::testing::LogsJson(
      "FilterLogEvents", nlohmann::json{{"logGroupName", kGroup}, {"logStreamNamePrefix", "job-a/"},
                                        {"nextToken", j["nextToken"]}}
                             .dump()));
  EXPECT_EQ(j["events"].size(), 5u);
  j = Call(api::testing::LogsJson("DescribeLogStreams",
                                  R"({"logGroupName": "/aws/sagemaker/TrainingJobs",
                                     "logStreamNamePrefix": "job-b/"})"));
  ASSERT_EQ(j["logStreams"].size(), 1u);
  EXPECT_EQ(j["logStreams"][0]["lastEventTimestamp"], kNow - 100);
  j = Call(api::testing::LogsJson("GetLogEvents", R"({"logGroupName": "/nope",
                                                    "logStreamName": "x"})"),
           400);
  EXPECT_EQ(j["__type"], "ResourceNotFoundException");
  // Writes need the writer: this server only follows the folder.
  j = Call(api::testing::LogsJson("PutLogEvents", nlohmann::json{{"logGroupName", kGroup},
                                                                 {"logStreamName", "s"},
                                                                 {"logEvents", {{{"timestamp", kNow}, {"message", "x"}}}}}
                                                      .dump()),
           400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("follows"));
}

TEST_F(StoreBackendsTest, TrainingJobs) {
  nlohmann::json j =
      Call(api::testing::SageMakerJson("DescribeTrainingJob", R"({"TrainingJobName": "JOB-A"})"));
  EXPECT_EQ(j["TrainingJobStatus"], "Completed");
  EXPECT_EQ(j["FinalMetricDataList"][0]["Value"], 0.5);
  // job-b's runner is gone: reported as Failed, and so it cannot be stopped.
  j = Call(api::testing::SageMakerJson("DescribeTrainingJob", R"({"TrainingJobName": "job-b"})"));
  EXPECT_EQ(j["TrainingJobStatus"], "Failed");
  j = Call(api::testing::SageMakerJson("StopTrainingJob", R"({"TrainingJobName": "job-b"})"), 400);
  EXPECT_EQ(j["message"], "The request was rejected because the training job is in status Failed.");
  j = Call(api::testing::SageMakerJson("ListTrainingJobs", R"({"SortBy": "Name"})"));
  ASSERT_EQ(j["TrainingJobSummaries"].size(), 2u);
  EXPECT_EQ(j["TrainingJobSummaries"][1]["TrainingJobStatus"], "Failed");
  j = Call(api::testing::SageMakerJson("DescribeTrainingJob", R"({"TrainingJobName": "nope"})"), 400);
  EXPECT_EQ(j["message"], "Requested resource not found.");
  // Not wired yet, said plainly (and not retried by clients).
  j = Call(api::testing::SageMakerJson("CreateTrainingJob", R"({"TrainingJobName": "x",
      "AlgorithmSpecification": {"TrainingImage": "i", "TrainingInputMode": "File"},
      "RoleArn": "arn:aws:iam::000000000000:role/TrainWatchLocal",
      "OutputDataConfig": {"S3OutputPath": "s3://b/o"},
      "ResourceConfig": {"InstanceType": "local", "InstanceCount": 1, "VolumeSizeInGB": 1},
      "StoppingCondition": {}})"),
           400);
  EXPECT_EQ(j["__type"], "UnknownOperationException");
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("trainwatch run"));
}

TEST_F(StoreBackendsTest, CloudWatchMetrics) {
  nlohmann::json j = Call(api::testing::CloudWatchJson("GetMetricStatistics", R"({
      "Namespace": "/aws/sagemaker/TrainingJobs", "MetricName": "train:loss",
      "Dimensions": [{"Name": "TrainingJobName", "Value": "job-a"}],
      "StartTime": 1736942580, "EndTime": 1736942700, "Period": 60,
      "Statistics": ["SampleCount", "Average", "Maximum"]})"));
  ASSERT_EQ(j["Datapoints"].size(), 1u) << j;
  EXPECT_EQ(j["Datapoints"][0]["Timestamp"], 1736942640.0);
  EXPECT_EQ(j["Datapoints"][0]["SampleCount"], 30.0);
  EXPECT_EQ(j["Datapoints"][0]["Average"], 15.5);
  EXPECT_EQ(j["Datapoints"][0]["Maximum"], 30.0);
  api::HttpResponse xml = api_->Handle(api::testing::QueryRequest(
      "GetMetricStatistics",
      "Namespace=%2Faws%2Fsagemaker%2FTrainingJobs&MetricName=GPUUtilization"
      "&Dimensions.member.1.Name=Host&Dimensions.member.1.Value=job-a%2Falgo-1"
      "&StartTime=2025-01-15T12:03:00Z&EndTime=2025-01-15T12:05:00Z&Period=60"
      "&ExtendedStatistics.member.1=p50&ExtendedStatistics.member.2=p100"));
  EXPECT_EQ(xml.status, 200) << xml.body;
  EXPECT_THAT(xml.body, HasSubstr("<key>p50</key>\n            <value>80.0</value>"));
  EXPECT_THAT(xml.body, HasSubstr("<key>p100</key>\n            <value>90.0</value>"));
  EXPECT_THAT(xml.body, HasSubstr("<Unit>Percent</Unit>"));

  // GetMetricData, 7 datapoints a page, to completion; and a query over more
  // than 1440 periods (3600 one-second periods).
  for (int64_t start : {1736942580LL, 1736939100LL}) {
    std::vector<double> values;
    std::string token;
    for (int page = 0; page < 20; ++page) {
      nlohmann::json body = {
          {"MetricDataQueries",
           {{{"Id", "loss"},
             {"MetricStat",
              {{"Metric", {{"Namespace", kGroup}, {"MetricName", "train:loss"},
                           {"Dimensions", {{{"Name", "TrainingJobName"}, {"Value", "job-a"}}}}}},
               {"Period", 1},
               {"Stat", "Average"}}}}}},
          {"StartTime", start}, {"EndTime", 1736942700}, {"MaxDatapoints", 7},
          {"ScanBy", "TimestampAscending"}};
      if (!token.empty()) body["NextToken"] = token;
      j = Call(api::testing::CloudWatchJson("GetMetricData", body.dump()));
      for (const auto& r : j["MetricDataResults"]) {
        for (const auto& v : r["Values"]) values.push_back(v.get<double>());
      }
      if (!j.contains("NextToken")) break;
      token = j["NextToken"].get<std::string>();
    }
    ASSERT_EQ(values.size(), 30u) << start;
    EXPECT_EQ(values.front(), 1.0);
    EXPECT_EQ(values.back(), 30.0);
  }

  j = Call(api::testing::CloudWatchJson("ListMetrics", R"({"Namespace":
      "/aws/sagemaker/TrainingJobs", "Dimensions": [{"Name": "Host"}]})"));
  ASSERT_EQ(j["Metrics"].size(), 1u);
  EXPECT_EQ(j["Metrics"][0]["MetricName"], "GPUUtilization");
  j = Call(api::testing::CloudWatchJson("ListMetrics", "{}"));
  EXPECT_EQ(j["Metrics"].size(), 2u);
  // Writes need the writer.
  j = Call(api::testing::CloudWatchJson("PutMetricData", R"({"Namespace": "T",
      "MetricData": [{"MetricName": "m", "Value": 1}]})"), 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("follows"));
}

// GetMetricData's queries all read one snapshot: a sample written while it is
// held is in no answer from it, and in the next request's.
TEST_F(StoreBackendsTest, ASnapshotAnswersEveryQueryFromOneStateOfTheData) {
  api::StatisticsQuery q;
  q.metric = {kGroup, "train:loss", {{"TrainingJobName", "job-a"}}};
  q.start_ms = kNow - 120000;
  q.end_ms = kNow;
  q.period_s = 60;
  q.now_ms = kNow;
  q.statistics = {{api::Statistic::Kind::kSampleCount, 0, "SampleCount"}};
  auto count_of = [](const absl::StatusOr<std::vector<api::StatisticsBucket>>& got) {
    EXPECT_TRUE(got.ok()) << got.status();
    double n = 0;
    if (got.ok()) {
      for (const api::StatisticsBucket& b : *got) n += b.values.at(0).value_or(0);
    }
    return n;
  };
  // The server reads as the folder's writer or as a follower of a run.
  query::StoreReader on_writer(*writer_);
  double stored = 30;
  for (query::StoreReader* backend : {reader_.get(), &on_writer}) {
    {
      absl::StatusOr<std::unique_ptr<api::MetricsReader>> snapshot = backend->Snapshot();
      ASSERT_TRUE(snapshot.ok()) << snapshot.status();
      ASSERT_NE(*snapshot, nullptr);
      EXPECT_EQ(count_of((*snapshot)->GetStatistics(q)), stored);
      model::SeriesSamples more;
      more.key = *model::MakeSeriesKey(kGroup, "train:loss", {{"TrainingJobName", "job-a"}});
      more.storage_resolution_s = 1;
      more.samples = {{kNow - 500 + static_cast<int64_t>(stored), 99.0}};
      ASSERT_TRUE(writer_->PutSamples({{more}}).ok());
      EXPECT_EQ(count_of((*snapshot)->GetStatistics(q)), stored);
      // A fork, made after the write and read on another thread, reads the
      // snapshot's state too (GetMetricData's threads).
      std::unique_ptr<api::MetricsReader> fork = (*snapshot)->Fork();
      ASSERT_NE(fork, nullptr);
      double forked = -1;
      std::thread other([&] { forked = count_of(fork->GetStatistics(q)); });
      other.join();
      EXPECT_EQ(forked, stored);
    }
    ++stored;
    clock_.AdvanceMs(1000);  // a follower catches up at most every 250 ms
    EXPECT_EQ(count_of(backend->GetStatistics(q)), stored);
  }
}

}  // namespace
}  // namespace trainwatch::app

namespace trainwatch::app {
namespace {

// Runners on another machine: heartbeats, silence, and stop requests.
class RemoteRunnersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenWriterOrDie(dir_.path(), &clock_);
    ASSERT_NE(db_, nullptr);
    ingest_ = std::make_unique<ingest::Ingest>(db_.get());
    contacts_ = std::make_unique<RunnerContacts>(&clock_, 60000);
    agents_ = std::make_unique<StoreAgentBackend>(*ingest_, contacts_.get());
    ingest_->Subscribe(&seen_);
    jobs_ = std::make_unique<StoreJobsBackend>(*db_, ingest_.get(), nullptr, contacts_.get());
  }
  model::JobRecord Host(const std::string& name, int index) {
    model::JobRecord h;
    h.name = name;
    h.arn = model::TrainingJobArn(name);
    h.host_index = index;
    h.secondary_status = model::SecondaryStatus::kTraining;
    h.creation_ms = h.last_modified_ms = clock_.NowMs();
    h.runner = Runner(index);
    return h;
  }
  static model::RunnerIdentity Runner(int index) {
    return {"machine-elsewhere-" + std::to_string(index), "boot", 4000 + index, 99};
  }
  model::JobRecord Stored(const std::string& name, int index) {
    return *model::FindHost(db_->GetJob(name)->value(), index);
  }

  // The records the ingest's observers (the rules, the reports) are shown.
  struct SeenJobs : model::IngestObserver {
    void OnJob(const model::JobRecord& job) override { jobs.push_back(job); }
    std::vector<model::JobRecord> jobs;
  };

  store::testing::TempDir dir_;
  util::FakeClock clock_{kNow};
  std::unique_ptr<store::Db> db_;
  SeenJobs seen_;
  std::unique_ptr<ingest::Ingest> ingest_;
  std::unique_ptr<RunnerContacts> contacts_;
  std::unique_ptr<StoreAgentBackend> agents_;
  std::unique_ptr<StoreJobsBackend> jobs_;
};

TEST_F(RemoteRunnersTest, ARunnerSilentForTheTimeoutIsRecordedFailedAndOnlyThen) {
  ASSERT_TRUE(db_->CreateJob(Host("ddp", 1)).ok());
  ASSERT_TRUE(db_->CreateJob(Host("ddp", 2)).ok());
  absl::StatusOr<bool> beat = agents_->Heartbeat({"ddp", 3, Runner(3)});
  EXPECT_TRUE(absl::IsNotFound(beat.status())) << beat.status();
  beat = agents_->Heartbeat({"ddp", 2, Runner(1)});
  EXPECT_TRUE(absl::IsFailedPrecondition(beat.status())) << beat.status();

  // Every runner has the timeout from the server's start to be heard from.
  clock_.AdvanceMs(50000);
  EXPECT_EQ(jobs_->RecordSilentRunners(), 0);
  beat = agents_->Heartbeat({"DDP", 2, Runner(2)});
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_FALSE(*beat);
  clock_.AdvanceMs(50000);  // host 1: silent for 100 s; host 2: heard 50 s ago
  EXPECT_EQ(jobs_->RecordSilentRunners(), 1);
  EXPECT_EQ(Stored("ddp", 1).status, model::JobStatus::kFailed);
  EXPECT_THAT(Stored("ddp", 1).failure_reason,
              HasSubstr("(pid 4001 on machine-elsewhere-1) has not been heard from for 1m"));
  EXPECT_EQ(Stored("ddp", 2).status, model::JobStatus::kInProgress);
  EXPECT_EQ(db_->GetJob("ddp")->value().status, model::JobStatus::kInProgress);
  // The job's end goes through the ingest: the rules and reports see it.
  ASSERT_EQ(seen_.jobs.size(), 1u);
  EXPECT_EQ(seen_.jobs[0].host_index, 1);
  EXPECT_EQ(seen_.jobs[0].status, model::JobStatus::kFailed);
  clock_.AdvanceMs(10000);
  EXPECT_EQ(jobs_->RecordSilentRunners(), 1);
  EXPECT_EQ(db_->GetJob("ddp")->value().status, model::JobStatus::kFailed);
  EXPECT_EQ(jobs_->RecordSilentRunners(), 0) << "terminal hosts are left alone";
}

TEST_F(RemoteRunnersTest, AStopReachesARunnerOnAnotherMachineThroughItsHeartbeat) {
  ASSERT_TRUE(db_->CreateJob(Host("far", 1)).ok());
  ASSERT_TRUE(jobs_->StopJob("far").ok());
  EXPECT_EQ(db_->GetJob("far")->value().status, model::JobStatus::kStopping);
  absl::StatusOr<bool> beat = agents_->Heartbeat({"far", 1, Runner(1)});
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_TRUE(*beat);
  // Stopping it again is refused as for any job that is not InProgress.
  absl::Status again = jobs_->StopJob("far");
  EXPECT_TRUE(absl::IsFailedPrecondition(again)) << again;
}

// One host of a job saving a checkpoint on its own SIGTERM (Stopping) does
// not shield the others from a stop, a user's or a rule's.
TEST_F(RemoteRunnersTest, AJobWithOneHostStoppingStillStopsTheOthers) {
  model::JobRecord first = Host("two", 1);
  first.status = model::JobStatus::kStopping;
  first.secondary_status = model::SecondaryStatus::kStopping;
  ASSERT_TRUE(db_->CreateJob(first).ok());
  ASSERT_TRUE(db_->CreateJob(Host("two", 2)).ok());
  ASSERT_EQ(db_->GetJob("two")->value().status, model::JobStatus::kStopping);
  absl::Status stopped = jobs_->StopJob("two");
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_EQ(Stored("two", 2).status, model::JobStatus::kStopping);
  absl::StatusOr<bool> beat = agents_->Heartbeat({"two", 2, Runner(2)});
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_TRUE(*beat) << "host 2's runner is told to stop";
  absl::Status again = jobs_->StopJob("two");
  EXPECT_TRUE(absl::IsFailedPrecondition(again)) << "no host left to stop: " << again;
}

// A stop or a "runner silent" decided on a record read before the runner
// finished the job leaves the finished record as the runner wrote it.
TEST_F(RemoteRunnersTest, WhatWasDecidedOnAnOldReadDoesNotUndoTheRunnersLastUpdate) {
  ASSERT_TRUE(db_->CreateJob(Host("done", 1)).ok());
  const model::JobRecord as_read = Stored("done", 1);
  model::JobRecord completed = as_read;
  completed.status = model::JobStatus::kCompleted;
  completed.secondary_status = model::SecondaryStatus::kCompleted;
  completed.last_modified_ms = as_read.last_modified_ms + 1;
  completed.final_metrics = {{"train:loss", 0.25, completed.last_modified_ms}};
  ASSERT_TRUE(db_->UpdateJob(completed).ok());  // the runner, after the read

  absl::Status stop = db_->RequestStop("done", 1, clock_.NowMs());
  EXPECT_TRUE(absl::IsFailedPrecondition(stop)) << stop;
  EXPECT_THAT(stop.message(), HasSubstr("in status Completed"));
  model::JobRecord silent = as_read;  // what the sweeper decided on the old read
  job::RecordRunnerSilent(&silent, clock_.NowMs(), 60000);
  absl::Status lost = RecordRunnerLost(*db_, ingest_.get(), silent, as_read);
  EXPECT_TRUE(absl::IsFailedPrecondition(lost)) << lost;
  EXPECT_EQ(Stored("done", 1), completed);

  // An update of a running job after the read (a new transition) stands too.
  ASSERT_TRUE(db_->CreateJob(Host("moving", 1)).ok());
  const model::JobRecord moving_read = Stored("moving", 1);
  model::JobRecord uploading = moving_read;
  job::EnterStatus(&uploading, model::JobStatus::kInProgress, model::SecondaryStatus::kUploading,
                   "Uploading", moving_read.last_modified_ms + 5);
  ASSERT_TRUE(db_->UpdateJob(uploading).ok());
  silent = moving_read;
  job::RecordRunnerSilent(&silent, clock_.NowMs(), 60000);
  lost = RecordRunnerLost(*db_, ingest_.get(), silent, moving_read);
  EXPECT_TRUE(absl::IsFailedPrecondition(lost)) << lost;
  EXPECT_EQ(Stored("moving", 1).secondary_status, model::SecondaryStatus::kUploading);

  // On a record still as read, both are written.
  ASSERT_TRUE(db_->CreateJob(Host("running", 1)).ok());
  const model::JobRecord running = Stored("running", 1);
  ASSERT_TRUE(db_->RequestStop("running", 1, clock_.NowMs()).ok());
  EXPECT_EQ(Stored("running", 1).stop_requested_ms, clock_.NowMs());
  silent = running;
  job::RecordRunnerSilent(&silent, clock_.NowMs(), 60000);
  ASSERT_TRUE(RecordRunnerLost(*db_, ingest_.get(), silent, running).ok());
  EXPECT_EQ(Stored("running", 1).status, model::JobStatus::kFailed);
}

}  // namespace
}  // namespace trainwatch::app
