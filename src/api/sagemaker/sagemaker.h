#pragma once
// SageMaker training-job operations (spec/aws-api.md §7), AWS JSON 1.1:
// CreateTrainingJob, DescribeTrainingJob, ListTrainingJobs, StopTrainingJob.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/backend.h"
#include "api/input.h"

namespace trainwatch::api::sagemaker {

struct Context {
  int64_t now_ms = 0;
  std::string region = "us-east-1";
  std::string account_id = "000000000000";
};

// "Requested resource not found." (what AWS answers for an unknown job, §7.3).
inline constexpr std::string_view kJobNotFound = "Requested resource not found.";

// Runs `operation`; returns the JSON 1.1 body.
absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   const Context& context, const Backends& backends);

// CreateTrainingJob's validation (generic "N validation errors detected"
// format) and translation; request_json gets SageMaker's defaults filled in.
absl::StatusOr<TrainingJobSpec> DecodeCreateTrainingJob(const Node& input, const Context& context);

// arn:aws:sagemaker:{region}:{account}:training-job/{lower-cased name}
std::string JobArn(const Context& context, std::string_view name);

// DescribeTrainingJob's body for a record (exposed for golden tests).
std::string DescribeJson(const model::JobRecord& job, const Context& context);

}  // namespace trainwatch::api::sagemaker
