#pragma once
// How a model::JobRecord is stored: JSON, the stored form of
// model/job_record_json.h, under the key "j" + lower-cased name in the jobs
// column family, so names are unique
// case-insensitively as SageMaker's lower-cased ARNs require. A job on several
// hosts has one record per host: host 1 under the job's key, host n > 1 under
// the job's key + "\x01" + n (below '-' and every name character, so a job's
// hosts sort right after it and before any longer name).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::store {

std::string JobKey(std::string_view name);
std::string JobHostKey(std::string_view name, int host_index);
// The JobKey part of a JobHostKey.
std::string_view JobKeyOfHostKey(std::string_view host_key);
inline constexpr char kJobHostSeparator = '\x01';
// model::EncodeStoredJobRecord and model::DecodeStoredJobRecord.
std::string EncodeJob(const model::JobRecord& job);
// DataLoss quoting the bytes when they are not a job record.
absl::StatusOr<model::JobRecord> DecodeJob(std::string_view bytes);

// CloudWatch alarms (model/alarm.h) live in the same column family under "a"
// + name (alarm names are case-sensitive), as model::EncodeAlarmRecord.
std::string AlarmKey(std::string_view name);
inline constexpr std::string_view kAlarmKeyPrefix = "a";

}  // namespace trainwatch::store
