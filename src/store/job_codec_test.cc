// store/job_codec: the bytes of a stored job record. Data folders written by
// earlier versions must keep decoding, so the encoding is pinned here byte by
// byte, and records as older versions wrote them (fields missing) decode to
// the JobRecord defaults.
#include "store/job_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/testing/full_job.h"

namespace trainwatch::store {
namespace {

using ::testing::HasSubstr;

using model::testing::FullJob;

TEST(JobCodec, StoredBytesArePinned) {
  EXPECT_EQ(
      EncodeJob(FullJob()),
      R"json({"arn":"arn:aws:sagemaker:us-east-1:000000000000:training-job/mnist-7",)json"
      R"json("command":["python3","train.py","--lr=0.1"],"creation_ms":1736942400000,)json"
      R"json("environment":{"CUDA_VISIBLE_DEVICES":"0"},"exit_code":1,"exit_signal":9,)json"
      R"json("failure_reason":"AlgorithmError: exit 1",)json"
      R"json("final_metrics":[{"name":"train:loss","t_ms":1736942459000,"value":0.1},)json"
      R"json({"name":"epoch","t_ms":1736942459500,"value":3.0}],"host_index":2,)json"
      R"json("hyperparameters":{"epochs":"10","lr":"0.1"},"last_modified_ms":1736942460500,)json"
      R"json("log_stream":"mnist-7/algo-2-1736942400","max_runtime_s":3600,)json"
      R"json("metric_definitions":[{"name":"train:loss","regex":"loss=([0-9.]+)"}],)json"
      R"json("name":"mnist-7","profiling_interval_ms":100,)json"
      R"json("request_json":"{\"TrainingJobName\":\"mnist-7\"}","runner":{"boot_id":"1f2e",)json"
      R"json("hostname":"gpu-3","pid":4242,"start_ticks":123456789012},)json"
      R"json("secondary_status":"Failed","status":"Failed",)json"
      R"json("stop_requested_ms":1736942450000,"training_end_ms":1736942460000,)json"
      R"json("training_start_ms":1736942401000,"transitions":[{"end_ms":1736942401000,)json"
      R"json("message":"Starting","start_ms":1736942400000,"status":"Starting"},)json"
      R"json({"end_ms":1736942460000,"message":"caf)json"
      "\xC3\xA9"
      R"json( \"quoted\"","start_ms":1736942460000,"status":"Failed"}],"v":1,)json"
      R"json("working_dir":"/w"})json");
  model::JobRecord minimal;
  minimal.name = "a";
  EXPECT_EQ(
      EncodeJob(minimal),
      R"json({"arn":"","command":[],"creation_ms":0,"environment":{},"failure_reason":"",)json"
      R"json("final_metrics":[],"host_index":1,"hyperparameters":{},"last_modified_ms":0,)json"
      R"json("log_stream":"","max_runtime_s":86400,"metric_definitions":[],"name":"a",)json"
      R"json("profiling_interval_ms":1000,"request_json":"","runner":{"boot_id":"",)json"
      R"json("hostname":"","pid":0,"start_ticks":0},"secondary_status":"Starting",)json"
      R"json("status":"InProgress","transitions":[],"v":1,"working_dir":""})json");
  // A command line is bytes: invalid UTF-8 is replaced, not refused.
  minimal.command = {"\xff"};
  EXPECT_THAT(EncodeJob(minimal), HasSubstr("\"command\":[\"\xEF\xBF\xBD\"]"));
}

TEST(JobCodec, RoundTripsEveryStoredField) {
  absl::StatusOr<model::JobRecord> back = DecodeJob(EncodeJob(FullJob()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, FullJob());
  // Only one host's record is stored: the merged view's hosts are not.
  model::JobRecord merged = FullJob();
  merged.hosts = {FullJob()};
  EXPECT_EQ(EncodeJob(merged), EncodeJob(FullJob()));
}

TEST(JobCodec, RecordsOfOlderVersionsKeepTheDefaults) {
  absl::StatusOr<model::JobRecord> old = DecodeJob(R"({"v":1,"name":"old","creation_ms":5})");
  ASSERT_TRUE(old.ok()) << old.status();
  model::JobRecord want;
  want.name = "old";
  want.creation_ms = 5;
  EXPECT_EQ(*old, want);
  // null is absent; a status this version does not know keeps the default.
  old = DecodeJob(R"({"name":"n","status":"Paused","training_start_ms":null,"arn":null,)"
                  R"("final_metrics":[{"name":"m","value":null,"t_ms":1}],"runner":7})");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->status, model::JobStatus::kInProgress);
  EXPECT_EQ(old->training_start_ms, std::nullopt);
  ASSERT_EQ(old->final_metrics.size(), 1u);
  EXPECT_EQ(old->final_metrics[0], (model::FinalMetric{"m", 0, 1}));
}

TEST(JobCodec, DamagedRecordsAreDataLoss) {
  for (std::string_view bytes : {"", "not json", "[1]", R"({"arn":"x"})"}) {
    absl::StatusOr<model::JobRecord> job = DecodeJob(bytes);
    ASSERT_FALSE(job.ok()) << bytes;
    EXPECT_TRUE(absl::IsDataLoss(job.status())) << job.status();
    EXPECT_THAT(job.status().message(), HasSubstr("stored job record is not valid JSON")) << bytes;
  }
  absl::StatusOr<model::JobRecord> job = DecodeJob(R"({"name":"n","creation_ms":"soon"})");
  ASSERT_FALSE(job.ok());
  EXPECT_TRUE(absl::IsDataLoss(job.status())) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("stored job record has a field of the wrong type"));
}

}  // namespace
}  // namespace trainwatch::store
