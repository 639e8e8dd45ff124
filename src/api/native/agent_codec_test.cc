// The job record on the wire (GET /api/v1/jobs/NAME, agents' create_job and
// update_job batches): its bytes are pinned here, since agents and servers of
// different builds read each other's.
#include "api/native/agent_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/testing/full_job.h"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;

using model::testing::FullJob;

model::JobRecord MinimalJob() {
  model::JobRecord j;
  j.name = "a";
  return j;
}

TEST(JobRecordWire, BytesArePinned) {
  EXPECT_EQ(
      JobRecordJson(FullJob()).dump(),
      R"json({"name":"mnist-7",)json"
      R"json("arn":"arn:aws:sagemaker:us-east-1:000000000000:training-job/mnist-7",)json"
      R"json("status":"Failed","secondary_status":"Failed",)json"
      R"json("failure_reason":"AlgorithmError: exit 1","creation_ms":1736942400000,)json"
      R"json("training_start_ms":1736942401000,"training_end_ms":1736942460000,)json"
      R"json("last_modified_ms":1736942460500,"transitions":[{"status":"Starting",)json"
      R"json("start_ms":1736942400000,"end_ms":1736942401000,"message":"Starting"},)json"
      R"json({"status":"Failed","start_ms":1736942460000,"end_ms":1736942460000,)json"
      R"json("message":"caf)json"
      "\xC3\xA9"
      R"json( \"quoted\""}],"final_metrics":[{"name":"train:loss","value":0.1,)json"
      R"json("t_ms":1736942459000},{"name":"epoch","value":3.0,"t_ms":1736942459500}],)json"
      R"json("metric_definitions":[{"name":"train:loss","regex":"loss=([0-9.]+)"}],)json"
      R"json("max_runtime_s":3600,"command":["python3","train.py","--lr=0.1"],)json"
      R"json("working_dir":"/w","hyperparameters":{"epochs":"10","lr":"0.1"},)json"
      R"json("environment":{"CUDA_VISIBLE_DEVICES":"0"},"profiling_interval_ms":100,)json"
      R"json("host_index":2,"host":"mnist-7/algo-2",)json"
      R"json("log_stream":"mnist-7/algo-2-1736942400","exit_code":1,"exit_signal":9,)json"
      R"json("runner":{"hostname":"gpu-3","boot_id":"1f2e","pid":4242,)json"
      R"json("start_ticks":123456789012},"request_json":"{\"TrainingJobName\":\"mnist-7\"}",)json"
      R"json("stop_requested_ms":1736942450000})json");
  EXPECT_EQ(
      JobRecordJson(MinimalJob()).dump(),
      R"json({"name":"a","arn":"","status":"InProgress","secondary_status":"Starting",)json"
      R"json("creation_ms":0,"last_modified_ms":0,"transitions":[],"final_metrics":[],)json"
      R"json("metric_definitions":[],"max_runtime_s":86400,"command":[],"working_dir":"",)json"
      R"json("hyperparameters":{},"environment":{},"profiling_interval_ms":1000,)json"
      R"json("host_index":1,"host":"a/algo-1","log_stream":"","runner":{"hostname":"",)json"
      R"json("boot_id":"","pid":0,"start_ticks":0}})json");
  model::JobRecord merged = MinimalJob();
  model::JobRecord second = MinimalJob();
  second.host_index = 2;
  merged.hosts = {MinimalJob(), second};
  EXPECT_EQ(
      JobRecordJson(merged).dump(),
      R"json({"name":"a","arn":"","status":"InProgress","secondary_status":"Starting",)json"
      R"json("creation_ms":0,"last_modified_ms":0,"transitions":[],"final_metrics":[],)json"
      R"json("metric_definitions":[],"max_runtime_s":86400,"command":[],"working_dir":"",)json"
      R"json("hyperparameters":{},"environment":{},"profiling_interval_ms":1000,)json"
      R"json("host_index":1,"host":"a/algo-1","log_stream":"","runner":{"hostname":"",)json"
      R"json("boot_id":"","pid":0,"start_ticks":0},"hosts":[{"name":"a","arn":"",)json"
      R"json("status":"InProgress","secondary_status":"Starting","creation_ms":0,)json"
      R"json("last_modified_ms":0,"transitions":[],"final_metrics":[],)json"
      R"json("metric_definitions":[],"max_runtime_s":86400,"command":[],"working_dir":"",)json"
      R"json("hyperparameters":{},"environment":{},"profiling_interval_ms":1000,)json"
      R"json("host_index":1,"host":"a/algo-1","log_stream":"","runner":{"hostname":"",)json"
      R"json("boot_id":"","pid":0,"start_ticks":0}},{"name":"a","arn":"",)json"
      R"json("status":"InProgress","secondary_status":"Starting","creation_ms":0,)json"
      R"json("last_modified_ms":0,"transitions":[],"final_metrics":[],)json"
      R"json("metric_definitions":[],"max_runtime_s":86400,"command":[],"working_dir":"",)json"
      R"json("hyperparameters":{},"environment":{},"profiling_interval_ms":1000,)json"
      R"json("host_index":2,"host":"a/algo-2","log_stream":"","runner":{"hostname":"",)json"
      R"json("boot_id":"","pid":0,"start_ticks":0}}]})json");
  AgentBatch create;
  create.agent = "a";
  create.seq = 1;
  create.kind = AgentBatch::Kind::kCreateJob;
  create.job = MinimalJob();
  create.job.command = {"\xff"};  // invalid UTF-8 is replaced
  EXPECT_EQ(
      EncodeAgentBatch(create),
      R"json({"agent":"a","seq":1,"kind":"create_job","job":{"name":"a","arn":"",)json"
      R"json("status":"InProgress","secondary_status":"Starting","creation_ms":0,)json"
      R"json("last_modified_ms":0,"transitions":[],"final_metrics":[],)json"
      R"json("metric_definitions":[],"max_runtime_s":86400,"command":[")json"
      "\xEF\xBF\xBD"
      R"json("],"working_dir":"","hyperparameters":{},"environment":{},)json"
      R"json("profiling_interval_ms":1000,"host_index":1,"host":"a/algo-1","log_stream":"",)json"
      R"json("runner":{"hostname":"","boot_id":"","pid":0,"start_ticks":0}}})json");
}

