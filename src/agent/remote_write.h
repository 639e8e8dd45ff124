#pragma once
// RemoteWriteOut: every sample a server ingests, sent on to a Prometheus
// remote-write receiver (Prometheus with --web.enable-remote-write-receiver,
// VictoriaMetrics, Mimir, Thanos Receive; docs/prometheus.md "Remote write
// out"). Series are named as /metrics?job= names them (model/prometheus_names.h:
// the job's dimensions become labels).
//
// The way out is a durable queue in the data folder (agent/spool.h): the
// observer call only encodes into a buffer; a thread moves the buffer to the
// queue every flush interval (fdatasync), and a sender posts the queue's
// records in order (remote-write 1.0: protobuf WriteRequest, snappy), each
// until the receiver takes it. A receiver that is down, slow or misconfigured
// costs delay, not samples: connection errors and every answer but 2xx, 400
// and 413 are retried with backoff (capped), for as long as it takes (a 401
// after a token changed, a 404 for a wrong path: the queue waits for the fix);
// records stay on disk across restarts of either side and are sent in their
// order. A 400 or 413 refuses the request's samples: Prometheus refuses a
// whole request for one sample out of order, so a refused request of several
// series is sent again one series a request, and only the series refused
// again are dropped (logged and counted). What was in the buffer at a crash
// (at most a flush interval's samples, which the store has) is not sent.
//
// Thread-safe: OnSamples may be called from any thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/spool.h"
#include "model/sinks.h"
#include "util/mutex.h"

namespace trainwatch::agent {

struct RemoteWriteOptions {
  // http://[user:password@]host:port/path (user and password: basic auth).
  std::string url;
  // Sent with every request, "Name: value" (e.g. "Authorization: Bearer ...").
  std::vector<std::string> headers;
  std::string queue_dir;                  // the durable queue (created)
  int64_t max_queue_bytes = 1LL << 30;    // beyond it, new samples are dropped and counted
  int64_t flush_ms = 200;                 // buffer -> queue at least this often
  size_t max_buffer_bytes = 4 << 20;      // ... or when the buffer holds this much
  int64_t timeout_ms = 10'000;            // per request (a stop waits for one at most)
  int64_t max_backoff_ms = 30'000;
};

// A WriteRequest's timeseries for `batch` (protobuf, uncompressed), appended
// to *out: WriteRequests concatenate, so buffered batches make one request.
// Plain samples as they are; PutMetricData's Values/Counts each value once;
// statistic sets their average (sum / count). Each series' samples in time
// order, one a timestamp (the last given), as receivers require.
void AppendWriteRequest(const model::SampleBatch& batch, std::string* out);

// The WriteRequest's timeseries, one request each (uncompressed).
std::vector<std::string> SplitWriteRequest(std::string_view request);

// `url` without user and password ("http://u:p@h/x" -> "http://h/x"), for
// logs, labels and the queue's folder name.
std::string WithoutUserInfo(std::string_view url);

class RemoteWriteOut final : public model::IngestObserver {
 public:
  // Opens the queue (its lock: one server per queue) and starts the threads.
  static absl::StatusOr<std::unique_ptr<RemoteWriteOut>> Create(RemoteWriteOptions options);
  // Moves the buffer to the queue, then stops; what is not sent stays queued.
  ~RemoteWriteOut() override;

  void OnSamples(const model::SampleBatch& batch) override;

  struct Stats {
    uint64_t samples_queued = 0;   // moved to the durable queue
    uint64_t samples_dropped = 0;  // queue full
    uint64_t requests_sent = 0;    // taken by the receiver
    uint64_t requests_refused = 0; // 4xx: dropped
    uint64_t retries = 0;
    int64_t queue_bytes = 0;       // on disk, not yet taken
  };
  Stats GetStats() const;
  // The receiver's URL without user and password.
  const std::string& url() const { return shown_url_; }

 private:
  RemoteWriteOut(RemoteWriteOptions options, std::unique_ptr<Spool> queue);
  void FlushLoop(std::stop_token stop);
  void SendLoop(std::stop_token stop);
  void Flush();

  const RemoteWriteOptions options_;
  const std::string shown_url_;
  std::unique_ptr<Spool> queue_;
  util::Mutex mu_;
  std::condition_variable_any wake_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  uint64_t buffer_samples_ ABSL_GUARDED_BY(mu_) = 0;
  util::Mutex flush_mu_;  // one Flush at a time, so records keep their order
  std::atomic<uint64_t> samples_queued_{0}, samples_dropped_{0}, requests_sent_{0},
      requests_refused_{0}, retries_{0};
  std::jthread flusher_;
  std::jthread sender_;  // last: stops first
};

}  // namespace trainwatch::agent
