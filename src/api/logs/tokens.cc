// GetLogEvents' tokens and FilterLogEvents' event ids.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/logs/logs.h"
#include "api/pagination.h"
#include "util/status_macros.h"

namespace trainwatch::api::logs {

namespace {

CursorBinding StreamBinding(const model::LogStreamId& stream) {
  return CursorBinding().Add(stream.group).Add(stream.stream);
}

}  // namespace

std::string PositionToken(const model::LogStreamId& stream, char direction,
                          const LogPosition& position) {
  // "f/" or "b/" first, the shape AWS's tokens have (and clients may check).
  return absl::StrFormat(
      "%c/%s", direction,
      EncodeToken(CursorKind::kLogEvents, StreamBinding(stream),
                  {{"d", std::string(1, direction)}, {"t", position.t_ms}, {"s", position.seq}}));
}

std::string EventId(const LogPosition& position) {
  return absl::StrFormat("%016d%020d%020d", 0, position.t_ms, position.seq);
}

absl::StatusOr<std::pair<char, LogPosition>> ParsePositionToken(
    const model::LogStreamId& stream, std::string_view token, std::string_view aws_code,
    std::string_view prefix) {
  const bool shaped = token.size() > 2 && (token[0] == 'f' || token[0] == 'b') && token[1] == '/';
  TW_ASSIGN_OR_RETURN(nlohmann::json cursor,
                      DecodeToken(CursorKind::kLogEvents, StreamBinding(stream),
                                  shaped ? token.substr(2) : token, aws_code, prefix, 1024));
  auto d = cursor.find("d"), t = cursor.find("t"), seq = cursor.find("s");
  if (d == cursor.end() || t == cursor.end() || seq == cursor.end() || !d->is_string() ||
      (*d != "f" && *d != "b") || !t->is_number_integer() || !seq->is_number_integer() ||
      d->get<std::string>()[0] != token[0]) {
    return AwsStatus(aws_code, absl::StrFormat("%s: it holds no log position.", prefix));
  }
  return std::pair{d->get<std::string>()[0], LogPosition{t->get<int64_t>(), seq->get<int64_t>()}};
}

}  // namespace trainwatch::api::logs
