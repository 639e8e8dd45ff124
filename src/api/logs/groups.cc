// Log groups and streams: DescribeLogGroups, DescribeLogStreams,
// CreateLogGroup, CreateLogStream, DeleteLogGroup, DeleteLogStream,
// PutRetentionPolicy, DeleteRetentionPolicy, and the name rules shared by
// every Logs operation.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/logs/logs.h"
#include "api/pagination.h"
#include "api/wire_time.h"
#include "util/status_macros.h"

namespace trainwatch::api::logs {

using Json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kGroupPattern = "[\\.\\-_/#A-Za-z0-9]+";
constexpr std::string_view kStreamPattern = "[^:*]*";

std::string GroupArn(const Context& c, std::string_view group) {
  return absl::StrFormat("arn:aws:logs:%s:%s:log-group:%s", c.region, c.account_id, group);
}

std::string RequireToken(const nlohmann::json& cursor, const char* key) {
  auto it = cursor.find(key);
  return it != cursor.end() && it->is_string() ? it->get<std::string>() : std::string();
}

absl::Status NoLogStore() {
  return BackendMissing("log store");
}

absl::Status BadToken() {
  return InvalidParameterException(
      "The specified nextToken is invalid; pass the nextToken of the previous response.");
}

// The refusal's prefix (api/pagination.h).
constexpr char kBadTokenPrefix[] = "The specified nextToken is invalid";

}  // namespace

bool IsLogGroupName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_' || c == '/' || c == '#';
  });
}

bool IsLogStreamName(std::string_view name) {
  return name.find(':') == std::string_view::npos && name.find('*') == std::string_view::npos;
}

std::optional<std::string> ReadGroup(const Node& input, FieldReader* reader) {
  Node name = input["logGroupName"];
  Node identifier = input["logGroupIdentifier"];
  if (name.present() && identifier.present()) {
    reader->errors().Free(
        "logGroupName and logGroupIdentifier are mutually exclusive; give exactly one");
    return std::nullopt;
  }
  if (!identifier.present()) {
    return reader->String(name, /*required=*/true, 1, kMaxNameLength, IsLogGroupName,
                          kGroupPattern);
  }
  std::optional<std::string> id = reader->String(identifier, true, 1, 2048);
  if (!id) return std::nullopt;
  std::string group = *id;
  // arn:aws:logs:{region}:{account}:log-group:{name}[:*]
  if (group.rfind("arn:", 0) == 0) {
    size_t at = group.find(":log-group:");
    if (at == std::string::npos) {
      reader->errors().Pattern(identifier.path(), identifier.raw(),
                               "arn:aws:logs:<region>:<account>:log-group:<name>");
      return std::nullopt;
    }
    group = group.substr(at + 11);
    if (group.size() >= 2 && group.substr(group.size() - 2) == ":*") group.resize(group.size() - 2);
  }
  if (!IsLogGroupName(group) || static_cast<int64_t>(group.size()) > kMaxNameLength) {
    reader->errors().Pattern(identifier.path(), identifier.raw(), kGroupPattern);
    return std::nullopt;
  }
  return group;
}

std::optional<std::string> ReadGroupName(const Node& input, FieldReader* reader) {
  return reader->String(input["logGroupName"], true, 1, kMaxNameLength, IsLogGroupName,
                        kGroupPattern);
}
std::optional<std::string> ReadStreamName(const Node& input, FieldReader* reader) {
  return reader->String(input["logStreamName"], true, 1, kMaxNameLength, IsLogStreamName,
                        kStreamPattern);
}

absl::Status MapBackendError(const absl::Status& status) {
  if (status.ok() || AwsCodeOf(status)) return status;
  if (absl::IsNotFound(status)) return ResourceNotFoundException(MessageOf(status));
  if (absl::IsAlreadyExists(status)) {
    return AwsStatus("ResourceAlreadyExistsException", MessageOf(status));
  }
  return status;
}

