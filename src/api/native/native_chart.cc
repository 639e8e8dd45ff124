// NativeApi: the dashboard's chart data (docs/api.md, "Dashboard"): the
// series of a job, and the M4 points that draw one series at any zoom.
#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/form.h"
#include "api/native/native_api.h"
#include "api/native/native_util.h"
#include "model/job_events.h"

namespace trainwatch::api {

using namespace native_internal;

namespace {

// The dimension of instance metrics (profiler/metric_names.h's kHostDim,
// which api/ does not include): "<job>/algo-<n>".
constexpr std::string_view kHostDim = "Host";

std::string TierName(int64_t period_s) {
  return period_s == 0 ? "raw" : absl::StrFormat("%ds", period_s);
}

}  // namespace

HttpResponse NativeApi::JobSeries(const std::string& name) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return FromStatus(job.status());
  if (!*job) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  // Algorithm metrics carry the job's name; instance metrics its hosts'.
  std::vector<std::pair<std::string, ListMetricsQuery>> queries;
  ListMetricsQuery by_job;
  by_job.dimensions.push_back({std::string(model::kTrainingJobNameDim), (*job)->name});
  queries.emplace_back("algorithm", std::move(by_job));
  for (const model::JobRecord& host : model::HostRecords(**job)) {
    ListMetricsQuery by_host;
    by_host.dimensions.push_back({std::string(kHostDim), host.HostName()});
    queries.emplace_back("system", std::move(by_host));
  }
  Json items = Json::array();
  std::set<model::SeriesKey> seen;
  for (auto& [group, q] : queries) {
    q.limit = std::numeric_limits<size_t>::max();
    absl::StatusOr<std::vector<query::SeriesInfo>> series = backends_.metrics->ListSeries(q);
    if (!series.ok()) return FromStatus(series.status());
    for (const query::SeriesInfo& s : *series) {
      if (!seen.insert(s.key).second) continue;
      Json item{{"namespace", s.key.ns},
                {"metric", s.key.metric},
                {"dimensions", DimensionsJson(s.key.dimensions)},
                {"unit", s.key.unit},
                {"group", group}};
      item["last_ms"] = s.last ? Json(s.last->t_ms) : Json(nullptr);
      item["last_value"] = s.last ? Json(s.last->value) : Json(nullptr);
      items.push_back(std::move(item));
    }
  }
  return Reply(200, Json{{"series", std::move(items)}});
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
  absl::StatusOr<int64_t> start = TimeParam(*params, "start", now, now - 3600000);
  if (!start.ok()) return FromStatus(start.status());
  absl::StatusOr<int64_t> end = TimeParam(*params, "end", now, now);
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
