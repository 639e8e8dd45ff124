#pragma once
// MetricsPage: GET /metrics, for Prometheus and other scrapers (the text
// format, version 0.0.4).
//
//   /metrics            the process's health: what each `health` writer adds
//                       (the HTTP server's counters, ingest, the store, the
//                       rule engine, the live stream: app/serve.cc composes
//                       them)
//   /metrics?job=NAME   the job's latest value of each of its series: its
//                       algorithm metrics (dimension TrainingJobName=NAME) and
//                       its hosts' system metrics, named as
//                       model/prometheus_names.h says, without timestamps (a
//                       scrape records the value as of the scrape), and
//                       trainwatch_job_info{training_job,status} 1
//
// An unknown job is a 404, a bad query a 400, each with a one-line message
// saying what to do. docs/prometheus.md lists the health metrics.
//
// Thread-safe as the backends are.

#include <functional>
#include <vector>

#include "api/backend.h"
#include "api/http.h"
#include "util/prom_text.h"

namespace trainwatch::api {

class MetricsPage {
 public:
  using Writer = std::function<void(util::PromText*)>;

  // `backends.jobs` and `backends.metrics` serve ?job= (null: 501).
  MetricsPage(const Backends& backends, std::vector<Writer> health);

  static bool Serves(const HttpRequest& request);
  // `first` (may be empty) writes before the health writers (the server's
  // own counters, which only server/ sees).
  HttpResponse Handle(const HttpRequest& request, const Writer& first) const;

 private:
  HttpResponse Job(const std::string& name) const;

  Backends backends_;
  std::vector<Writer> health_;
};

}  // namespace trainwatch::api
