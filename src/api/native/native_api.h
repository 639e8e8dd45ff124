#pragma once
// NativeApi: trainwatch's own JSON API under /api/v1/ (documented in
// docs/api.md): health, batch ingest of samples (the agents' path), and
// queries of metrics, logs and jobs. Pure HttpRequest -> HttpResponse over
// the same Backends as the AWS endpoints. Thread-safe.
//
// Errors: {"error": {"code": "...", "message": "..."}} with 400 (bad input),
// 404 (no such route or resource), 405, 409 (conflict), 413, 503 (no backend
// or overloaded) or 500.

#include <cstdint>
#include <string>

#include "api/backend.h"
#include "api/http.h"
#include "util/clock.h"

namespace trainwatch::api {

struct NativeOptions {
  std::string version = "unknown";
  // Body limits as received and after gunzip (POST /api/v1/samples).
  size_t max_body_bytes = 8 * 1048576;
  size_t max_decompressed_bytes = 64 * 1048576;
  // The most samples one ingest request may carry.
  size_t max_samples_per_request = 1000000;
  // The most samples one answer of GET /api/v1/jobs/NAME/samples holds (some
  // 40 MB of JSON); more are paged by time (`next_start`).
  size_t max_samples_per_answer = 1000000;
  // Whether GET /api/v1/live carries data: false for a server that only
  // follows a data folder another process writes (its stream sends pings).
  bool live_updates = true;
};

class NativeApi {
 public:
  // `clock` must outlive the NativeApi.
  NativeApi(NativeOptions options, Backends backends, const util::Clock& clock);

  // Any request whose path starts with /api/v1/.
  HttpResponse Handle(const HttpRequest& request) const;

  // The body limit for a request (by its headers), for the server.
  size_t BodyLimit() const { return options_.max_body_bytes; }
  // 413 in this API's error shape.
  HttpResponse TooLarge(size_t limit_bytes) const;

 private:
  HttpResponse Health() const;
  HttpResponse IngestSamples(const HttpRequest& request) const;
  HttpResponse Deliver(const HttpRequest& request) const;
  HttpResponse Heartbeat(const HttpRequest& request) const;
  HttpResponse ListMetrics(const HttpRequest& request) const;
  HttpResponse Statistics(const HttpRequest& request) const;
  HttpResponse MetricData(const HttpRequest& request) const;
  HttpResponse RemoteWrite(const HttpRequest& request) const;
  HttpResponse LogGroups(const HttpRequest& request) const;
  HttpResponse LogStreams(const HttpRequest& request) const;
  HttpResponse LogEvents(const HttpRequest& request) const;
  // A stream "JOB/..." of the training jobs' log group, JOB a job that
  // exists: one that holds no event yet reads as empty, not as missing.
  bool IsStreamOfAJob(const model::LogStreamId& stream) const;
  HttpResponse Jobs(const HttpRequest& request) const;
  HttpResponse Job(const std::string& name) const;
  HttpResponse StopJob(const std::string& name) const;
  // The dashboard's chart data (native_chart.cc).
  HttpResponse JobSeries(const std::string& name) const;
  // GET /api/v1/jobs/NAME/samples: the raw samples of the job's own series.
  HttpResponse JobSamples(const std::string& name, const HttpRequest& request) const;
  HttpResponse Chart(const HttpRequest& request) const;
  HttpResponse Report(const std::string& name, const HttpRequest& request) const;

  NativeOptions options_;
  Backends backends_;
  const util::Clock& clock_;
};

}  // namespace trainwatch::api
