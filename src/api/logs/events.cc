// Log events: GetLogEvents, FilterLogEvents, PutLogEvents (spec §6.2-§6.4).
#include <algorithm>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/logs/logs.h"
#include "api/pagination.h"
#include "api/wire_time.h"

namespace trainwatch::api::logs {

// FilterLogEvents' filterPattern (spec §6.3), parsed once per request.
using query::FilterPattern;

using Json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kStreamPattern = "[^:*]*";
constexpr int64_t kDayMs = 86400 * 1000LL;
constexpr int64_t kHourMs = 3600 * 1000LL;

absl::Status NoLogStore() {
  return BackendMissing("log store");
}

}  // namespace

absl::StatusOr<std::string> GetLogEvents(const Node& input, const Context& context,
                                         const Backends& backends) {
  (void)context;
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroup(input, &reader);
  std::optional<std::string> stream = ReadStreamName(input, &reader);
  std::optional<int64_t> start = reader.Int(input["startTime"], false, 0, INT64_MAX / 2);
  std::optional<int64_t> end = reader.Int(input["endTime"], false, 0, INT64_MAX / 2);
  std::optional<std::string> token = reader.String(input["nextToken"], false, 1, 1024);
  std::optional<int64_t> limit = reader.Int(input["limit"], false, 1, kMaxEventsPerPage);
  std::optional<bool> from_head = reader.Bool(input["startFromHead"]);
  reader.Bool(input["unmask"]);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");

  LogReadQuery query;
  query.stream = {*group, *stream};
  query.start_ms = start;
  query.end_ms = end;
  query.limit = static_cast<size_t>(limit.value_or(kMaxEventsPerPage));
  query.max_bytes = kMaxLogPageBytes;
  query.forward = from_head.value_or(false);
  std::optional<std::pair<char, LogPosition>> parsed;
  if (token) {
    absl::StatusOr<std::pair<char, LogPosition>> position = ParsePositionToken(
        query.stream, *token, "InvalidParameterException",
        absl::StrFormat("The specified nextToken %s is invalid; pass a nextForwardToken or "
                        "nextBackwardToken of a previous response for this log stream",
                        QuoteValue(*token)));
    if (!position.ok()) return position.status();
    parsed = *position;
    query.forward = parsed->first == 'f';
    query.from = parsed->second;
  }
  if (backends.logs == nullptr) return NoLogStore();
  absl::StatusOr<std::vector<StoredLogEvent>> events = backends.logs->ReadLogStream(query);
  if (!events.ok()) return MapBackendError(events.status());

  Json items = Json::array();
  for (const StoredLogEvent& e : *events) {
    Json item;
    item["timestamp"] = e.position.t_ms;
    item["message"] = e.message;
    item["ingestionTime"] = e.ingestion_ms;
    items.push_back(std::move(item));
  }
  // At the end in the direction read, both tokens repeat the position passed
  // in, so a follower sees its own token back and knows it is caught up.
  LogPosition forward{0, 0};
  LogPosition backward{0, 0};
  if (!events->empty()) {
    forward = events->back().position;
    forward.seq += 1;
    backward = events->front().position;
  } else if (parsed) {
    forward = backward = parsed->second;
  }
  Json body;
  body["events"] = std::move(items);
  body["nextForwardToken"] = PositionToken(query.stream, 'f', forward);
  body["nextBackwardToken"] = PositionToken(query.stream, 'b', backward);
  return DumpJson(body);
}

