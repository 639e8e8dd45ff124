// NativeApi: the dashboard's chart data (docs/api.md, "Dashboard"): the
// series of a job, and the M4 points that draw one series at any zoom.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <set>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/form.h"
#include "api/native/native_api.h"
#include "api/native/native_util.h"
#include "model/job_events.h"
#include "query/jobs.h"

namespace trainwatch::api {

using namespace native_internal;

namespace {

std::string TierName(int64_t period_s) {
  return period_s == 0 ? "raw" : absl::StrFormat("%ds", period_s);
}

// The dashboard speaks ms: an integer is ms since the epoch; anything else as
// /api/v1/metrics/statistics takes it (now-1h, ISO 8601, ...).
absl::StatusOr<int64_t> ChartTime(const Params& params, std::string_view name, int64_t now_ms,
                                  int64_t fallback) {
  const std::string* v = Param(params, name);
  std::string_view digits = v != nullptr ? std::string_view(*v) : std::string_view();
  if (!digits.empty() && digits[0] == '-') digits.remove_prefix(1);
  if (!digits.empty() &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    errno = 0;
    const long long ms = std::strtoll(v->c_str(), nullptr, 10);
    if (errno == ERANGE) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "query parameter %s=%s: want a time in ms since the epoch, now-1h or ISO 8601", name,
          *v));
    }
    return static_cast<int64_t>(ms);
  }
  return TimeParam(params, name, now_ms, fallback);
}

}  // namespace

HttpResponse NativeApi::JobSeries(const std::string& name) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return FromStatus(job.status());
  if (!*job) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  std::vector<std::pair<std::string, ListMetricsQuery>> queries = query::JobSeriesQueries(**job);
  Json items = Json::array();
  std::set<model::SeriesKey> seen;
  for (auto& [group, q] : queries) {
    q.limit = std::numeric_limits<size_t>::max();
    absl::StatusOr<std::vector<query::SeriesInfo>> series = backends_.metrics->ListSeries(q);
    if (!series.ok()) return FromStatus(series.status());
    for (const query::SeriesInfo& s : *series) {
      if (!seen.insert(s.key).second) continue;
      // The Python client's tensor statistics: a group of their own, which the
      // dashboard draws a chart per collection and statistic.
      const bool tensor = s.key.ns == model::kTensorsNamespace;
      Json item{{"namespace", s.key.ns},
                {"metric", s.key.metric},
                {"dimensions", DimensionsJson(s.key.dimensions)},
                {"unit", s.key.unit},
                {"group", tensor ? "tensors" : group}};
      item["last_ms"] = s.last ? Json(s.last->t_ms) : Json(nullptr);
      item["last_value"] = s.last ? Json(s.last->value) : Json(nullptr);
      items.push_back(std::move(item));
    }
  }
  return Reply(200, Json{{"series", std::move(items)}});
}

HttpResponse NativeApi::JobSamples(const std::string& name, const HttpRequest& request) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return FromStatus(job.status());
  if (!*job) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  ListMetricsQuery q;
  q.dimensions.push_back({std::string(model::kTrainingJobNameDim), (*job)->name});
  for (const char* filter : {"namespace", "metric"}) {
    if (const std::string* v = Param(*params, filter); v != nullptr && !v->empty()) {
      (std::string_view(filter) == "namespace" ? q.ns : q.metric) = *v;
    }
  }
  // By default the job's whole span (a minute either side: the clocks of the
  // senders and the runner may differ a little).
  const int64_t now = clock_.NowMs();
  absl::StatusOr<int64_t> start = ChartTime(*params, "start", now, (*job)->creation_ms - 60000);
  if (!start.ok()) return FromStatus(start.status());
  absl::StatusOr<int64_t> end = ChartTime(
      *params, "end", now, std::max(now, (*job)->training_end_ms.value_or(now)) + 60000);
  if (!end.ok()) return FromStatus(end.status());
  if (*start >= *end) {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("query parameter start (%d ms) must be before end (%d ms)",
                                 *start, *end));
  }
  absl::StatusOr<std::vector<query::RawSeries>> raw = backends_.metrics->ReadRaw(q, *start, *end, {});
  if (!raw.ok()) return FromStatus(raw.status());
  // An answer holds at most max_samples_per_answer samples: those before the time
  // `next_start`, which the next request gives as its start.
  std::vector<int64_t> times;
  for (const query::RawSeries& series : *raw) {
    for (const model::Sample& s : series.samples) times.push_back(s.t_ms);
  }
  std::optional<int64_t> cut;
  const size_t most = std::max<size_t>(1, options_.max_samples_per_answer);
  if (times.size() > most) {
    std::nth_element(times.begin(), times.begin() + static_cast<ptrdiff_t>(most), times.end());
    cut = times[most];
    if (cut <= *start) cut = *start + 1;  // more samples at one ms than fit: go on after it
  }
  Json items = Json::array();
  for (const query::RawSeries& series : *raw) {
    Json t = Json::array();
    Json v = Json::array();
    for (const model::Sample& s : series.samples) {
      if (cut && s.t_ms >= *cut) break;
      t.push_back(s.t_ms);
      v.push_back(s.value);
    }
    if (t.empty()) continue;
    items.push_back(Json{{"namespace", series.key.ns},
                         {"metric", series.key.metric},
                         {"dimensions", DimensionsJson(series.key.dimensions)},
                         {"unit", series.key.unit},
                         {"t_ms", std::move(t)},
                         {"values", std::move(v)}});
  }
  Json body{{"series", std::move(items)}};
  if (cut) body["next_start"] = *cut;
  return Reply(200, body);
}

