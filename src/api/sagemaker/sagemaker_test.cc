// SageMaker training-job operations through the Api and the fake backend.
#include "api/sagemaker/sagemaker.h"

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/testing/api_client.h"
#include "api/testing/fake_backend.h"
#include "api/testing/golden.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using testing::SageMakerJson;

constexpr int64_t kNow = 1736942700000;

nlohmann::json MinimalJob(const std::string& name) {
  return {{"TrainingJobName", name},
          {"AlgorithmSpecification",
           {{"TrainingImage", "local/trainer:latest"},
            {"TrainingInputMode", "File"},
            {"ContainerEntrypoint", {"python3", "train.py"}},
            {"MetricDefinitions", {{{"Name", "train:loss"}, {"Regex", "loss=([0-9.]+)"}}}}}},
          {"RoleArn", "arn:aws:iam::000000000000:role/TrainWatchLocal"},
          {"OutputDataConfig", {{"S3OutputPath", "file:///srv/trainwatch/out/"}}},
          {"ResourceConfig", {{"InstanceType", "local"}, {"InstanceCount", 1}, {"VolumeSizeInGB", 1}}},
          {"StoppingCondition", nlohmann::json::object()}};
}

class SageMakerTest : public ::testing::Test {
 protected:
  SageMakerTest() : clock_(kNow), fake_(clock_), api_(ApiOptions{}, fake_.backends(), clock_) {}

  nlohmann::json Call(std::string_view op, const nlohmann::json& body, int status = 200) {
    HttpResponse r = api_.Handle(SageMakerJson(op, body.dump()));
    EXPECT_EQ(r.status, status) << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  Api api_;
};

TEST_F(SageMakerTest, CreateDescribeStop) {
  nlohmann::json j = Call("CreateTrainingJob", MinimalJob("Job-A1"));
  EXPECT_EQ(j["TrainingJobArn"], "arn:aws:sagemaker:us-east-1:000000000000:training-job/job-a1");
  j = Call("CreateTrainingJob", MinimalJob("job-a1"), 400);
  EXPECT_EQ(j["__type"], "ResourceInUse");
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("a training job with this name already exists "
                        "(arn:aws:sagemaker:us-east-1:000000000000:training-job/job-a1)"));

  j = Call("DescribeTrainingJob", {{"TrainingJobName", "Job-A1"}});
  EXPECT_EQ(j["TrainingJobStatus"], "InProgress");
  EXPECT_EQ(j["SecondaryStatus"], "Starting");
  EXPECT_EQ(j["StoppingCondition"]["MaxRuntimeInSeconds"], 86400);  // default filled
  EXPECT_EQ(j["EnableManagedSpotTraining"], false);
  EXPECT_EQ(j["ModelArtifacts"]["S3ModelArtifacts"], "file:///srv/trainwatch/out/Job-A1/output/model.tar.gz");
  EXPECT_EQ(j["ProfilingStatus"], "Disabled");
  EXPECT_EQ(j["CreationTime"], kNow / 1000.0);
  EXPECT_FALSE(j.contains("FinalMetricDataList"));
  EXPECT_FALSE(j.contains("Tags"));

  clock_.AdvanceMs(5000);
  EXPECT_EQ(Call("StopTrainingJob", {{"TrainingJobName", "Job-A1"}}), nlohmann::json::object());
  j = Call("DescribeTrainingJob", {{"TrainingJobName", "Job-A1"}});
  EXPECT_EQ(j["TrainingJobStatus"], "Stopping");
  ASSERT_EQ(j["SecondaryStatusTransitions"].size(), 2u);
  EXPECT_EQ(j["SecondaryStatusTransitions"][0]["EndTime"], (kNow + 5000) / 1000.0);
  j = Call("StopTrainingJob", {{"TrainingJobName", "Job-A1"}}, 400);
  EXPECT_EQ(j["__type"], "ValidationException");
  EXPECT_EQ(j["message"], "The request was rejected because the training job is in status Stopping.");

  for (const char* op : {"DescribeTrainingJob", "StopTrainingJob"}) {
    j = Call(op, {{"TrainingJobName", "no-such-job"}}, 400);
    EXPECT_EQ(j["__type"], "ValidationException");
    EXPECT_EQ(j["message"], "Requested resource not found.");
  }
}

TEST_F(SageMakerTest, ValidationUsesAwsGenericFormat) {
  nlohmann::json job = MinimalJob("my_job");
  job.erase("RoleArn");
  job["ProfilerConfig"] = {{"ProfilingIntervalInMilliseconds", 250}};
  nlohmann::json j = Call("CreateTrainingJob", job, 400);
  EXPECT_EQ(j["__type"], "ValidationException");
  EXPECT_EQ(j["message"],
            "3 validation errors detected: Value 'my_job' at 'trainingJobName' failed to satisfy "
            "constraint: Member must satisfy regular expression pattern: "
            "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; Value null at 'roleArn' failed to satisfy "
            "constraint: Member must not be null; Value '250' at "
            "'profilerConfig.profilingIntervalInMilliseconds' failed to satisfy constraint: "
            "Member must satisfy enum value set: [100, 200, 500, 1000, 5000, 60000]");
  job = MinimalJob("ok");
  job["AlgorithmSpecification"]["MetricDefinitions"].push_back({{"Name", "x"}});
  job["ResourceConfig"]["InstanceType"] = "m5.large";
  job["HyperParameters"] = {{"lr", std::string(2501, '1')}};
  j = Call("CreateTrainingJob", job, 400);
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("Value null at 'algorithmSpecification.metricDefinitions.2.member.regex' "
                        "failed to satisfy constraint: Member must not be null"));
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("at 'resourceConfig.instanceType'"));
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("at 'hyperParameters.value' failed to satisfy constraint: Member must have "
                        "length less than or equal to 2500"));
  job = MinimalJob("ok");
  job["ResourceConfig"]["InstanceCount"] = 2;
  j = Call("CreateTrainingJob", job, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("InstanceCount 2 is not supported"));
  job = MinimalJob("ok");
  job.erase("StoppingCondition");
  j = Call("CreateTrainingJob", job, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("Value null at 'stoppingCondition'"));
}

