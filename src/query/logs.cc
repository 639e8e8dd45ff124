#include "query/logs.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "query/errors.h"
#include "query/filter_pattern.h"
#include "util/status_macros.h"

namespace trainwatch::query {
namespace {

using store::LogPosition;

constexpr int kDefaultMaxEvents = 10'000;

absl::Status BadParameter(std::string_view message) {
  return MakeError(ErrorKind::kInvalidParameterException, message);
}

absl::Status GroupMissing() {
  return MakeError(ErrorKind::kResourceNotFound, "The specified log group does not exist.");
}

absl::Status StreamMissing() {
  return MakeError(ErrorKind::kResourceNotFound, "The specified log stream does not exist.");
}

absl::Status RequireGroup(const store::ReadView& view, const std::string& group) {
  if (group.empty()) return BadParameter("logGroupName is required");
  TW_ASSIGN_OR_RETURN(std::optional<int64_t> created, view.GetLogGroup(group));
  if (!created) return GroupMissing();
  return absl::OkStatus();
}

// "f/" or "b/" + 56 digits: 16 zeros, 20 digits of t_ms (sign bit flipped, so
// that it is unsigned), 20 digits of seq.
std::string PositionToken(char direction, LogPosition pos) {
  uint64_t t = static_cast<uint64_t>(pos.t_ms) ^ (uint64_t{1} << 63);
  return absl::StrFormat("%c/0000000000000000%020u%020u", direction, t, pos.seq);
}

absl::StatusOr<std::pair<char, LogPosition>> ParsePositionToken(std::string_view token) {
  auto bad = [&] {
    return BadParameter(absl::StrFormat(
        "The specified nextToken \"%s\" is invalid: pass a nextForwardToken or "
        "nextBackwardToken from an earlier GetLogEvents response",
        std::string(token.substr(0, 100))));
  };
  if (token.size() != 58 || (token[0] != 'f' && token[0] != 'b') || token[1] != '/') return bad();
  for (size_t i = 2; i < token.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(token[i]))) return bad();
  }
  uint64_t t = 0, seq = 0;
  if (token.substr(2, 16) != "0000000000000000" ||
      !absl::SimpleAtoi(std::string(token.substr(18, 20)), &t) ||
      !absl::SimpleAtoi(std::string(token.substr(38, 20)), &seq)) {
    return bad();
  }
  LogPosition pos{static_cast<int64_t>(t ^ (uint64_t{1} << 63)), seq};
  return std::make_pair(token[0], pos);
}

absl::StatusOr<int> CheckLimit(std::optional<int> limit, int max, int dflt, const char* name) {
  if (!limit) return dflt;
  if (*limit < 1 || *limit > max) {
    return BadParameter(absl::StrFormat("%s %d is out of range: it must be between 1 and %d", name,
                                        *limit, max));
  }
  return *limit;
}

std::string Opaque(std::string_view plain) {
  std::string out;
  absl::WebSafeBase64Escape(std::string(plain), &out);
  return out;
}

std::optional<std::string> Unopaque(std::string_view token) {
  std::string out;
  if (!absl::WebSafeBase64Unescape(std::string(token), &out)) return std::nullopt;
  return out;
}

}  // namespace

// ---- DescribeLogStreams -------------------------------------------------------