HttpResponse NativeApi::Chart(const HttpRequest& request) const {
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  auto bad = [](std::string message) { return Error(400, "InvalidArgument", message); };
  const int64_t now = clock_.NowMs();
  query::ChartQuery q;
  for (const char* name : {"namespace", "metric"}) {
    const std::string* v = Param(*params, name);
    if (v == nullptr || v->empty()) {
      return bad(absl::StrFormat(
          "query parameter %s is required: the %s of the series to chart (GET "
          "/api/v1/jobs/NAME/series lists them)",
          name, name));
    }
    (std::string_view(name) == "namespace" ? q.metric.ns : q.metric.metric) = *v;
  }
  for (const DimensionFilter& d : DimensionParams(*params)) {
    if (!d.value || d.name.empty() || d.value->empty()) {
      return bad(absl::StrFormat(
          "query parameter dimension=%s: want Name=Value, one per dimension of the series",
          d.value ? d.name + "=" + *d.value : d.name));
    }
    for (const model::Dimension& seen : q.metric.dimensions) {
      if (seen.name == d.name) {
        return bad(absl::StrFormat(
            "query parameter dimension names %s twice; a series has one value per dimension",
            d.name));
      }
    }
    q.metric.dimensions.push_back({d.name, *d.value});
  }
  std::sort(q.metric.dimensions.begin(), q.metric.dimensions.end());
  if (const std::string* unit = Param(*params, "unit")) {
    if (unit->empty()) {
      return bad("query parameter unit is empty: name a unit (e.g. Percent), or leave it out "
                 "to merge every unit");
    }
    q.unit = *unit;
  }
  absl::StatusOr<int64_t> start = ChartTime(*params, "start", now, now - 3600000);
  if (!start.ok()) return FromStatus(start.status());
  absl::StatusOr<int64_t> end = ChartTime(*params, "end", now, now);
  if (!end.ok()) return FromStatus(end.status());
  if (*start >= *end) {
    return bad(absl::StrFormat("query parameter start (%d ms) must be before end (%d ms)",
                               *start, *end));
  }
  q.start_ms = *start;
  q.end_ms = *end;
  absl::StatusOr<int64_t> width = IntParam(*params, "width", 800, 1, query::kMaxChartWidth);
  if (!width.ok()) {
    return bad(absl::StrFormat("%s (pixel columns of the chart)", MessageOf(width.status())));
  }
  q.width = static_cast<int>(*width);
  const std::string* x = Param(*params, "x");
  if (x != nullptr && *x != "time" && *x != "step") {
    return bad(absl::StrFormat("query parameter x=%s: want time or step", *x));
  }
  if (x != nullptr && *x == "step") {
    q.x = query::ChartX::kStep;
    const std::string* job = Param(*params, "job");
    if (job == nullptr || job->empty()) {
      return bad("query parameter job is required with x=step: the job whose step metric "
                 "numbers the steps");
    }
    q.job = *job;
  }
  absl::StatusOr<query::ChartAnswer> a = backends_.metrics->Chart(q);
  if (!a.ok()) return FromStatus(a.status());
  Json body{{"x_kind", a->x_kind == query::ChartX::kStep ? "step" : "time"},
            {"start", a->x_start},
            {"end", a->x_end},
            {"column", a->column},
            {"tier", TierName(a->tier_period_s)},
            {"raw", a->raw},
            {"x", a->x},
            {"y", a->y},
            {"t", a->t}};
  return Reply(200, body);
}

}  // namespace trainwatch::api
