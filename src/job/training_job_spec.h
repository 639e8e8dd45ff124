#pragma once
// CreateTrainingJob's request as the job layer runs it (job/local_jobs.h).
// The api decodes and validates it (api/sagemaker) and calls it
// api::TrainingJobSpec (api/backend.h).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/job_record.h"

namespace trainwatch::job {

// A validated CreateTrainingJob request (spec §7.2), in trainwatch's terms.
struct TrainingJobSpec {
  struct Channel {
    std::string name;
    std::string uri;  // S3Uri (s3:// or file://)
    std::string data_type;
    std::string content_type;
    std::string compression_type;
  };
  struct Rule {
    std::string configuration_name;
    std::string rule_to_invoke;  // RuleParameters["rule_to_invoke"], may be empty
    std::map<std::string, std::string> parameters;
    bool profiler = false;  // ProfilerRuleConfigurations (else DebugRuleConfigurations)
  };

  std::string name;
  std::string training_image;
  std::string input_mode = "File";
  std::vector<model::MetricDefinition> metric_definitions;
  std::vector<std::string> entrypoint;  // ContainerEntrypoint
  std::vector<std::string> arguments;   // ContainerArguments
  std::map<std::string, std::string> hyperparameters;
  std::map<std::string, std::string> environment;
  std::string role_arn;
  std::vector<Channel> channels;
  std::string output_path;  // OutputDataConfig.S3OutputPath
  std::string instance_type;
  int64_t instance_count = 1;
  int64_t volume_size_gb = 1;
  int64_t max_runtime_s = 86400;
  int64_t profiling_interval_ms = 0;  // 0 = profiling off
  std::vector<Rule> rules;
  // The rules the job runs: `rules` checked, or the default set when there
  // are none (api/sagemaker fills it; rules/config.h).
  std::vector<model::RuleConfiguration> rule_configurations;
  std::string step_metric;
  std::vector<std::pair<std::string, std::string>> tags;
  // The request as received with SageMaker's defaults filled in; what
  // DescribeTrainingJob echoes (store it in JobRecord::request_json).
  std::string request_json;
  int64_t creation_ms = 0;
};

}  // namespace trainwatch::job