absl::StatusOr<std::string> DescribeLogGroups(const Node& input, const Context& context,
                                              const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> prefix = reader.String(input["logGroupNamePrefix"], false, 1,
                                                    kMaxNameLength, IsLogGroupName, kGroupPattern);
  std::optional<std::string> pattern = reader.String(input["logGroupNamePattern"], false, 0,
                                                     kMaxNameLength);
  std::optional<int64_t> limit = reader.Int(input["limit"], false, 1, 50);
  std::optional<std::string> token = reader.String(input["nextToken"], false, 1, 8192);
  if (prefix && pattern) {
    errors.Free("logGroupNamePrefix and logGroupNamePattern are mutually exclusive");
  }
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  std::string after;
  const CursorBinding binding =
      CursorBinding().Add(prefix ? "p=" + *prefix : "").Add(pattern ? "m=" + *pattern : "");
  if (token) {
    absl::StatusOr<nlohmann::json> cursor = DecodeToken(
        CursorKind::kLogGroups, binding, *token, "InvalidParameterException", kBadTokenPrefix);
    if (!cursor.ok()) return cursor.status();
    if ((after = RequireToken(*cursor, "g")).empty()) return BadToken();
  }
  if (backends.logs == nullptr) return NoLogStore();
  absl::StatusOr<std::vector<LogGroupInfo>> groups =
      backends.logs->ListLogGroups(prefix.value_or(""));
  if (!groups.ok()) return MapBackendError(groups.status());
  size_t page = static_cast<size_t>(limit.value_or(50));
  Json items = Json::array();
  std::optional<std::string> next;
  for (const LogGroupInfo& g : *groups) {
    if (pattern && g.name.find(*pattern) == std::string::npos) continue;
    if (!after.empty() && g.name <= after) continue;
    if (items.size() == page) {
      next = EncodeToken(CursorKind::kLogGroups, binding,
                         {{"g", items.back()["logGroupName"].get<std::string>()}});
      break;
    }
    Json item;
    item["logGroupName"] = g.name;
    item["creationTime"] = g.creation_ms;
    if (g.retention_days) item["retentionInDays"] = *g.retention_days;
    item["metricFilterCount"] = 0;
    item["arn"] = GroupArn(context, g.name) + ":*";
    item["storedBytes"] = g.stored_bytes;
    item["logGroupArn"] = GroupArn(context, g.name);
    items.push_back(std::move(item));
  }
  Json body;
  body["logGroups"] = std::move(items);
  if (next) body["nextToken"] = *next;
  return DumpJson(body);
}

absl::StatusOr<std::string> DescribeLogStreams(const Node& input, const Context& context,
                                               const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroup(input, &reader);
  std::optional<std::string> prefix = reader.String(input["logStreamNamePrefix"], false, 1,
                                                    kMaxNameLength, IsLogStreamName, kStreamPattern);
  std::optional<std::string> order =
      reader.Enum(input["orderBy"], false, {"LogStreamName", "LastEventTime"});
  std::optional<bool> descending = reader.Bool(input["descending"]);
  std::optional<int64_t> limit = reader.Int(input["limit"], false, 1, 50);
  std::optional<std::string> token = reader.String(input["nextToken"], false, 1, 8192);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  bool by_time = order && *order == "LastEventTime";
  if (by_time && prefix) {
    return InvalidParameterException(
        "Cannot order by LastEventTime with a logStreamNamePrefix.");
  }
  // Cursor: the last stream of the previous page, as (sort time, name).
  std::optional<std::pair<int64_t, std::string>> after;
  const CursorBinding binding = CursorBinding()
                                    .Add(*group)
                                    .Add(prefix.value_or(""))
                                    .Add(by_time ? "LastEventTime" : "LogStreamName")
                                    .Add(descending.value_or(false) ? "desc" : "asc");
  if (token) {
    absl::StatusOr<nlohmann::json> cursor = DecodeToken(
        CursorKind::kLogStreams, binding, *token, "InvalidParameterException", kBadTokenPrefix);
    if (!cursor.ok()) return cursor.status();
    std::string name = RequireToken(*cursor, "s");
    if (name.empty()) return BadToken();
    auto t = cursor->find("t");
    after = std::pair{t != cursor->end() && t->is_number_integer() ? t->get<int64_t>() : 0, name};
  }
  if (backends.logs == nullptr) return NoLogStore();
  absl::StatusOr<std::vector<LogStreamInfo>> streams =
      backends.logs->ListLogStreams(*group, prefix.value_or(""));
  if (!streams.ok()) return MapBackendError(streams.status());

  auto sort_time = [&](const LogStreamInfo& s) {
    return by_time ? s.last_event_ms.value_or(0) : int64_t{0};
  };
  bool desc = descending.value_or(false);
  auto before = [&](const std::pair<int64_t, std::string>& a,
                    const std::pair<int64_t, std::string>& b) { return desc ? b < a : a < b; };
  std::vector<const LogStreamInfo*> sorted;
  for (const LogStreamInfo& s : *streams) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [&](const LogStreamInfo* a, const LogStreamInfo* b) {
    return before({sort_time(*a), a->name}, {sort_time(*b), b->name});
  });

  size_t page = static_cast<size_t>(limit.value_or(50));
  Json items = Json::array();
  std::optional<std::string> next;
  const LogStreamInfo* last = nullptr;
  for (const LogStreamInfo* s : sorted) {
    if (after && !before(*after, {sort_time(*s), s->name})) continue;
    if (items.size() == page) {
      next = EncodeToken(CursorKind::kLogStreams, binding,
                         {{"s", last->name}, {"t", sort_time(*last)}});
      break;
    }
    Json item;
    item["logStreamName"] = s->name;
    item["creationTime"] = s->creation_ms;
    if (s->first_event_ms) item["firstEventTimestamp"] = *s->first_event_ms;
    if (s->last_event_ms) item["lastEventTimestamp"] = *s->last_event_ms;
    if (s->last_ingestion_ms) item["lastIngestionTime"] = *s->last_ingestion_ms;
    item["arn"] = absl::StrFormat("%s:log-stream:%s", GroupArn(context, *group), s->name);
    item["storedBytes"] = 0;
    items.push_back(std::move(item));
    last = s;
  }
  Json body;
  body["logStreams"] = std::move(items);
  if (next) body["nextToken"] = *next;
  return DumpJson(body);
}

