#pragma once
// Log reads with CloudWatch Logs semantics (spec/aws-api.md §6.1-§6.3): the
// api layer maps these 1:1 onto DescribeLogStreams, GetLogEvents and
// FilterLogEvents; the CLI's `logs` and `logs --follow` use them too.
//
// Errors: NotFound with AWS's exact text ("The specified log group does not
// exist.", "The specified log stream does not exist.") and ErrorKind
// kResourceNotFound; InvalidArgument with kInvalidParameterException for a
// bad limit, token, pattern or option combination (query/errors.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/read_view.h"

namespace trainwatch::query {

// ---- DescribeLogStreams -------------------------------------------------------

enum class LogStreamOrder { kLogStreamName, kLastEventTime };

struct DescribeLogStreamsRequest {
  std::string group = {};
  std::string prefix = {};  // not allowed with kLastEventTime
  LogStreamOrder order_by = LogStreamOrder::kLogStreamName;
  bool descending = false;
  std::string next_token = {};
  std::optional<int> limit = {};  // 1-50, default 50
};

struct DescribeLogStreamsResponse {
  std::vector<store::LogStreamInfo> streams;
  std::string next_token;  // empty on the last page
};

absl::StatusOr<DescribeLogStreamsResponse> DescribeLogStreams(
    const store::ReadView& view, const DescribeLogStreamsRequest& request);

// ---- GetLogEvents ---------------------------------------------------------------

struct GetLogEventsRequest {
  std::string group = {};
  std::string stream = {};
  std::optional<int64_t> start_ms = {};  // inclusive
  std::optional<int64_t> end_ms = {};    // exclusive
  std::string next_token = {};           // a previous nextForwardToken / nextBackwardToken
  std::optional<int> limit = {};         // 1-10,000; default: what fits in 1 MB, <= 10,000
  bool start_from_head = false;
};

struct OutputLogEvent {
  int64_t t_ms = 0;
  std::string message;
  int64_t ingestion_ms = 0;
  friend bool operator==(const OutputLogEvent&, const OutputLogEvent&) = default;
};

struct GetLogEventsResponse {
  std::vector<OutputLogEvent> events;  // ascending time order
  // Both always set: "f/<56 digits>" and "b/<56 digits>". At the end of the
  // stream in a direction, the page is empty and the token passed in comes
  // back unchanged.
  std::string next_forward_token;
  std::string next_backward_token;
};

absl::StatusOr<GetLogEventsResponse> GetLogEvents(const store::ReadView& view,
                                                  const GetLogEventsRequest& request);

// ---- FilterLogEvents --------------------------------------------------------------

struct FilterLogEventsRequest {
  std::string group = {};
  std::vector<std::string> stream_names = {};  // 1-100; not with stream_prefix
  std::string stream_prefix = {};
  std::optional<int64_t> start_ms = {};  // inclusive
  std::optional<int64_t> end_ms = {};    // inclusive (unlike GetLogEvents)
  std::string filter_pattern = {};       // query/filter_pattern.h
  std::string next_token = {};
  std::optional<int> limit = {};  // 1-10,000, default 10,000
  // Events examined per call before returning a page (possibly empty) with a
  // token; bounds the cost of a call whose pattern rarely matches.
  int64_t scan_budget = 1'000'000;
};

struct FilteredLogEvent {
  std::string stream;
  int64_t t_ms = 0;
  std::string message;
  int64_t ingestion_ms = 0;
  std::string event_id;  // 56 decimal digits, unique in the group
};

struct FilterLogEventsResponse {
  // By timestamp, then arrival, across streams.
  std::vector<FilteredLogEvent> events;
  std::string next_token;  // empty when nothing more can match
};

absl::StatusOr<FilterLogEventsResponse> FilterLogEvents(const store::ReadView& view,
                                                        const FilterLogEventsRequest& request);

// The 1 MB page limit counts message bytes plus this per event (AWS).
inline constexpr int64_t kLogEventOverheadBytes = 26;
inline constexpr int64_t kMaxLogPageBytes = 1'048'576;

}  // namespace trainwatch::query
