#pragma once
// CloudWatch Logs operations (spec/aws-api.md §6), AWS JSON 1.1:
// DescribeLogGroups, DescribeLogStreams, GetLogEvents, FilterLogEvents,
// CreateLogGroup, CreateLogStream, PutLogEvents.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "api/backend.h"
#include "api/input.h"
#include "api/validation.h"

namespace trainwatch::api::logs {

struct Context {
  int64_t now_ms = 0;
  std::string region = "us-east-1";
  std::string account_id = "000000000000";
};

// AWS's texts for missing resources; readers and writers return NotFound
// with these messages (query/reader.h).
using query::kGroupNotFound;
using query::kStreamNotFound;

// Limits (spec §6, Appendix B).
inline constexpr int64_t kMaxNameLength = 512;
inline constexpr int64_t kMaxEventsPerPage = 10000;
using query::kMaxLogPageBytes;
using query::kLogEventOverheadBytes;
inline constexpr int64_t kMaxPutEvents = 10000;
inline constexpr int64_t kMaxPutBytes = 1048576;

// Runs `operation`; returns the JSON 1.1 body.
absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   const Context& context, const Backends& backends);

// GetLogEvents' tokens (and the native API's `next`): "f/" or "b/", the
// shape of AWS's tokens, then a cursor (api/pagination.h) over one stream
// holding the direction and the position (t_ms, seq).
std::string PositionToken(const model::LogStreamId& stream, char direction,
                          const LogPosition& position);
// (direction, position); a refused token is answered with `aws_code` and
// `prefix` followed by why (api/pagination.h).
absl::StatusOr<std::pair<char, LogPosition>> ParsePositionToken(const model::LogStreamId& stream,
                                                                std::string_view token,
                                                                std::string_view aws_code,
                                                                std::string_view prefix);
// The 56-digit eventId of FilterLogEvents.
std::string EventId(const LogPosition& position);

// Group and stream names (spec §6): validates with AWS's generic message
// format into `reader`.
bool IsLogGroupName(std::string_view name);
bool IsLogStreamName(std::string_view name);
// logGroupName or logGroupIdentifier (name or ARN); exactly one must be given.
std::optional<std::string> ReadGroup(const Node& input, FieldReader* reader);
// The required logGroupName / logStreamName of operations that take names only.
std::optional<std::string> ReadGroupName(const Node& input, FieldReader* reader);
std::optional<std::string> ReadStreamName(const Node& input, FieldReader* reader);

// Every shared step of an operation: check, then map the backend's
// NotFound/AlreadyExists to Logs' own exceptions.
absl::Status MapBackendError(const absl::Status& status);

}  // namespace trainwatch::api::logs
