#pragma once
// ServerMetrics: the HTTP server's own health counters, part of /metrics
// (the Prometheus text format; the process's other parts add theirs:
// api/metrics_page.h). Lock-free; updated from every server thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "util/prom_text.h"

namespace trainwatch::server {

class ServerMetrics {
 public:
  void ConnectionOpened() {
    connections_total_.fetch_add(1, std::memory_order_relaxed);
    connections_open_.fetch_add(1, std::memory_order_relaxed);
  }
  void ConnectionClosed() { connections_open_.fetch_sub(1, std::memory_order_relaxed); }
  void ConnectionRejected() { connections_rejected_.fetch_add(1, std::memory_order_relaxed); }
  void Timeout(int phase) { timeouts_[phase].fetch_add(1, std::memory_order_relaxed); }
  void Malformed() { malformed_.fetch_add(1, std::memory_order_relaxed); }
  void TooLarge() { too_large_.fetch_add(1, std::memory_order_relaxed); }
  // Streaming responses (Server-Sent Events): opened, closed, bytes written.
  void StreamOpened() {
    streams_total_.fetch_add(1, std::memory_order_relaxed);
    streams_open_.fetch_add(1, std::memory_order_relaxed);
  }
  void StreamClosed() { streams_open_.fetch_sub(1, std::memory_order_relaxed); }
  void StreamBytes(uint64_t n) { bytes_out_.fetch_add(n, std::memory_order_relaxed); }
  int64_t streams_open() const { return streams_open_.load(std::memory_order_relaxed); }
  // One answered request: status, bytes in/out, handling time.
  void Request(int status, uint64_t bytes_in, uint64_t bytes_out, double seconds);

  int64_t connections_open() const { return connections_open_.load(std::memory_order_relaxed); }
  uint64_t requests() const { return requests_total_.load(std::memory_order_relaxed); }
  uint64_t timeouts(int phase) const { return timeouts_[phase].load(std::memory_order_relaxed); }
  uint64_t rejected() const { return connections_rejected_.load(std::memory_order_relaxed); }
  uint64_t connections() const { return connections_total_.load(std::memory_order_relaxed); }

  // Timeout phases.
  static constexpr int kIdle = 0, kHeader = 1, kBody = 2, kWrite = 3;

  // Writes these counters and the process's resident memory.
  void Write(util::PromText* out) const;

 private:
  std::atomic<int64_t> connections_open_{0};
  std::atomic<uint64_t> connections_total_{0};
  std::atomic<uint64_t> connections_rejected_{0};
  std::array<std::atomic<uint64_t>, 4> timeouts_{};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> too_large_{0};
  std::atomic<int64_t> streams_open_{0};
  std::atomic<uint64_t> streams_total_{0};
  std::atomic<uint64_t> requests_total_{0};
  std::array<std::atomic<uint64_t>, 6> by_class_{};  // 1xx..5xx, other
  std::atomic<uint64_t> bytes_in_{0};
  std::atomic<uint64_t> bytes_out_{0};
  util::Histogram duration_;
};

// Resident set size of this process in bytes (from /proc/self/statm), or -1.
int64_t ResidentBytes();

}  // namespace trainwatch::server
