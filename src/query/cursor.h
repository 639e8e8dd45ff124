#pragma once
// The one pagination token of every paginated answer: CloudWatch's
// ListMetrics, GetMetricData, DescribeAlarms and DescribeAlarmHistory, Logs' DescribeLogGroups, DescribeLogStreams,
// GetLogEvents and FilterLogEvents, SageMaker's ListTrainingJobs and the
// native API's lists.
//
// A cursor is opaque to clients, stateless (it stays valid across server
// restarts) and
//   * versioned: it starts with the format version, so a later format can
//     still read or clearly refuse today's cursors;
//   * bound to the query that issued it: it carries the kind of answer and a
//     hash of the parameters that must not change between pages (the
//     "binding": the namespace and filters of a listing, the group and
//     stream of a log read, ...), so a cursor sent with another query is
//     refused instead of resuming somewhere meaningless;
//   * checked: a checksum over the whole cursor, so a cursor that was cut,
//     edited or made up is refused.
// Text: base64url (no padding) of
//   "tw" version(1 byte) kind(1) binding-hash(8) checksum(8) position(JSON).
// The hashes are FNV-1a 64: they catch mistakes and edits, not an attacker
// (a forged cursor can only ask for what the same request could read).

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace trainwatch::query {

enum class CursorKind : uint8_t {
  kListMetrics = 1,
  kMetricData = 2,
  kLogGroups = 3,
  kLogStreams = 4,
  kLogEvents = 5,
  kFilteredLogEvents = 6,
  kJobs = 7,
  kAlarms = 8,
  kAlarmHistory = 9,
};

// "ListMetrics", "GetMetricData", ... (for messages).
std::string_view CursorKindName(CursorKind kind);

// Builds a binding from the parameters it is made of: each part is
// length-prefixed, so ("ab", "c") and ("a", "bc") differ.
class CursorBinding {
 public:
  CursorBinding& Add(std::string_view part);
  CursorBinding& Add(int64_t part);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The cursor of `position` in the answers of `kind` to the query `binding`.
// Deterministic: the same position of the same query gives the same text
// (GetLogEvents' clients stop when a token comes back unchanged).
std::string EncodeCursor(CursorKind kind, const CursorBinding& binding,
                         const nlohmann::json& position);

// The position a cursor holds. InvalidArgument with ErrorKind
// kInvalidCursor (query/errors.h) and a message saying which of these it
// is, and what to do:
//   * not a cursor of this trainwatch (not base64url, too short, another
//     version, a checksum that does not match: damaged or altered);
//   * a cursor of another kind of answer;
//   * a cursor issued for a query with other parameters.
// `max_chars` bounds what is decoded.
absl::StatusOr<nlohmann::json> DecodeCursor(CursorKind kind, const CursorBinding& binding,
                                            std::string_view text, size_t max_chars = 8192);

}  // namespace trainwatch::query
