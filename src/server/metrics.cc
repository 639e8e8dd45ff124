#include "server/metrics.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"

namespace trainwatch::server {

void ServerMetrics::Request(int status, uint64_t bytes_in, uint64_t bytes_out, double seconds) {
  requests_total_.fetch_add(1, std::memory_order_relaxed);
  int cls = status / 100;
  by_class_[(cls >= 1 && cls <= 5) ? cls - 1 : 5].fetch_add(1, std::memory_order_relaxed);
  bytes_in_.fetch_add(bytes_in, std::memory_order_relaxed);
  bytes_out_.fetch_add(bytes_out, std::memory_order_relaxed);
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) duration_buckets_[i].fetch_add(1, std::memory_order_relaxed);
  }
  duration_micros_.fetch_add(static_cast<uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

int64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long pages_total = 0, pages_resident = 0;
  int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  if (n != 2) return -1;
  return static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
}

std::string ServerMetrics::Render() const {
  auto load = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  std::string out;
  out += "# HELP trainwatch_http_requests_total HTTP requests answered, by status class.\n";
  out += "# TYPE trainwatch_http_requests_total counter\n";
  static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
  for (size_t i = 0; i < 6; ++i) {
    out += absl::StrFormat("trainwatch_http_requests_total{code=\"%s\"} %d\n", kClasses[i],
                           load(by_class_[i]));
  }
  out += "# HELP trainwatch_http_request_duration_seconds Time from the end of the request to "
         "the response being written.\n";
  out += "# TYPE trainwatch_http_request_duration_seconds histogram\n";
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    out += absl::StrFormat("trainwatch_http_request_duration_seconds_bucket{le=\"%g\"} %d\n",
                           kBuckets[i], load(duration_buckets_[i]));
  }
  out += absl::StrFormat("trainwatch_http_request_duration_seconds_bucket{le=\"+Inf\"} %d\n",
                         load(requests_total_));
  out += absl::StrFormat("trainwatch_http_request_duration_seconds_sum %.6f\n",
                         static_cast<double>(load(duration_micros_)) / 1e6);
  out += absl::StrFormat("trainwatch_http_request_duration_seconds_count %d\n",
                         load(requests_total_));
  out += "# HELP trainwatch_http_request_bytes_total Request bytes received (bodies as sent).\n";
  out += "# TYPE trainwatch_http_request_bytes_total counter\n";
  out += absl::StrFormat("trainwatch_http_request_bytes_total %d\n", load(bytes_in_));
  out += "# HELP trainwatch_http_response_bytes_total Response body bytes sent (streams included).\n";
  out += "# TYPE trainwatch_http_response_bytes_total counter\n";
  out += absl::StrFormat("trainwatch_http_response_bytes_total %d\n", load(bytes_out_));
  out += "# HELP trainwatch_http_connections_open Connections open now.\n";
  out += "# TYPE trainwatch_http_connections_open gauge\n";
  out += absl::StrFormat("trainwatch_http_connections_open %d\n",
                         connections_open_.load(std::memory_order_relaxed));
  out += "# HELP trainwatch_http_connections_total Connections accepted.\n";
  out += "# TYPE trainwatch_http_connections_total counter\n";
  out += absl::StrFormat("trainwatch_http_connections_total %d\n", load(connections_total_));
  out += "# HELP trainwatch_http_connections_rejected_total Connections closed at once because "
         "the connection cap was reached.\n";
  out += "# TYPE trainwatch_http_connections_rejected_total counter\n";
  out += absl::StrFormat("trainwatch_http_connections_rejected_total %d\n",
                         load(connections_rejected_));
  out += "# HELP trainwatch_http_timeouts_total Connections closed by a deadline, by phase.\n";
  out += "# TYPE trainwatch_http_timeouts_total counter\n";
  static constexpr const char* kPhases[] = {"idle", "header", "body", "write"};
  for (int i = 0; i < 4; ++i) {
    out += absl::StrFormat("trainwatch_http_timeouts_total{phase=\"%s\"} %d\n", kPhases[i],
                           load(timeouts_[i]));
  }
  out += "# HELP trainwatch_http_malformed_requests_total Requests that were not valid HTTP/1.1.\n";
  out += "# TYPE trainwatch_http_malformed_requests_total counter\n";
  out += absl::StrFormat("trainwatch_http_malformed_requests_total %d\n", load(malformed_));
  out += "# HELP trainwatch_http_too_large_total Requests refused for their size (413, 431).\n";
  out += "# TYPE trainwatch_http_too_large_total counter\n";
  out += absl::StrFormat("trainwatch_http_too_large_total %d\n", load(too_large_));
  out += "# HELP trainwatch_http_streams_open Streaming responses (GET /api/v1/live) open now.\n";
  out += "# TYPE trainwatch_http_streams_open gauge\n";
  out += absl::StrFormat("trainwatch_http_streams_open %d\n",
                         streams_open_.load(std::memory_order_relaxed));
  out += "# HELP trainwatch_http_streams_total Streaming responses started.\n";
  out += "# TYPE trainwatch_http_streams_total counter\n";
  out += absl::StrFormat("trainwatch_http_streams_total %d\n", load(streams_total_));
  out += "# HELP process_resident_memory_bytes Resident memory size in bytes.\n";
  out += "# TYPE process_resident_memory_bytes gauge\n";
  out += absl::StrFormat("process_resident_memory_bytes %d\n", ResidentBytes());
  return out;
}

}  // namespace trainwatch::server
