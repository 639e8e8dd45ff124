#include "server/metrics.h"

#include <unistd.h>

#include <cstdio>


namespace trainwatch::server {

void ServerMetrics::Request(int status, uint64_t bytes_in, uint64_t bytes_out, double seconds) {
  requests_total_.fetch_add(1, std::memory_order_relaxed);
  int cls = status / 100;
  by_class_[(cls >= 1 && cls <= 5) ? cls - 1 : 5].fetch_add(1, std::memory_order_relaxed);
  bytes_in_.fetch_add(bytes_in, std::memory_order_relaxed);
  bytes_out_.fetch_add(bytes_out, std::memory_order_relaxed);
  duration_.Observe(seconds);
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

void ServerMetrics::Write(util::PromText* out) const {
  auto load = [](const std::atomic<uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  auto gauge = [](const std::atomic<int64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  auto one = [out](std::string_view name, std::string_view type, std::string_view help, double v) {
    out->Family(name, type, help);
    out->Sample(name, {}, v);
  };
  out->Family("trainwatch_http_requests_total", "counter", "HTTP requests answered, by status class.");
  static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
  for (size_t i = 0; i < 6; ++i) {
    out->Sample("trainwatch_http_requests_total", {{"code", kClasses[i]}}, load(by_class_[i]));
  }
  out->Histogram("trainwatch_http_request_duration_seconds",
                 "Time from the end of the request to the response being written.", duration_);
  one("trainwatch_http_request_bytes_total", "counter", "Request bytes received (bodies as sent).",
      load(bytes_in_));
  one("trainwatch_http_response_bytes_total", "counter",
      "Response body bytes sent (streams included).", load(bytes_out_));
  one("trainwatch_http_connections_open", "gauge", "Connections open now.", gauge(connections_open_));
  one("trainwatch_http_connections_total", "counter", "Connections accepted.", load(connections_total_));
  one("trainwatch_http_connections_rejected_total", "counter",
      "Connections closed at once because the connection cap was reached.",
      load(connections_rejected_));
  out->Family("trainwatch_http_timeouts_total", "counter", "Connections closed by a deadline, by phase.");
  static constexpr const char* kPhases[] = {"idle", "header", "body", "write"};
  for (int i = 0; i < 4; ++i) {
    out->Sample("trainwatch_http_timeouts_total", {{"phase", kPhases[i]}}, load(timeouts_[i]));
  }
  one("trainwatch_http_malformed_requests_total", "counter",
      "Requests that were not valid HTTP/1.1.", load(malformed_));
  one("trainwatch_http_too_large_total", "counter", "Requests refused for their size (413, 431).",
      load(too_large_));
  one("trainwatch_http_streams_open", "gauge", "Streaming responses (GET /api/v1/live) open now.",
      gauge(streams_open_));
  one("trainwatch_http_streams_total", "counter", "Streaming responses started.", load(streams_total_));
  one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
      static_cast<double>(ResidentBytes()));
}

}  // namespace trainwatch::server
