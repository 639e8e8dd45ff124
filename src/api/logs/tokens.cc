// GetLogEvents' tokens and FilterLogEvents' event ids.
#include <algorithm>

#include "absl/strings/numbers.h"
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
  if (shaped && token.size() == 58 &&
      std::all_of(token.begin() + 2, token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      token.substr(2, 16) == "0000000000000000") {
    // The tokens of trainwatch before the one cursor: the position in 56
    // digits, bound to nothing. A follower that started before an upgrade
    // goes on where it was.
    int64_t t = 0, seq = 0;
    if (absl::SimpleAtoi(std::string(token.substr(18, 20)), &t) &&
        absl::SimpleAtoi(std::string(token.substr(38, 20)), &seq)) {
      return std::pair{token[0], LogPosition{t, seq}};
    }
  }
  if (!shaped) {
    return AwsStatus(aws_code, absl::StrFormat("%s: it does not start with f/ or b/ as this "
                                               "operation's tokens do.", prefix));
  }
  TW_ASSIGN_OR_RETURN(nlohmann::json cursor,
                      DecodeToken(CursorKind::kLogEvents, StreamBinding(stream), token.substr(2),
                                  aws_code, prefix, 1024));
  auto d = cursor.find("d"), t = cursor.find("t"), seq = cursor.find("s");
  if (d == cursor.end() || t == cursor.end() || seq == cursor.end() || !d->is_string() ||
      (*d != "f" && *d != "b") || !t->is_number_integer() || !seq->is_number_integer() ||
      d->get<std::string>()[0] != token[0]) {
    return AwsStatus(aws_code, absl::StrFormat("%s: it holds no log position.", prefix));
  }
  return std::pair{d->get<std::string>()[0], LogPosition{t->get<int64_t>(), seq->get<int64_t>()}};
}

}  // namespace trainwatch::api::logs
