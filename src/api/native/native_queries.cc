// NativeApi: the read endpoints for statistics, logs and jobs.
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"
#include "api/input.h"
#include "api/errors.h"
#include "api/form.h"
#include "api/logs/logs.h"
#include "api/native/native_api.h"
#include "api/native/native_util.h"
#include "query/jobs.h"
#include "query/periods.h"
#include "util/time_parse.h"

namespace trainwatch::api {

using namespace native_internal;

namespace {
}  // namespace

HttpResponse NativeApi::Statistics(const HttpRequest& request) const {
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  int64_t now = clock_.NowMs();
  StatisticsQuery query;
  query.now_ms = now;
  const std::string* ns = Param(*params, "namespace");
  const std::string* metric = Param(*params, "metric");
  if (ns == nullptr || metric == nullptr) {
    return Error(400, "InvalidArgument", "query parameters namespace and metric are required");
  }
  query.metric.ns = *ns;
  query.metric.metric = *metric;
  for (const DimensionFilter& d : DimensionParams(*params)) {
    if (!d.value) {
      return Error(400, "InvalidArgument",
                   absl::StrFormat("dimension %s needs a value (dimension=Name=Value)", d.name));
    }
    query.metric.dimensions.push_back({d.name, *d.value});
  }
  std::sort(query.metric.dimensions.begin(), query.metric.dimensions.end());
  if (const std::string* unit = Param(*params, "unit")) query.unit = *unit;
  absl::StatusOr<int64_t> start = TimeParam(*params, "start", now, now - 3600000);
  absl::StatusOr<int64_t> end = TimeParam(*params, "end", now, now);
  if (!start.ok()) return FromStatus(start.status());
  if (!end.ok()) return FromStatus(end.status());
  int64_t period_s = 60;
  if (const std::string* p = Param(*params, "period")) {
    absl::StatusOr<int64_t> ms = util::ParseDurationMs(*p);
    if (!ms.ok() || *ms % 1000 != 0 || !cloudwatch::IsAllowedPeriod(*ms / 1000)) {
      return Error(400, "InvalidArgument",
                   absl::StrFormat("period=%s: want 1s, 5s, 10s, 20s, 30s or a multiple of 60s",
                                   *p));
    }
    period_s = *ms / 1000;
  }
  if (*start >= *end) return Error(400, "InvalidArgument", "start must be before end");
  int64_t points = cloudwatch::RequestedDatapoints(*start, *end, period_s, now);
  if (points > query::kMaxMetricDataDatapoints) {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("the range holds %d periods; at most %d: raise period or "
                                 "narrow the range",
                                 points, query::kMaxMetricDataDatapoints));
  }
  query.start_ms = *start;
  query.end_ms = *end;
  query.period_s = period_s;
  std::vector<std::string> stats = ParamAll(*params, "stat");
  if (stats.empty()) stats = {"Average"};
  for (const std::string& s : stats) {
    absl::StatusOr<Statistic> parsed = cloudwatch::ParseAnyStatistic(s);
    if (!parsed.ok()) {
      return Error(400, "InvalidArgument",
                   absl::StrFormat("stat=%s %s", s, MessageOf(parsed.status())));
    }
    query.statistics.push_back(*parsed);
  }
  absl::StatusOr<std::vector<StatisticsBucket>> buckets = backends_.metrics->GetStatistics(query);
  if (!buckets.ok()) return FromStatus(buckets.status());
  Json points_json = Json::array();
  for (const StatisticsBucket& b : *buckets) {
    Json values = Json::object();
    for (size_t i = 0; i < query.statistics.size() && i < b.values.size(); ++i) {
      if (b.values[i]) values[query.statistics[i].name] = *b.values[i];
    }
    points_json.push_back({{"t_ms", b.t_ms}, {"unit", b.unit}, {"values", values}});
  }
  return Reply(200, Json{{"period_s", period_s}, {"datapoints", points_json}});
}

