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

// AWS's texts for missing resources; LogsBackend implementations return
// NotFound with these messages.
inline constexpr char kGroupNotFound[] = "The specified log group does not exist.";
inline constexpr char kStreamNotFound[] = "The specified log stream does not exist.";

// Limits (spec §6, Appendix B).
inline constexpr int64_t kMaxNameLength = 512;
inline constexpr int64_t kMaxEventsPerPage = 10000;
inline constexpr size_t kMaxPageBytes = 1048576;
inline constexpr int64_t kEventOverheadBytes = 26;
inline constexpr int64_t kMaxPutEvents = 10000;
inline constexpr int64_t kMaxPutBytes = 1048576;

// Runs `operation`; returns the JSON 1.1 body.
absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   const Context& context, const Backends& backends);

// FilterLogEvents' filterPattern (spec §6.3): terms, "quoted phrases",
// ?any-of, -excluded and %regex%. InvalidParameterException "Invalid filter
// pattern" (with the reason) for anything else; JSON and space-delimited
// patterns are not supported yet.
absl::StatusOr<LogFilter> ParseFilterPattern(std::string_view pattern);

// GetLogEvents tokens: "f/" or "b/" and 56 digits holding the position
// (t_ms, seq), the shape AWS uses.
std::string PositionToken(char direction, const LogPosition& position);
// (direction, position), or nullopt when `token` is not such a token.
std::optional<std::pair<char, LogPosition>> ParsePositionToken(std::string_view token);
// The 56-digit eventId of FilterLogEvents.
std::string EventId(const LogPosition& position);

// Group and stream names (spec §6): validates with AWS's generic message
// format into `reader`.
bool IsLogGroupName(std::string_view name);
bool IsLogStreamName(std::string_view name);
// logGroupName or logGroupIdentifier (name or ARN); exactly one must be given.
std::optional<std::string> ReadGroup(const Node& input, FieldReader* reader);

// Every shared step of an operation: check, then map the backend's
// NotFound/AlreadyExists to Logs' own exceptions.
absl::Status MapBackendError(const absl::Status& status);

}  // namespace trainwatch::api::logs