absl::StatusOr<DescribeLogStreamsResponse> DescribeLogStreams(
    const store::ReadView& view, const DescribeLogStreamsRequest& request) {
  TW_RETURN_IF_ERROR(RequireGroup(view, request.group));
  TW_ASSIGN_OR_RETURN(int limit, CheckLimit(request.limit, 50, 50, "limit"));
  if (request.order_by == LogStreamOrder::kLastEventTime && !request.prefix.empty()) {
    return BadParameter(
        "Cannot order by LastEventTime with a logStreamNamePrefix (AWS does not allow both)");
  }
  DescribeLogStreamsResponse out;
  auto bad_token = [&] {
    return BadParameter(absl::StrFormat("The specified nextToken \"%s\" is invalid",
                                        request.next_token.substr(0, 100)));
  };

  if (request.order_by == LogStreamOrder::kLogStreamName) {
    std::string after;
    if (!request.next_token.empty()) {
      std::optional<std::string> plain = Unopaque(request.next_token);
      if (!plain || plain->substr(0, 2) != "n:") return bad_token();
      after = plain->substr(2);
    }
    bool more = false;
    TW_RETURN_IF_ERROR(view.ForEachLogStream(request.group, request.prefix, after,
                                             request.descending,
                                             [&](store::LogStreamInfo&& info) {
                                               if (static_cast<int>(out.streams.size()) == limit) {
                                                 more = true;
                                                 return false;
                                               }
                                               out.streams.push_back(std::move(info));
                                               return true;
                                             }));
    if (more) out.next_token = Opaque("n:" + out.streams.back().stream);
    return out;
  }

  // By last event time: every stream of the group, sorted in memory.
  std::vector<store::LogStreamInfo> all;
  TW_RETURN_IF_ERROR(view.ForEachLogStream(request.group, "", "", false,
                                           [&](store::LogStreamInfo&& info) {
                                             all.push_back(std::move(info));
                                             return true;
                                           }));
  auto key = [](const store::LogStreamInfo& s) {
    return std::make_pair(s.last_event_ms.value_or(std::numeric_limits<int64_t>::min()),
                          std::string_view(s.stream));
  };
  std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    return request.descending ? key(b) < key(a) : key(a) < key(b);
  });
  size_t begin = 0;
  if (!request.next_token.empty()) {
    std::optional<std::string> plain = Unopaque(request.next_token);
    if (!plain || plain->substr(0, 2) != "t:") return bad_token();
    size_t colon = plain->find(':', 2);
    int64_t t;
    if (colon == std::string::npos || !absl::SimpleAtoi(plain->substr(2, colon - 2), &t)) {
      return bad_token();
    }
    std::pair<int64_t, std::string_view> last(t, std::string_view(*plain).substr(colon + 1));
    while (begin < all.size() &&
           (request.descending ? !(key(all[begin]) < last) : !(last < key(all[begin])))) {
      ++begin;
    }
  }
  for (size_t i = begin; i < all.size() && static_cast<int>(out.streams.size()) < limit; ++i) {
    out.streams.push_back(all[i]);
  }
  if (begin + out.streams.size() < all.size()) {
    const auto& last = out.streams.back();
    out.next_token = Opaque(absl::StrFormat(
        "t:%d:%s", last.last_event_ms.value_or(std::numeric_limits<int64_t>::min()),
        last.stream));
  }
  return out;
}

// ---- GetLogEvents ---------------------------------------------------------------