absl::StatusOr<std::string> FilterLogEvents(const Node& input, const Context& context,
                                            const Backends& backends) {
  (void)context;
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroup(input, &reader);
  std::optional<std::vector<Node>> names = reader.List(input["logStreamNames"], false, 1, 100);
  std::optional<std::string> prefix = reader.String(input["logStreamNamePrefix"], false, 1,
                                                    kMaxNameLength, IsLogStreamName, kStreamPattern);
  std::optional<int64_t> start = reader.Int(input["startTime"], false, 0, INT64_MAX / 2);
  std::optional<int64_t> end = reader.Int(input["endTime"], false, 0, INT64_MAX / 2);
  std::optional<std::string> pattern = reader.String(input["filterPattern"], false, 0, 1024);
  std::optional<std::string> token = reader.String(input["nextToken"], false, 1, 1024);
  std::optional<int64_t> limit = reader.Int(input["limit"], false, 1, kMaxEventsPerPage);
  reader.Bool(input["interleaved"]);
  reader.Bool(input["unmask"]);
  LogFilterQuery query;
  if (names) {
    for (const Node& n : *names) {
      if (auto s = reader.String(n, true, 1, kMaxNameLength, IsLogStreamName, kStreamPattern)) {
        query.stream_names.push_back(*s);
      }
    }
  }
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (names && prefix) {
    return InvalidParameterException(
        "logStreamNames and logStreamNamePrefix are mutually exclusive; give at most one.");
  }
  absl::StatusOr<FilterPattern> filter = FilterPattern::Parse(pattern.value_or(""));
  if (!filter.ok()) return InvalidParameterException(MessageOf(filter.status()));
  query.group = *group;
  query.stream_prefix = prefix;
  query.start_ms = start;
  query.end_ms = end;
  if (!filter->MatchesAll()) {
    query.pattern = std::make_shared<const FilterPattern>(*std::move(filter));
  }
  query.limit = static_cast<size_t>(limit.value_or(kMaxEventsPerPage));
  query.max_bytes = kMaxLogPageBytes;
  // A token resumes the same search: same group, streams, times and pattern.
  CursorBinding binding;
  binding.Add(query.group).Add(query.stream_prefix.value_or("")).Add(pattern.value_or(""));
  binding.Add(start ? *start : -1).Add(end ? *end : -1);
  for (const std::string& name : query.stream_names) binding.Add(name);
  if (token) {
    absl::StatusOr<nlohmann::json> cursor = DecodeToken(
        CursorKind::kFilteredLogEvents, binding, *token, "InvalidParameterException",
        absl::StrFormat("The specified nextToken %s is invalid", QuoteValue(*token)), 1024);
    if (!cursor.ok()) return cursor.status();
    const nlohmann::json* t = nullptr;
    const nlohmann::json* s = nullptr;
    {
      if (auto it = cursor->find("t"); it != cursor->end()) t = &*it;
      if (auto it = cursor->find("s"); it != cursor->end()) s = &*it;
    }
    if (t == nullptr || s == nullptr || !t->is_number_integer() || !s->is_number_integer()) {
      return InvalidParameterException(absl::StrFormat(
          "The specified nextToken %s is invalid; pass the nextToken of the previous response.",
          QuoteValue(*token)));
    }
    query.after = LogPosition{t->get<int64_t>(), s->get<int64_t>()};
  }
  if (backends.logs == nullptr) return NoLogStore();
  absl::StatusOr<LogFilterPage> page = backends.logs->FilterLogEvents(query);
  if (!page.ok()) return MapBackendError(page.status());

  Json items = Json::array();
  for (const StoredLogEvent& e : page->events) {
    Json item;
    item["logStreamName"] = e.stream;
    item["timestamp"] = e.position.t_ms;
    item["message"] = e.message;
    item["ingestionTime"] = e.ingestion_ms;
    item["eventId"] = EventId(e.position);
    items.push_back(std::move(item));
  }
  Json body;
  body["events"] = std::move(items);
  body["searchedLogStreams"] = Json::array();
  if (page->next) {
    body["nextToken"] = EncodeToken(CursorKind::kFilteredLogEvents, binding,
                                    {{"t", page->next->t_ms}, {"s", page->next->seq}});
  }
  return DumpJson(body);
}