TEST_F(SageMakerTest, ListFiltersSortsAndPages) {
  for (int i = 0; i < 25; ++i) {
    model::JobRecord job;
    job.name = absl::StrFormat("run-%02d", i);
    job.creation_ms = kNow - (i * 37 % 25) * 1000;
    job.last_modified_ms = job.creation_ms;
    job.status = i % 3 == 0 ? model::JobStatus::kCompleted : model::JobStatus::kInProgress;
    job.secondary_status =
        i % 3 == 0 ? model::SecondaryStatus::kCompleted : model::SecondaryStatus::kTraining;
    if (i % 3 == 0) job.training_end_ms = job.creation_ms + 500;
    fake_.SetJob(job);
  }
  fake_.SetJob([] {
    model::JobRecord other;
    other.name = "other";
    other.creation_ms = kNow;
    other.last_modified_ms = kNow;
    return other;
  }());
  std::vector<std::string> names;
  std::optional<std::string> token;
  int pages = 0;
  do {
    nlohmann::json r = {{"NameContains", "RUN"}, {"SortBy", "CreationTime"}, {"SortOrder", "Descending"},
                        {"MaxResults", 4}};
    if (token) r["NextToken"] = *token;
    nlohmann::json j = Call("ListTrainingJobs", r);
    for (const auto& s : j["TrainingJobSummaries"]) names.push_back(s["TrainingJobName"].get<std::string>());
    token.reset();
    if (j.contains("NextToken")) token = j["NextToken"].get<std::string>();
    ++pages;
  } while (token && pages < 20);
  EXPECT_EQ(pages, 7);
  ASSERT_EQ(names.size(), 25u);
  nlohmann::json j = Call("ListTrainingJobs", {{"StatusEquals", "Completed"}, {"SortBy", "Name"},
                                               {"MaxResults", 100}});
  ASSERT_EQ(j["TrainingJobSummaries"].size(), 9u);
  EXPECT_EQ(j["TrainingJobSummaries"][0]["TrainingJobName"], "run-00");
  EXPECT_TRUE(j["TrainingJobSummaries"][0].contains("TrainingEndTime"));
  EXPECT_FALSE(j.contains("NextToken"));
  // SageMaker takes MaxResults jobs, then filters them: a page may hold
  // fewer, even none, and still carry NextToken.
  j = Call("ListTrainingJobs", {{"StatusEquals", "Completed"}, {"SortBy", "Name"}, {"MaxResults", 1}});
  EXPECT_TRUE(j["TrainingJobSummaries"].empty()) << "\"other\" comes first and is in progress";
  ASSERT_TRUE(j.contains("NextToken"));
  j = Call("ListTrainingJobs", {{"StatusEquals", "Completed"}, {"SortBy", "Name"}, {"MaxResults", 2},
                                {"NextToken", j["NextToken"]}});
  ASSERT_EQ(j["TrainingJobSummaries"].size(), 1u) << "run-01 is in progress";
  EXPECT_EQ(j["TrainingJobSummaries"][0]["TrainingJobName"], "run-00");
  EXPECT_TRUE(j.contains("NextToken"));
  j = Call("ListTrainingJobs", {{"CreationTimeAfter", (kNow - 3000) / 1000}});
  for (const auto& s : j["TrainingJobSummaries"]) {
    EXPECT_GT(s["CreationTime"].get<double>(), (kNow - 3000) / 1000.0);
  }
  j = Call("ListTrainingJobs", {{"WarmPoolStatusEquals", "Available"}});
  EXPECT_TRUE(j["TrainingJobSummaries"].empty());
  j = Call("ListTrainingJobs", {{"MaxResults", 101}}, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("less than or equal to 100"));
  j = Call("ListTrainingJobs", {{"NextToken", "garbage"}}, 400);
  EXPECT_EQ(j["__type"], "ValidationException");
}

TEST(DescribeJson, CompletedJobGolden) {
  model::JobRecord job;
  job.name = "tw-demo-job-001";
  job.status = model::JobStatus::kCompleted;
  job.secondary_status = model::SecondaryStatus::kCompleted;
  job.creation_ms = 1736942400000;
  job.training_start_ms = 1736942430000;
  job.training_end_ms = 1736943000000;
  job.last_modified_ms = 1736943000000;
  job.transitions = {
      {model::SecondaryStatus::kStarting, 1736942400000, 1736942430000,
       "Preparing the instances for training"},
      {model::SecondaryStatus::kTraining, 1736942430000, 1736942980000,
       "Training image download completed. Training in progress."},
      {model::SecondaryStatus::kCompleted, 1736943000000, 1736943000000, "Training job completed"}};
  job.final_metrics = {{"train:loss", 0.41, 1736942970000}};
  job.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
  job.hyperparameters = {{"epochs", "3"}};
  testing::ExpectGolden("sagemaker/describe_run_job.json",
                        sagemaker::DescribeJson(job, sagemaker::Context{}) + "\n");
}

}  // namespace
}  // namespace trainwatch::api
