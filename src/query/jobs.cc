#include "query/jobs.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
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

std::string EncodeToken(const SortKey& k) {
  std::string plain = absl::StrFormat("v1\n%d\n%s\n%s", k.number, k.text, k.name);
  std::string out;
  absl::WebSafeBase64Escape(plain, &out);
  return out;
}

std::optional<SortKey> DecodeToken(const std::string& token) {
  std::string plain;
  if (!absl::WebSafeBase64Unescape(token, &plain)) return std::nullopt;
  size_t a = plain.find('\n');
  if (a == std::string::npos || plain.substr(0, a) != "v1") return std::nullopt;
  size_t b = plain.find('\n', a + 1);
  if (b == std::string::npos) return std::nullopt;
  size_t c = plain.find('\n', b + 1);
  if (c == std::string::npos) return std::nullopt;
  SortKey k;
  if (!absl::SimpleAtoi(plain.substr(a + 1, b - a - 1), &k.number)) return std::nullopt;
  k.text = plain.substr(b + 1, c - b - 1);
  k.name = plain.substr(c + 1);
  return k;
}

}  // namespace

absl::StatusOr<ListJobsResponse> ListJobs(const store::ReadView& view,
                                          const ListJobsRequest& request) {
  int max_results = request.max_results.value_or(10);
  if (max_results < 1 || max_results > 100) {
    return MakeError(ErrorKind::kValidationException,
                     absl::StrFormat("1 validation error detected: Value '%d' at 'maxResults' "
                                     "failed to satisfy constraint: Member must have value %s",
                                     max_results,
                                     max_results < 1 ? "greater than or equal to 1"
                                                     : "less than or equal to 100"));
  }
  std::optional<SortKey> after;
  if (!request.next_token.empty()) {
    after = DecodeToken(request.next_token);
    if (!after) {
      return MakeError(ErrorKind::kValidationException,
                       absl::StrFormat("Invalid pagination token \"%s\": pass the NextToken of an "
                                       "earlier ListTrainingJobs response",
                                       request.next_token.substr(0, 100)));
    }
  }
  const std::string needle = Lower(request.name_contains);
  std::vector<std::pair<SortKey, model::JobRecord>> matching;
  TW_RETURN_IF_ERROR(view.ForEachJob([&](model::JobRecord&& job) {
    if (!needle.empty() && Lower(job.name).find(needle) == std::string::npos) return true;
    if (request.status && job.status != *request.status) return true;
    if (request.creation_after_ms && !(job.creation_ms > *request.creation_after_ms)) return true;
    if (request.creation_before_ms && !(job.creation_ms < *request.creation_before_ms)) return true;
    if (request.modified_after_ms && !(job.last_modified_ms > *request.modified_after_ms)) {
      return true;
    }
    if (request.modified_before_ms && !(job.last_modified_ms < *request.modified_before_ms)) {
      return true;
    }
    SortKey k = KeyOf(job, request.sort_by);
    matching.emplace_back(std::move(k), std::move(job));
    return true;
  }));
  auto before = [&](const SortKey& a, const SortKey& b) {
    return request.descending ? b < a : a < b;
  };
  std::sort(matching.begin(), matching.end(),
            [&](const auto& a, const auto& b) { return before(a.first, b.first); });
  ListJobsResponse out;
  size_t i = 0;
  if (after) {
    while (i < matching.size() && !before(*after, matching[i].first)) ++i;
  }
  for (; i < matching.size() && static_cast<int>(out.jobs.size()) < max_results; ++i) {
    out.jobs.push_back(std::move(matching[i].second));
  }
  if (i < matching.size()) out.next_token = EncodeToken(matching[i - 1].first);
  return out;
}

}  // namespace trainwatch::query