absl::StatusOr<std::string> PutLogEvents(const Node& input, const Context& context,
                                         const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  std::optional<std::string> stream = ReadStreamName(input, &reader);
  std::optional<std::vector<Node>> items = reader.List(input["logEvents"], true, 1, kMaxPutEvents);
  reader.String(input["sequenceToken"], false, 1, 8192);
  model::LogBatch batch;
  int64_t bytes = 0;
  if (items) {
    for (const Node& item : *items) {
      std::optional<int64_t> t = reader.Int(item["timestamp"], true, 0, INT64_MAX / 2);
      std::optional<std::string> message = reader.String(item["message"], true, 1, 1048576);
      if (!t || !message) continue;
      bytes += static_cast<int64_t>(message->size()) + static_cast<int64_t>(kLogEventOverheadBytes);
      batch.events.push_back({*t, *std::move(message)});
    }
  }
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  batch.stream = {*group, *stream};
  if (bytes > kMaxPutBytes) {
    return InvalidParameterException(absl::StrFormat(
        "The batch of log events is %d bytes (messages plus 26 bytes per event); the limit is "
        "%d bytes.",
        bytes, kMaxPutBytes));
  }
  for (size_t i = 0; i < batch.events.size(); ++i) {
    if (static_cast<int64_t>(batch.events[i].message.size()) + static_cast<int64_t>(kLogEventOverheadBytes) > kMaxPutBytes) {
      return InvalidParameterException(
          absl::StrFormat("Log event %d is too large: at most %d bytes including 26 bytes of "
                          "overhead.",
                          i, kMaxPutBytes));
    }
    if (i > 0 && batch.events[i].t_ms < batch.events[i - 1].t_ms) {
      return InvalidParameterException(
          "Log events in a single PutLogEvents request must be in chronological order.");
    }
  }
  if (batch.events.back().t_ms - batch.events.front().t_ms > 24 * kHourMs) {
    return InvalidParameterException(
        "The batch of log events in a single PutLogEvents request cannot span more than 24 "
        "hours.");
  }
  if (backends.logs == nullptr || backends.log_writer == nullptr) return NoLogStore();
  absl::StatusOr<std::optional<int>> retention_days = backends.logs->LogGroupRetention(*group);
  if (!retention_days.ok()) return MapBackendError(retention_days.status());
  // Too old, then older than the group's retention (prefixes, since events
  // are chronological), and too new (a suffix) are rejected individually;
  // the rest is stored. The end indexes are exclusive.
  size_t too_old = 0;
  while (too_old < batch.events.size() &&
         batch.events[too_old].t_ms < context.now_ms - 14 * kDayMs) {
    ++too_old;
  }
  size_t expired = too_old;
  if (*retention_days) {
    const int64_t cutoff_ms = context.now_ms - **retention_days * kDayMs;
    while (expired < batch.events.size() && batch.events[expired].t_ms < cutoff_ms) ++expired;
  }
  size_t last = batch.events.size();
  while (last > expired && batch.events[last - 1].t_ms > context.now_ms + 2 * kHourMs) --last;
  Json rejected = Json::object();
  if (last < batch.events.size()) rejected["tooNewLogEventStartIndex"] = last;
  if (too_old > 0) rejected["tooOldLogEventEndIndex"] = too_old;
  if (expired > too_old) rejected["expiredLogEventEndIndex"] = expired;
  size_t total = batch.events.size();
  batch.events.erase(batch.events.begin() + static_cast<std::ptrdiff_t>(last), batch.events.end());
  batch.events.erase(batch.events.begin(),
                     batch.events.begin() + static_cast<std::ptrdiff_t>(expired));

  Json body;
  if (!batch.events.empty() || total == 0) {
    absl::StatusOr<std::string> sequence = backends.log_writer->PutLogEvents(batch, context.now_ms);
    if (!sequence.ok()) return MapBackendError(sequence.status());
    body["nextSequenceToken"] = *sequence;
  } else {
    // Nothing to store, but the stream must still exist.
    absl::StatusOr<std::vector<LogStreamInfo>> streams =
        backends.logs->ListLogStreams(*group, *stream);
    if (!streams.ok()) return MapBackendError(streams.status());
    bool found = std::any_of(streams->begin(), streams->end(),
                             [&](const LogStreamInfo& s) { return s.name == *stream; });
    if (!found) return ResourceNotFoundException(kStreamNotFound);
  }
  if (!rejected.empty()) body["rejectedLogEventsInfo"] = std::move(rejected);
  return DumpJson(body);
}

}  // namespace trainwatch::api::logs
