#include "api/prometheus/metrics_page.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "api/form.h"
#include "model/prometheus_names.h"
#include "query/jobs.h"

namespace trainwatch::api {

namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Add("Content-Type", status == 200 ? kContentType : "text/plain; charset=utf-8");
  r.body = std::move(body);
  return r;
}

}  // namespace

MetricsPage::MetricsPage(const Backends& backends, std::vector<Writer> health)
    : backends_(backends), health_(std::move(health)) {}

bool MetricsPage::Serves(const HttpRequest& request) {
  return request.Path() == "/metrics" && (request.method == "GET" || request.method == "HEAD");
}

HttpResponse MetricsPage::Handle(const HttpRequest& request, const Writer& first) const {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      DecodeFormPairs(request.Query());
  if (!params.ok()) {
    return Text(400, absl::StrFormat("/metrics: the query string is not valid: %s\n",
                                     params.status().message()));
  }
  const std::string* job = nullptr;
  for (const auto& [k, v] : *params) {
    if (k == "job") {
      if (job != nullptr) {
        return Text(400, "/metrics: give one job=NAME (scrape each job as a target of its own)\n");
      }
      job = &v;
    } else {
      return Text(400, absl::StrFormat(
                           "/metrics: unknown query parameter \"%s\"; /metrics takes job=NAME "
                           "for a job's latest metrics, or nothing for trainwatch's own\n",
                           k));
    }
  }
  if (job != nullptr) return Job(*job);
  util::PromText text;
  if (first) first(&text);
  for (const Writer& w : health_) w(&text);
  return Text(200, text.str());
}

HttpResponse MetricsPage::Job(const std::string& name) const {
  if (backends_.jobs == nullptr || backends_.metrics == nullptr) {
    return Text(501, "/metrics?job=: this server keeps no jobs\n");
  }
  if (name.empty()) return Text(400, "/metrics?job=: name the job (job=NAME)\n");
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return Text(500, absl::StrFormat("/metrics?job=%s: %s\n", name, job.status().message()));
  if (!*job) {
    return Text(404, absl::StrFormat(
                         "/metrics?job=%s: no training job of that name (names are listed by "
                         "GET /api/v1/jobs)\n",
                         name));
  }
  std::vector<std::pair<std::string, ListMetricsQuery>> queries = query::JobSeriesQueries(**job);
  // Families by name; in each, one sample per label set (two series that
  // name alike: the one with the newer value).
  using Labels = std::vector<std::pair<std::string, std::string>>;
  struct Point {
    Labels labels;  // in the naming rule's order
    int64_t t_ms;
    double value;
  };
  // Keyed by the labels sorted: renamed dimensions can give one label set
  // in two orders.
  std::map<std::string, std::map<Labels, Point>> families;
  std::set<model::SeriesKey> seen;
  for (auto& [group, q] : queries) {
    q.limit = std::numeric_limits<size_t>::max();
    absl::StatusOr<std::vector<query::SeriesInfo>> series = backends_.metrics->ListSeries(q);
    if (!series.ok()) {
      return Text(500, absl::StrFormat("/metrics?job=%s: %s\n", name, series.status().message()));
    }
    for (const query::SeriesInfo& s : *series) {
      if (!s.last || !seen.insert(s.key).second) continue;
      model::PrometheusSeries p = model::ToPrometheus(s.key);
      Labels key = p.labels;
      std::sort(key.begin(), key.end());
      Point point{std::move(p.labels), s.last->t_ms, s.last->value};
      auto [it, inserted] = families[p.name].try_emplace(std::move(key), point);
      if (!inserted && point.t_ms > it->second.t_ms) it->second = std::move(point);
    }
  }
  util::PromText text;
  text.Family("trainwatch_job_info", "gauge", "The training job this page is of, with its status.");
  text.Sample("trainwatch_job_info",
              {{"training_job", (*job)->name}, {"status", std::string(model::JobStatusName((*job)->status))}},
              1);
  for (const auto& [family, samples] : families) {
    // Never let a job's metric take the name of one of trainwatch's own.
    if (family == "trainwatch_job_info") continue;
    text.Family(family, "gauge", "The job's latest value (trainwatch).");
    for (const auto& [key, point] : samples) text.Sample(family, point.labels, point.value);
  }
  return Text(200, text.str());
}

}  // namespace trainwatch::api