absl::StatusOr<std::string> CreateLogGroup(const Node& input, const Context& context,
                                           const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  reader.String(input["kmsKeyId"], false, 0, 256);
  reader.Map(input["tags"], 50, 128, 256);
  reader.Enum(input["logGroupClass"], false, {"STANDARD", "INFREQUENT_ACCESS", "DELIVERY"});
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  absl::Status created = backends.log_writer->CreateLogGroup(*group, context.now_ms);
  if (absl::IsAlreadyExists(created)) {
    return AwsStatus("ResourceAlreadyExistsException", "The specified log group already exists");
  }
  if (!created.ok()) return MapBackendError(created);
  return std::string("{}");
}

absl::StatusOr<std::string> CreateLogStream(const Node& input, const Context& context,
                                            const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  std::optional<std::string> stream = ReadStreamName(input, &reader);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  absl::Status created = backends.log_writer->CreateLogStream({*group, *stream}, context.now_ms);
  if (absl::IsAlreadyExists(created)) {
    return AwsStatus("ResourceAlreadyExistsException", "The specified log stream already exists");
  }
  if (!created.ok()) return MapBackendError(created);
  return std::string("{}");
}

absl::StatusOr<std::string> DeleteLogGroup(const Node& input, const Context&,
                                           const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  TW_RETURN_IF_ERROR(MapBackendError(backends.log_writer->DeleteLogGroup(*group)));
  return std::string("{}");
}

absl::StatusOr<std::string> DeleteLogStream(const Node& input, const Context&,
                                            const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  std::optional<std::string> stream = ReadStreamName(input, &reader);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  TW_RETURN_IF_ERROR(MapBackendError(backends.log_writer->DeleteLogStream({*group, *stream})));
  return std::string("{}");
}

// The retentions CloudWatch Logs accepts, in days.
constexpr std::string_view kRetentionDays[] = {
    "1",   "3",   "5",   "7",    "14",   "30",   "60",   "90",   "120",  "150",  "180",
    "365", "400", "545", "731",  "1096", "1827", "2192", "2557", "2922", "3288", "3653"};

absl::StatusOr<std::string> PutRetentionPolicy(const Node& input, const Context&,
                                               const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  Node days_node = input["retentionInDays"];
  std::optional<int64_t> days = reader.Int(days_node, true, INT32_MIN, INT32_MAX);
  if (days && std::find(std::begin(kRetentionDays), std::end(kRetentionDays),
                        std::to_string(*days)) == std::end(kRetentionDays)) {
    errors.Enum(days_node.path(), days_node.raw(),
                std::vector<std::string_view>(std::begin(kRetentionDays), std::end(kRetentionDays)));
  }
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  TW_RETURN_IF_ERROR(MapBackendError(
      backends.log_writer->PutRetentionPolicy(*group, static_cast<int>(*days))));
  return std::string("{}");
}

absl::StatusOr<std::string> DeleteRetentionPolicy(const Node& input, const Context&,
                                                  const Backends& backends) {
  ValidationErrors errors;
  FieldReader reader(&errors);
  std::optional<std::string> group = ReadGroupName(input, &reader);
  if (!errors.empty()) return errors.ToStatus("InvalidParameterException");
  if (backends.log_writer == nullptr) return NoLogStore();
  TW_RETURN_IF_ERROR(
      MapBackendError(backends.log_writer->PutRetentionPolicy(*group, std::nullopt)));
  return std::string("{}");
}

}  // namespace trainwatch::api::logs
