#pragma once
// Training-job reads with SageMaker semantics: DescribeTrainingJob's lookup
// (names compare ignoring case) and ListTrainingJobs (spec/aws-api.md §7.4):
// filters, sort, and pagination tokens. All filters apply before paging
// (trainwatch deviates from AWS here, see the spec), so pages are full unless
// last.
//
// Errors: InvalidArgument with ErrorKind kValidationException
// (query/errors.h) for a bad MaxResults or token.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "store/read_view.h"

namespace trainwatch::query {

enum class JobSortBy { kCreationTime, kName, kStatus };

struct ListJobsRequest {
  std::string name_contains = {};  // case-insensitive substring
  std::optional<model::JobStatus> status = {};
  // Strictly after / before (TW).
  std::optional<int64_t> creation_after_ms = {};
  std::optional<int64_t> creation_before_ms = {};
  std::optional<int64_t> modified_after_ms = {};
  std::optional<int64_t> modified_before_ms = {};
  JobSortBy sort_by = JobSortBy::kCreationTime;
  bool descending = false;
  std::optional<int> max_results = {};  // 1-100, default 10
  std::string next_token = {};
};

struct ListJobsResponse {
  std::vector<model::JobRecord> jobs;
  std::string next_token;  // empty on the last page
};

absl::StatusOr<ListJobsResponse> ListJobs(const store::ReadView& view,
                                          const ListJobsRequest& request);

}  // namespace trainwatch::query