HttpResponse NativeApi::MetricData(const HttpRequest& request) const {
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  constexpr size_t kMaxDepth = 64;
  if (JsonNestingDepth(request.body, kMaxDepth) > kMaxDepth) {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("the body nests JSON deeper than %d levels", kMaxDepth));
  }
  nlohmann::json tree = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!tree.is_object()) {
    return Error(400, "InvalidArgument",
                 "the body must be a JSON object: GetMetricData's input as AWS JSON 1.0 sends "
                 "it (MetricDataQueries, StartTime, EndTime in epoch seconds; docs/api.md)");
  }
  // The CloudWatch operation itself, so that both answer alike (math included).
  cloudwatch::Context context{clock_.NowMs(), "", ""};
  absl::StatusOr<cloudwatch::GetMetricDataRequest> decoded =
      cloudwatch::DecodeGetMetricData(Node(tree, Syntax::kJson, PathStyle::kQuery), context);
  if (!decoded.ok()) return FromStatus(decoded.status());
  absl::StatusOr<cloudwatch::GetMetricDataResponse> answer =
      cloudwatch::RunGetMetricData(*decoded, context, backends_);
  if (!answer.ok()) return FromStatus(answer.status());
  HttpResponse r;
  r.status = 200;
  r.headers.Add("Content-Type", "application/json");
  r.body = cloudwatch::EncodeJson(*answer);
  r.body.push_back('\n');
  return r;
}

