#pragma once
// Listing training jobs (spec/aws-api.md §7.4), the one way for every
// reader: SageMaker's ListTrainingJobs, the native API's job list and
// `trainwatch jobs`: filters, sort, and a page with its cursor
// (query/cursor.h). All filters apply before paging (trainwatch deviates
// from AWS here, see the spec), so pages are full unless last.
//
// Errors: InvalidArgument with ErrorKind kInvalidValue
// (query/errors.h) for a bad max_results, kInvalidCursor for a token that
// is not a cursor of the same listing.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "query/reader.h"

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
  std::optional<int> max_results = {};  // 1-100, default 10 (see unbounded)
  bool unbounded = false;               // every matching job in one page
  // SageMaker's ListTrainingJobs: a page is the next max_results jobs in sort
  // order, filtered afterwards, so it may hold fewer (even none) and still
  // carry a next_token. Otherwise a page holds max_results matching jobs.
  bool filter_after_paging = false;
  std::string next_token = {};
};

struct ListJobsResponse {
  std::vector<model::JobRecord> jobs;
  std::string next_token;  // empty on the last page
};

// `jobs`: every job (JobsReader::ListJobs; reconciled with their runners by
// the caller where that matters).
absl::StatusOr<ListJobsResponse> ListJobs(std::vector<model::JobRecord> jobs,
                                          const ListJobsRequest& request);

// The series of a job, as MetricsReader::ListSeries queries, each with its
// group: "algorithm" (dimension TrainingJobName=NAME: what the job's log
// and client produce) then "system" for each host (Host=NAME/algo-N: what
// the profiler samples). A series may match more than one (list it once).
std::vector<std::pair<std::string, ListMetricsQuery>> JobSeriesQueries(const model::JobRecord& job);

}  // namespace trainwatch::query
