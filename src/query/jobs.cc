#include "query/jobs.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "query/cursor.h"
#include "query/errors.h"
#include "util/status_macros.h"

namespace trainwatch::query {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The sort key: the chosen field, then the lower-cased name (unique), so the
// order is total and a token can name a position in it.
struct SortKey {
  int64_t number = 0;    // creation time, or status ordinal
  std::string text;      // name when sorting by name, else empty
  std::string name;      // lower-cased name, the tie breaker
  friend bool operator<(const SortKey& a, const SortKey& b) {
    return std::tie(a.number, a.text, a.name) < std::tie(b.number, b.text, b.name);
  }
};

SortKey KeyOf(const model::JobRecord& job, JobSortBy by) {
  SortKey k;
  k.name = Lower(job.name);
  switch (by) {
    case JobSortBy::kCreationTime:
      k.number = job.creation_ms;
      break;
    case JobSortBy::kName:
      k.text = job.name;
      break;
    case JobSortBy::kStatus:
      // Alphabetical by the AWS spelling, as a user reading the list expects.
      k.text = std::string(model::JobStatusName(job.status));
      break;
  }
  return k;
}

// The parameters a listing's cursor is bound to.
CursorBinding Binding(const ListJobsRequest& r) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? *v : INT64_MIN; };
  return CursorBinding()
      .Add(Lower(r.name_contains))
      .Add(r.status ? model::JobStatusName(*r.status) : "")
      .Add(opt(r.creation_after_ms))
      .Add(opt(r.creation_before_ms))
      .Add(opt(r.modified_after_ms))
      .Add(opt(r.modified_before_ms))
      .Add(static_cast<int64_t>(r.sort_by))
      .Add(r.descending ? "desc" : "asc");
}

}  // namespace

absl::StatusOr<ListJobsResponse> ListJobs(std::vector<model::JobRecord> jobs,
                                          const ListJobsRequest& request) {
  int max_results = request.max_results.value_or(10);
  if (!request.unbounded && (max_results < 1 || max_results > 100)) {
    return MakeError(ErrorKind::kInvalidValue,
                     absl::StrFormat("1 validation error detected: Value '%d' at 'maxResults' "
                                     "failed to satisfy constraint: Member must have value %s",
                                     max_results,
                                     max_results < 1 ? "greater than or equal to 1"
                                                     : "less than or equal to 100"));
  }
  const CursorBinding binding = Binding(request);
  std::optional<SortKey> after;
  if (!request.next_token.empty()) {
    TW_ASSIGN_OR_RETURN(nlohmann::json cursor,
                        DecodeCursor(CursorKind::kJobs, binding, request.next_token));
    auto n = cursor.find("i"), t = cursor.find("s"), name = cursor.find("n");
    if (n == cursor.end() || t == cursor.end() || name == cursor.end() ||
        !n->is_number_integer() || !t->is_string() || !name->is_string()) {
      return MakeError(ErrorKind::kInvalidCursor, "it holds no position in a job listing");
    }
    after = SortKey{n->get<int64_t>(), t->get<std::string>(), name->get<std::string>()};
  }
  const std::string needle = Lower(request.name_contains);
  auto matches = [&](const model::JobRecord& job) {
    if (!needle.empty() && Lower(job.name).find(needle) == std::string::npos) return false;
    if (request.status && job.status != *request.status) return false;
    if (request.creation_after_ms && !(job.creation_ms > *request.creation_after_ms)) return false;
    if (request.creation_before_ms && !(job.creation_ms < *request.creation_before_ms)) {
      return false;
    }
    if (request.modified_after_ms && !(job.last_modified_ms > *request.modified_after_ms)) {
      return false;
    }
    return !request.modified_before_ms || job.last_modified_ms < *request.modified_before_ms;
  };
  // The jobs a page is cut from: the matching ones, or all of them when the
  // filters apply to the page afterwards.
  std::vector<std::pair<SortKey, model::JobRecord>> listed;
  for (model::JobRecord& job : jobs) {
    if (!request.filter_after_paging && !matches(job)) continue;
    SortKey k = KeyOf(job, request.sort_by);
    listed.emplace_back(std::move(k), std::move(job));
  }
  auto before = [&](const SortKey& a, const SortKey& b) {
    return request.descending ? b < a : a < b;
  };
  std::sort(listed.begin(), listed.end(),
            [&](const auto& a, const auto& b) { return before(a.first, b.first); });
  ListJobsResponse out;
  size_t i = 0;
  if (after) {
    while (i < listed.size() && !before(*after, listed[i].first)) ++i;
  }
  for (int taken = 0; i < listed.size() && (request.unbounded || taken < max_results);
       ++i, ++taken) {
    if (request.filter_after_paging && !matches(listed[i].second)) continue;
    out.jobs.push_back(std::move(listed[i].second));
  }
  if (i < listed.size()) {
    const SortKey& k = listed[i - 1].first;
    out.next_token =
        EncodeCursor(CursorKind::kJobs, binding, {{"i", k.number}, {"s", k.text}, {"n", k.name}});
  }
  return out;
}

std::vector<std::pair<std::string, ListMetricsQuery>> JobSeriesQueries(const model::JobRecord& job) {
  std::vector<std::pair<std::string, ListMetricsQuery>> queries;
  ListMetricsQuery by_job;
  by_job.dimensions.push_back({std::string(model::kTrainingJobNameDim), job.name});
  queries.emplace_back("algorithm", std::move(by_job));
  for (const model::JobRecord& host : model::HostRecords(job)) {
    ListMetricsQuery by_host;
    by_host.dimensions.push_back({"Host", host.HostName()});
    queries.emplace_back("system", std::move(by_host));
  }
  return queries;
}

}  // namespace trainwatch::query
