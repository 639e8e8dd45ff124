#pragma once
// A job record with every member set (unusual characters included), for the
// tests that pin how job records are written: the store's bytes
// (store/job_codec_test.cc) and the wire's (api/native/agent_codec_test.cc).

#include "model/job_record.h"

namespace trainwatch::model::testing {

inline JobRecord FullJob() {
  JobRecord j;
  j.name = "mnist-7";
  j.arn = TrainingJobArn(j.name);
  j.status = JobStatus::kFailed;
  j.secondary_status = SecondaryStatus::kFailed;
  j.failure_reason = "AlgorithmError: exit 1";
  j.creation_ms = 1736942400000;
  j.training_start_ms = 1736942401000;
  j.training_end_ms = 1736942460000;
  j.last_modified_ms = 1736942460500;
  j.transitions = {
      {SecondaryStatus::kStarting, 1736942400000, 1736942401000, "Starting"},
      {SecondaryStatus::kFailed, 1736942460000, 1736942460000, "caf\xc3\xa9 \"quoted\""}};
  j.final_metrics = {{"train:loss", 0.1, 1736942459000}, {"epoch", 3, 1736942459500}};
  j.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
  j.max_runtime_s = 3600;
  j.command = {"python3", "train.py", "--lr=0.1"};
  j.working_dir = "/w";
  j.hyperparameters = {{"lr", "0.1"}, {"epochs", "10"}};
  j.environment = {{"CUDA_VISIBLE_DEVICES", "0"}};
  j.profiling_interval_ms = 100;
  j.host_index = 2;
  j.log_stream = "mnist-7/algo-2-1736942400";
  j.exit_code = 1;
  j.exit_signal = 9;
  j.runner = {"gpu-3", "1f2e", 4242, 123456789012};
  j.request_json = R"({"TrainingJobName":"mnist-7"})";
  j.stop_requested_ms = 1736942450000;
  return j;
}

}  // namespace trainwatch::model::testing
