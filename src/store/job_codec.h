#pragma once
// How a model::JobRecord is stored: JSON (nlohmann) under the key
// "j" + lower-cased name in the jobs column family, so names are unique
// case-insensitively as SageMaker's lower-cased ARNs require.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::store {

std::string JobKey(std::string_view name);
std::string EncodeJob(const model::JobRecord& job);
// DataLoss naming the job key when the bytes are not a job record.
absl::StatusOr<model::JobRecord> DecodeJob(std::string_view bytes);

}  // namespace trainwatch::store