absl::StatusOr<GetLogEventsResponse> GetLogEvents(const store::ReadView& view,
                                                  const GetLogEventsRequest& request) {
  TW_RETURN_IF_ERROR(RequireGroup(view, request.group));
  if (request.stream.empty()) return BadParameter("logStreamName is required");
  TW_ASSIGN_OR_RETURN(std::optional<store::LogStreamInfo> stream,
                      view.GetLogStream(request.group, request.stream));
  if (!stream) return StreamMissing();
  TW_ASSIGN_OR_RETURN(int limit, CheckLimit(request.limit, 10'000, kDefaultMaxEvents, "limit"));
  const int64_t start = request.start_ms.value_or(std::numeric_limits<int64_t>::min());
  const int64_t end = request.end_ms.value_or(std::numeric_limits<int64_t>::max());
  if (request.start_ms && request.end_ms && *request.end_ms < *request.start_ms) {
    return BadParameter(absl::StrFormat("endTime %d is before startTime %d", *request.end_ms,
                                        *request.start_ms));
  }

  bool forward = request.start_from_head;
  // Events strictly after (forward) or before (backward) `from`.
  LogPosition from{start, 0};
  std::string passed_token;
  if (!request.next_token.empty()) {
    TW_ASSIGN_OR_RETURN(auto parsed, ParsePositionToken(request.next_token));
    forward = parsed.first == 'f';
    from = parsed.second;
    passed_token = request.next_token;
  } else if (!forward) {
    from = request.end_ms ? LogPosition{end, 0} : LogPosition{std::numeric_limits<int64_t>::max(),
                                                               std::numeric_limits<uint64_t>::max()};
  }

  GetLogEventsResponse out;
  auto cursor = view.NewLogCursor(*stream);
  int64_t bytes = 0;
  auto fits = [&](const store::StoredLogEvent& e) {
    int64_t size = static_cast<int64_t>(e.message.size()) + kLogEventOverheadBytes;
    if (!out.events.empty() && bytes + size > kMaxLogPageBytes) return false;
    bytes += size;
    return true;
  };
  std::vector<LogPosition> positions;
  if (forward) {
    LogPosition seek = from;
    if (seek.seq == std::numeric_limits<uint64_t>::max()) {
      seek = {seek.t_ms == std::numeric_limits<int64_t>::max() ? seek.t_ms : seek.t_ms + 1, 0};
    } else {
      seek.seq += 1;
    }
    if (seek < LogPosition{start, 0}) seek = {start, 0};
    for (cursor->Seek(seek); cursor->Valid() && static_cast<int>(out.events.size()) < limit;
         cursor->Next()) {
      TW_ASSIGN_OR_RETURN(store::StoredLogEvent e, cursor->event());
      if (e.pos.t_ms >= end) break;
      if (!fits(e)) break;
      positions.push_back(e.pos);
      out.events.push_back({e.pos.t_ms, std::move(e.message), e.ingestion_ms});
    }
  } else {
    // Last event strictly before `from`.
    if (from.seq > 0) {
      cursor->SeekForPrev({from.t_ms, from.seq - 1});
    } else if (from.t_ms > std::numeric_limits<int64_t>::min()) {
      cursor->SeekForPrev({from.t_ms - 1, std::numeric_limits<uint64_t>::max()});
    }
    if (from.seq > 0 || from.t_ms > std::numeric_limits<int64_t>::min()) {
      for (; cursor->Valid() && static_cast<int>(out.events.size()) < limit; cursor->Prev()) {
        TW_ASSIGN_OR_RETURN(store::StoredLogEvent e, cursor->event());
        if (e.pos.t_ms < start) break;
        if (e.pos.t_ms >= end) continue;
        if (!fits(e)) break;
        positions.push_back(e.pos);
        out.events.push_back({e.pos.t_ms, std::move(e.message), e.ingestion_ms});
      }
    }
    std::reverse(out.events.begin(), out.events.end());
    std::reverse(positions.begin(), positions.end());
  }
  TW_RETURN_IF_ERROR(cursor->status());

  if (out.events.empty()) {
    // The end in this direction: hand back the token that came in.
    LogPosition at = from;
    if (!forward && request.next_token.empty()) at = {start, 0};
    out.next_forward_token =
        forward && !passed_token.empty() ? passed_token : PositionToken('f', at);
    out.next_backward_token =
        !forward && !passed_token.empty() ? passed_token : PositionToken('b', at);
    return out;
  }
  out.next_forward_token = PositionToken('f', positions.back());
  out.next_backward_token = PositionToken('b', positions.front());
  return out;
}

// ---- FilterLogEvents --------------------------------------------------------------

absl::StatusOr<FilterLogEventsResponse> FilterLogEvents(const store::ReadView& view,
                                                        const FilterLogEventsRequest& request) {
  TW_RETURN_IF_ERROR(RequireGroup(view, request.group));
  if (!request.stream_names.empty() && !request.stream_prefix.empty()) {
    return BadParameter("logStreamNames and logStreamNamePrefix cannot both be given");
  }
  if (request.stream_names.size() > 100) {
    return BadParameter(absl::StrFormat("logStreamNames has %d entries; at most 100 are allowed",
                                        request.stream_names.size()));
  }
  TW_ASSIGN_OR_RETURN(int limit, CheckLimit(request.limit, 10'000, 10'000, "limit"));
  if (request.filter_pattern.size() > 1024) {
    return BadParameter("Invalid filter pattern: longer than 1024 characters");
  }
  absl::StatusOr<FilterPattern> pattern = FilterPattern::Parse(request.filter_pattern);
  if (!pattern.ok()) return BadParameter(std::string(pattern.status().message()));
  const int64_t start = request.start_ms.value_or(std::numeric_limits<int64_t>::min());
  const int64_t end = request.end_ms.value_or(std::numeric_limits<int64_t>::max());

  LogPosition resume{start, 0};
  if (!request.next_token.empty()) {
    std::optional<std::string> plain = Unopaque(request.next_token);
    int64_t t = 0;
    uint64_t seq = 0;
    size_t c1 = plain ? plain->find(':', 3) : std::string::npos;
    if (!plain || plain->substr(0, 3) != "v1:" || c1 == std::string::npos ||
        !absl::SimpleAtoi(plain->substr(3, c1 - 3), &t) ||
        !absl::SimpleAtoi(plain->substr(c1 + 1), &seq)) {
      return BadParameter(absl::StrFormat(
          "The specified nextToken \"%s\" is invalid: pass the nextToken of an earlier "
          "FilterLogEvents response with the same parameters",
          request.next_token.substr(0, 100)));
    }
    resume = {t, seq + 1};
  }

  std::vector<store::LogStreamInfo> streams;
  if (!request.stream_names.empty()) {
    for (const std::string& name : request.stream_names) {
      TW_ASSIGN_OR_RETURN(std::optional<store::LogStreamInfo> s,
                          view.GetLogStream(request.group, name));
      if (s) streams.push_back(std::move(*s));
    }
  } else {
    TW_RETURN_IF_ERROR(view.ForEachLogStream(request.group, request.stream_prefix, "", false,
                                             [&](store::LogStreamInfo&& info) {
                                               streams.push_back(std::move(info));
                                               return true;
                                             }));
  }

  struct Head {
    LogPosition pos;
    size_t stream;
  };
  auto later = [](const Head& a, const Head& b) { return b.pos < a.pos; };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
  std::vector<std::unique_ptr<store::LogCursor>> cursors;
  for (size_t i = 0; i < streams.size(); ++i) {
    const auto& s = streams[i];
    cursors.push_back(view.NewLogCursor(s));
    if (!s.last_event_ms || *s.last_event_ms < start || *s.first_event_ms > end) continue;
    cursors[i]->Seek(resume);
    if (cursors[i]->Valid() && cursors[i]->position().t_ms <= end) {
      heap.push({cursors[i]->position(), i});
    }
  }

  FilterLogEventsResponse out;
  int64_t bytes = 0;
  int64_t scanned = 0;
  std::optional<LogPosition> last_examined;
  while (!heap.empty()) {
    if (static_cast<int>(out.events.size()) >= limit || scanned >= request.scan_budget) break;
    Head h = heap.top();
    store::LogCursor& c = *cursors[h.stream];
    TW_ASSIGN_OR_RETURN(store::StoredLogEvent e, c.event());
    if (pattern->Matches(e.message)) {
      int64_t size = static_cast<int64_t>(e.message.size()) + kLogEventOverheadBytes;
      if (!out.events.empty() && bytes + size > kMaxLogPageBytes) break;
      bytes += size;
      out.events.push_back({streams[h.stream].stream, e.pos.t_ms, std::move(e.message),
                            e.ingestion_ms, absl::StrFormat("%056u", e.pos.seq)});
    }
    ++scanned;
    last_examined = h.pos;
    heap.pop();
    c.Next();
    if (c.Valid() && c.position().t_ms <= end) heap.push({c.position(), h.stream});
    TW_RETURN_IF_ERROR(c.status());
  }
  if (!heap.empty() && last_examined) {
    out.next_token = Opaque(absl::StrFormat("v1:%d:%u", last_examined->t_ms, last_examined->seq));
  }
  return out;
}

}  // namespace trainwatch::query
