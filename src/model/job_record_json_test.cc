#include "model/job_record_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace trainwatch::model {
namespace {

using ::testing::HasSubstr;

JobRecord Job() {
  JobRecord j;
  j.name = "ddp-3";
  j.arn = TrainingJobArn(j.name);
  j.status = JobStatus::kCompleted;
  j.secondary_status = SecondaryStatus::kCompleted;
  j.creation_ms = 1000;
  j.training_start_ms = 1500;
  j.training_end_ms = 9000;
  j.last_modified_ms = 9001;
  j.transitions = {{SecondaryStatus::kTraining, 1500, 9000, "Training"},
                   {SecondaryStatus::kCompleted, 9000, 9000, ""}};
  j.final_metrics = {{"loss", 0.25, 8999}};
  j.metric_definitions = {{"loss", "loss=([0-9.]+)"}};
  j.command = {"python3", "train.py"};
  j.hyperparameters = {{"lr", "0.1"}};
  j.host_index = 2;
  j.exit_code = 0;
  j.runner = {"gpu-b", "boot", 4242, 99};
  return j;
}

// One list of members: each form's reader reads what the other's writer wrote.
TEST(JobRecordJson, EachFormReadsTheOther) {
  absl::StatusOr<JobRecord> from_stored =
      JobRecordFromWireJson(nlohmann::json::parse(EncodeStoredJobRecord(Job())));
  ASSERT_TRUE(from_stored.ok()) << from_stored.status();
  EXPECT_EQ(*from_stored, Job());
  absl::StatusOr<JobRecord> from_wire = DecodeStoredJobRecord(WireJobRecordJson(Job()).dump());
  ASSERT_TRUE(from_wire.ok()) << from_wire.status();
  EXPECT_EQ(*from_wire, Job());
}

TEST(JobRecordJson, TheFormsDifferOnlyInWhatTheyAdd) {
  nlohmann::json stored = nlohmann::json::parse(EncodeStoredJobRecord(Job()));
  nlohmann::json wire = WireJobRecordJson(Job());
  EXPECT_EQ(stored["v"], 1);
  EXPECT_EQ(stored["failure_reason"], "");
  EXPECT_EQ(stored["request_json"], "");
  EXPECT_EQ(wire["host"], "ddp-3/algo-2");
  stored.erase("v");
  stored.erase("failure_reason");
  stored.erase("request_json");
  wire.erase("host");
  EXPECT_EQ(stored, wire);

  // Hosts travel on the wire only: a stored record is one host's.
  JobRecord merged = Job();
  merged.hosts = {Job()};
  EXPECT_EQ(EncodeStoredJobRecord(merged), EncodeStoredJobRecord(Job()));
  EXPECT_EQ(WireJobRecordJson(merged)["hosts"].size(), 1u);
}

// The stored reader keeps the defaults for what an older version did not
// write or this version does not know; the wire's refuses it, naming it.
TEST(JobRecordJson, StoredIsLenientWireIsStrict) {
  const std::string old = R"({"name":"n","status":"Paused","creation_ms":5,"transitions":[7]})";
  absl::StatusOr<JobRecord> stored = DecodeStoredJobRecord(old);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->status, JobStatus::kInProgress);
  EXPECT_EQ(stored->transitions, std::vector<StatusTransition>{StatusTransition{}});
  EXPECT_EQ(stored->max_runtime_s, 86400);

  absl::StatusOr<JobRecord> wire = JobRecordFromWireJson(nlohmann::json::parse(old));
  ASSERT_FALSE(wire.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(wire.status()));
  EXPECT_THAT(wire.status().message(), HasSubstr("job: secondary_status is missing"));

  absl::StatusOr<JobRecord> mistyped = DecodeStoredJobRecord(R"({"name":"n","command":"ls"})");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_TRUE(absl::IsDataLoss(mistyped.status()));
}

}  // namespace
}  // namespace trainwatch::model

namespace trainwatch::model {
namespace {

TEST(JobRecordJson, RulesRoundTripInBothFormsNaNIncluded) {
  JobRecord j;
  j.name = "nan-1";
  j.creation_ms = 1;
  j.last_modified_ms = 2;
  j.rule_configurations = {{"loss-nan", "ExplodingTensor", {{"only_nan", "True"}}, {"StopTraining"}}};
  j.rules_profile = "sagemaker_compat";
  j.step_metric = "step";
  RuleStatus status;
  status.configuration_name = "loss-nan";
  status.rule = "ExplodingTensor";
  status.family = "debug";
  status.status = RuleStatusKind::kIssuesFound;
  status.details = "train:loss was NaN at step 7.";
  status.last_modified_ms = 5;
  status.findings_total = 3;
  status.findings = {{"loss-nan", "nan", "train:loss", 7, 4, std::nan(""), 0, "train:loss was NaN",
                      "lower the learning rate", FindingSeverity::kIssue},
                     {"loss-nan", "no_data", "job", -1, 5, -INFINITY, INFINITY, "m", "r",
                      FindingSeverity::kWarning}};
  j.rule_statuses = {status};
  absl::StatusOr<JobRecord> stored = DecodeStoredJobRecord(EncodeStoredJobRecord(j));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, j);
  absl::StatusOr<JobRecord> wire = JobRecordFromWireJson(nlohmann::json::parse(WireJobRecordJson(j).dump()));
  ASSERT_TRUE(wire.ok()) << wire.status();
  EXPECT_EQ(*wire, j);
}

TEST(JobRecordJson, ARecordWithoutRulesHasNoRuleMembers) {
  JobRecord j;
  j.name = "plain";
  const std::string bytes = EncodeStoredJobRecord(j);
  EXPECT_EQ(bytes.find("rule"), std::string::npos) << bytes;
}

}  // namespace
}  // namespace trainwatch::model
