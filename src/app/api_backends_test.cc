// The AWS endpoints over the real store: what `trainwatch run` writes is what
// `aws logs ...` and `aws sagemaker ...` read through `trainwatch server`.
#include "app/api_backends.h"

#include "api/api.h"
#include "api/testing/api_client.h"
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

class StoreBackendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::DbOptions options;
    options.data_dir = dir_.path();
    options.clock = &clock_;
    options.background_thread = false;
    absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
    ASSERT_TRUE(db.ok()) << db.status();
    writer_ = *std::move(db);
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

    absl::StatusOr<std::unique_ptr<store::Db>> follower = OpenFollower(dir_.path());
    ASSERT_TRUE(follower.ok()) << follower.status();
    follower_ = *std::move(follower);
    logs_ = std::make_unique<StoreLogsBackend>(*follower_);
    jobs_ = std::make_unique<StoreJobsBackend>(*follower_);
    api_ = std::make_unique<api::Api>(api::ApiOptions{},
                                      api::Backends{nullptr, nullptr, logs_.get(), jobs_.get()},
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
  std::unique_ptr<StoreLogsBackend> logs_;
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
  j = Call(api::testing::CloudWatchJson("ListMetrics", "{}"), 400);
  EXPECT_EQ(j["__type"], "UnknownOperationException");
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("no metric store"));
}

}  // namespace
}  // namespace trainwatch::app