HttpResponse NativeApi::LogGroups(const HttpRequest& request) const {
  if (backends_.logs == nullptr) return NoBackend("log store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  const std::string* prefix = Param(*params, "prefix");
  absl::StatusOr<std::vector<LogGroupInfo>> groups =
      backends_.logs->ListLogGroups(prefix ? *prefix : "");
  if (!groups.ok()) return FromStatus(groups.status());
  Json items = Json::array();
  for (const LogGroupInfo& g : *groups) {
    items.push_back({{"name", g.name}, {"creation_ms", g.creation_ms},
                     {"stored_bytes", g.stored_bytes}});
  }
  return Reply(200, Json{{"groups", items}});
}

HttpResponse NativeApi::LogStreams(const HttpRequest& request) const {
  if (backends_.logs == nullptr) return NoBackend("log store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  const std::string* group = Param(*params, "group");
  if (group == nullptr) return Error(400, "InvalidArgument", "query parameter group is required");
  const std::string* prefix = Param(*params, "prefix");
  absl::StatusOr<std::vector<LogStreamInfo>> streams =
      backends_.logs->ListLogStreams(*group, prefix ? *prefix : "");
  if (!streams.ok()) return FromStatus(streams.status());
  Json items = Json::array();
  for (const LogStreamInfo& s : *streams) {
    Json item{{"name", s.name}, {"creation_ms", s.creation_ms}};
    if (s.first_event_ms) item["first_event_ms"] = *s.first_event_ms;
    if (s.last_event_ms) item["last_event_ms"] = *s.last_event_ms;
    if (s.last_ingestion_ms) item["last_ingestion_ms"] = *s.last_ingestion_ms;
    items.push_back(std::move(item));
  }
  return Reply(200, Json{{"streams", items}});
}

bool NativeApi::IsStreamOfAJob(const model::LogStreamId& stream) const {
  if (stream.group != model::kTrainingJobsLogGroup || backends_.jobs == nullptr) return false;
  const size_t slash = stream.stream.find('/');
  if (slash == std::string::npos || slash == 0) return false;
  absl::StatusOr<std::optional<model::JobRecord>> job =
      backends_.jobs->GetJob(stream.stream.substr(0, slash));
  return job.ok() && job->has_value();
}

HttpResponse NativeApi::LogEvents(const HttpRequest& request) const {
  if (backends_.logs == nullptr) return NoBackend("log store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  int64_t now = clock_.NowMs();
  const std::string* group = Param(*params, "group");
  const std::string* stream = Param(*params, "stream");
  if (group == nullptr || stream == nullptr) {
    return Error(400, "InvalidArgument", "query parameters group and stream are required");
  }
  absl::StatusOr<int64_t> limit = IntParam(*params, "limit", 1000, 1, 10000);
  if (!limit.ok()) return FromStatus(limit.status());
  LogReadQuery query;
  query.stream = {*group, *stream};
  query.limit = static_cast<size_t>(*limit);
  // tail=1: the last `limit` events (before `before`, or `end`, or now), in
  // order; without it, the first ones (after `after`, or `start`).
  query.forward = true;
  if (const std::string* tail = Param(*params, "tail")) {
    if (*tail != "1" && *tail != "0") {
      return Error(400, "InvalidArgument",
                   absl::StrFormat("query parameter tail=%s: want 1 (the last lines) or 0", *tail));
    }
    query.forward = *tail == "0";
  }
  if (Param(*params, "start") != nullptr) {
    absl::StatusOr<int64_t> start = TimeParam(*params, "start", now, std::nullopt);
    if (!start.ok()) return FromStatus(start.status());
    query.start_ms = *start;
  }
  if (Param(*params, "end") != nullptr) {
    absl::StatusOr<int64_t> end = TimeParam(*params, "end", now, std::nullopt);
    if (!end.ok()) return FromStatus(end.status());
    query.end_ms = *end;
  }
  // "after" is the "next" of a previous answer: follow a stream by passing it
  // back. "before" is the "prev" of one, with tail=1: the lines before it.
  const std::string* after = Param(*params, "after");
  const std::string* before = Param(*params, "before");
  if (after != nullptr && before != nullptr) {
    return Error(400, "InvalidArgument",
                 "give after (to read on) or before (to read back, with tail=1), not both");
  }
  if (before != nullptr && query.forward) {
    return Error(400, "InvalidArgument", "query parameter before reads back: give tail=1 with it");
  }
  if (after != nullptr || before != nullptr) {
    const char direction = after != nullptr ? 'f' : 'b';
    const char* name = after != nullptr ? "after" : "before";
    absl::StatusOr<std::pair<char, LogPosition>> position = logs::ParsePositionToken(
        query.stream, after != nullptr ? *after : *before, "InvalidArgument",
        absl::StrFormat("query parameter %s is not the %s of an earlier answer for this stream",
                        name, after != nullptr ? "next" : "prev"));
    if (!position.ok()) {
      return Error(400, "InvalidArgument", std::string(MessageOf(position.status())));
    }
    if (position->first != direction) {
      return Error(400, "InvalidArgument",
                   absl::StrFormat("query parameter %s is not the %s of an answer of this API",
                                   name, after != nullptr ? "next" : "prev"));
    }
    query.from = position->second;
  }
  absl::StatusOr<std::vector<StoredLogEvent>> events = backends_.logs->ReadLogStream(query);
  if (absl::IsNotFound(events.status()) && IsStreamOfAJob(query.stream)) {
    // A job that has printed nothing yet (or whose rules found nothing):
    // its page follows the stream from the start.
    events = std::vector<StoredLogEvent>{};
  }
  if (!events.ok()) return FromStatus(events.status());
  Json items = Json::array();
  for (const StoredLogEvent& e : *events) {
    items.push_back({{"t_ms", e.position.t_ms}, {"ingestion_ms", e.ingestion_ms},
                     {"message", e.message}});
  }
  // next: after the last event (a page read back that holds none reads on
  // from where it was asked to end). prev: at the first event.
  LogPosition next = query.from.value_or(LogPosition{0, 0});
  Json answer{{"events", items}};
  if (!events->empty()) {
    next = events->back().position;
    next.seq += 1;
    answer["prev"] = logs::PositionToken(query.stream, 'b', events->front().position);
  }
  answer["next"] = logs::PositionToken(query.stream, 'f', next);
  return Reply(200, answer);
}

HttpResponse NativeApi::Jobs(const HttpRequest& request) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  const std::string* status = Param(*params, "status");
  if (status != nullptr && !model::ParseJobStatus(*status)) {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("status=%s: want InProgress, Completed, Failed, Stopping or "
                                 "Stopped",
                                 *status));
  }
  const std::string* contains = Param(*params, "name_contains");
  absl::StatusOr<std::vector<model::JobRecord>> jobs = backends_.jobs->ListJobs();
  if (!jobs.ok()) return FromStatus(jobs.status());
  query::ListJobsRequest list;
  if (status != nullptr) list.status = model::ParseJobStatus(*status);
  if (contains != nullptr) list.name_contains = *contains;
  list.sort_by = query::JobSortBy::kCreationTime;
  list.descending = true;  // newest first
  list.unbounded = true;
  absl::StatusOr<query::ListJobsResponse> listed = query::ListJobs(*std::move(jobs), list);
  if (!listed.ok()) return FromStatus(listed.status());
  Json items = Json::array();
  for (const model::JobRecord& job : listed->jobs) {
    Json item{{"name", job.name},
              {"status", std::string(model::JobStatusName(job.status))},
              {"secondary_status", std::string(model::SecondaryStatusName(job.secondary_status))},
              {"creation_ms", job.creation_ms},
              {"last_modified_ms", job.last_modified_ms}};
    if (job.training_end_ms) item["training_end_ms"] = *job.training_end_ms;
    items.push_back(std::move(item));
  }
  return Reply(200, Json{{"jobs", items}});
}

HttpResponse NativeApi::Job(const std::string& name) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return FromStatus(job.status());
  if (!*job) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  return Reply(200, JobJson(**job));
}

HttpResponse NativeApi::StopJob(const std::string& name) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  absl::Status stopped = backends_.jobs->StopJob(name);
  if (absl::IsNotFound(stopped)) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  if (!stopped.ok()) return FromStatus(stopped);
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok() || !*job) return Reply(200, Json{{"name", name}});
  return Reply(200, JobJson(**job));
}

}  // namespace trainwatch::api