TEST(JobRecordWire, DecodesWhatWasEncoded) {
  for (const model::JobRecord& job : {FullJob(), MinimalJob()}) {
    absl::StatusOr<model::JobRecord> back =
        JobRecordFromJson(nlohmann::json::parse(JobRecordJson(job).dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, job);
  }
  model::JobRecord merged = FullJob();
  merged.hosts = {FullJob(), MinimalJob()};
  absl::StatusOr<model::JobRecord> back =
      JobRecordFromJson(nlohmann::json::parse(JobRecordJson(merged).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, merged);
}

TEST(JobRecordWire, NamesTheMemberThatIsWrong) {
  const std::string good = JobRecordJson(MinimalJob()).dump();
  auto with = [&](std::string_view member, nlohmann::json value) {
    nlohmann::json j = nlohmann::json::parse(good);
    if (value.is_discarded()) {
      j.erase(std::string(member));
    } else {
      j[std::string(member)] = std::move(value);
    }
    return j;
  };
  const nlohmann::json gone(nlohmann::json::value_t::discarded);
  const struct {
    nlohmann::json j;
    std::string message;
  } bad[] = {
      {nlohmann::json::array(), "job: must be an object"},
      {with("name", gone), "job: name is missing"},
      {with("status", gone), "job: status is missing"},
      {with("status", "Paused"), "job: status \"Paused\" is not a job status"},
      {with("secondary_status", "Paused"), "secondary_status \"Paused\" is not one"},
      {with("creation_ms", 1.5), "job: creation_ms must be an integer"},
      {with("last_modified_ms", gone), "job: last_modified_ms is missing"},
      {with("failure_reason", 3), "job: failure_reason must be a string"},
      {with("hyperparameters", {{"lr", 1}}), "job: hyperparameters.lr must be a string"},
      {with("environment", 1), "job: environment must be an object of strings"},
      {with("transitions", {{{"start_ms", 1}}}), "job.transitions: status is missing"},
      {with("transitions", {{{"status", "Paused"}, {"start_ms", 1}}}),
       "job.transitions: unknown status \"Paused\""},
      {with("transitions", {1}), "job.transitions: items must be objects"},
      {with("final_metrics", {{{"name", "m"}, {"value", nullptr}, {"t_ms", 1}}}),
       "job.final_metrics: items must be {name, value, t_ms}"},
      {with("final_metrics", {{{"name", "m"}, {"value", 1}}}),
       "job.final_metrics: t_ms is missing"},
      {with("metric_definitions", {{{"name", "m"}}}), "job.metric_definitions: regex is missing"},
      {with("command", {1}), "job.command: items must be strings"},
      {with("runner", 1), "job.runner: must be an object"},
      {with("runner", {{"pid", "1"}}), "job.runner: pid must be an integer"},
      {with("exit_code", "1"), "job: exit_code must be an integer"},
      {with("hosts", {{{"hosts", nlohmann::json::array()}}}), "job.hosts: a host has no hosts"},
  };
  for (const auto& c : bad) {
    absl::StatusOr<model::JobRecord> job = JobRecordFromJson(c.j);
    ASSERT_FALSE(job.ok()) << c.j.dump();
    EXPECT_TRUE(absl::IsInvalidArgument(job.status())) << job.status();
    EXPECT_THAT(job.status().message(), HasSubstr(c.message)) << c.j.dump();
  }
  // Optional members may be absent or null.
  nlohmann::json lean = nlohmann::json::parse(good);
  for (const char* member :
       {"arn", "max_runtime_s", "working_dir", "hyperparameters", "environment",
        "profiling_interval_ms", "host_index", "log_stream", "runner", "transitions",
        "final_metrics", "metric_definitions", "command", "host"}) {
    lean.erase(member);
  }
  lean["exit_code"] = nullptr;
  absl::StatusOr<model::JobRecord> job = JobRecordFromJson(lean);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(*job, MinimalJob());
}

}  // namespace
}  // namespace trainwatch::api
