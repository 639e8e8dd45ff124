#pragma once
// RemoteSink: the agent side of `trainwatch run` when a server takes the
// data (a server that holds the data folder, or --endpoint). Implements
// model::TelemetrySink over HTTP with a durable spool in between:
//
//   runner ──Put/PutLogs/UpdateJob──▶ Spool (fdatasync) ──sender thread──▶ POST /api/v1/agent/deliver
//
// The sender keeps one connection open and compresses each batch with snappy
// when the server's health lists it (servers before that took JSON only).
//
// Every batch gets the agent's next seq; the server writes each (agent, seq)
// once (store::Delivery), so resending after a lost answer, a timeout or a
// server restart never duplicates. While the server is unreachable the
// sender retries with backoff (100 ms doubling to 5 s); the runner and the
// training process never wait for the network, only for the local disk.
//
// CreateJob waits for the server's answer (a name that exists must stop the
// run before the command starts); GetJob asks the server directly.
//
// Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <stop_token>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "agent/spool.h"
#include "api/native/agent_wire.h"
#include "model/sinks.h"
#include "util/mutex.h"

namespace trainwatch::agent {

struct RemoteSinkOptions {
  std::string endpoint;   // "http://127.0.0.1:9400"
  std::string spool_dir;  // created; one per agent
  std::string agent;      // unique name of this agent (see NewAgentName)
  int64_t spool_max_bytes = 1LL << 30;
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 30000;
  int64_t create_timeout_ms = 30000;  // CreateJob's wait for the server
  // Send batches snappy-compressed (Content-Encoding: snappy) to a server
  // whose GET /api/v1/health lists snappy in content_encodings.
  bool compress = true;
  // The server was found through the data folder the spool is in (its
  // server.json): a server started there later takes what is left. Otherwise
  // (--endpoint) that is another server's: `trainwatch admin deliver` sends
  // it on (ReadSpoolTarget).
  bool server_of_data_folder = false;
};

// Where a spool's batches go, as RemoteSink::Create wrote it in the spool's
// `target` file; nullopt for a spool without one (written before it was).
struct SpoolTarget {
  std::string endpoint;
  bool server_of_data_folder = false;
};
std::optional<SpoolTarget> ReadSpoolTarget(const std::string& spool_dir);

// "<hostname>-<pid>-<random>": unique per run.
std::string NewAgentName();

// One HTTP exchange, for the sender and for tests: status 0 when the server
// could not be reached (`error` says why).
struct HttpResult {
  long status = 0;
  std::string body;
  std::string error;
  // The answer's headers, names lower-cased, in the order received.
  std::vector<std::pair<std::string, std::string>> headers;
  // The first header named `name` (lower case), or nullptr.
  const std::string* Header(std::string_view name) const;
};
HttpResult HttpCall(const std::string& method, const std::string& url, const std::string& body,
                    int64_t connect_timeout_ms, int64_t timeout_ms);

// HTTP exchanges one after another over one connection, kept open between
// them while the server keeps it (libcurl reconnects when it did not). One
// thread at a time.
class HttpClient {
 public:
  HttpClient() = default;
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // `method`: GET, HEAD, POST, PUT or DELETE (the body is sent with POST and
  // PUT). `content_encoding`, when not empty, is sent as the body's
  // Content-Encoding (the caller encoded it).
  HttpResult Call(const std::string& method, const std::string& url, std::string_view body,
                  int64_t connect_timeout_ms, int64_t timeout_ms,
                  std::string_view content_encoding = "");
  // The same with the request's headers given: `headers` ("Name: value") are
  // added; `sign`: with the environment's AWS credentials (to a trainwatch
  // server; never to another system: a caller that signs for another
  // service puts its own signature in `extra`).
  struct Headers {
    std::string_view content_type = "application/json";
    std::string_view content_encoding;
    std::vector<std::string> extra;
    bool sign = true;
  };
  HttpResult Call(const std::string& method, const std::string& url, std::string_view body,
                  int64_t connect_timeout_ms, int64_t timeout_ms, const Headers& headers);

 private:
  void* handle_ = nullptr;  // CURL*, made on the first call
};

class RemoteSink final : public model::TelemetrySink {
 public:
  static absl::StatusOr<std::unique_ptr<RemoteSink>> Create(RemoteSinkOptions options);
  ~RemoteSink() override;  // stops the sender; what is not delivered stays spooled

  absl::Status Put(const model::SampleBatch& batch) override;
  absl::Status PutLogs(const model::LogBatch& batch) override;
  absl::Status CreateJob(const model::JobRecord& job) override;
  absl::Status UpdateJob(const model::JobRecord& job) override;
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name) override;

  // POST /api/v1/agent/heartbeat: tells the server this runner of host `host`
  // of `job` is alive; true when a stop was asked of it (agent/stop_watcher.h).
  absl::StatusOr<bool> Heartbeat(const std::string& job, int host,
                                 const model::RunnerIdentity& runner);

  // Waits until every spooled batch is delivered, or `timeout_ms` passes;
  // calls `progress(pending, last_error)` about once a second while it waits.
  // True when everything was delivered.
  bool Drain(int64_t timeout_ms,
             const std::function<void(int64_t pending, const std::string& last_error)>& progress);

  // False while the server has taken nothing from this sink, such as a job
  // record that CreateJob gave up on: that job never started.
  bool delivered_any() {
    util::MutexLock lock(mu_);
    return delivered_seq_ > 0;
  }
  int64_t pending() const { return spool_->pending(); }
  const std::string& spool_dir() const { return spool_->dir(); }
  const std::string& endpoint() const { return options_.endpoint; }

 private:
  RemoteSink(RemoteSinkOptions options, std::unique_ptr<Spool> spool);
  absl::StatusOr<int64_t> Enqueue(api::AgentBatch batch);
  void SendLoop(std::stop_token stop);

  const RemoteSinkOptions options_;
  std::unique_ptr<Spool> spool_;

  // Heartbeats (about one a second) keep a connection of their own open.
  util::Mutex heartbeat_mu_;
  HttpClient heartbeat_client_ ABSL_GUARDED_BY(heartbeat_mu_);

  util::Mutex mu_;
  std::condition_variable delivered_cv_;
  int64_t delivered_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // A batch the server refused for good (4xx): seq and why, for CreateJob.
  std::map<int64_t, absl::Status> refused_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  // The last answer refused the agent's credentials (401, 403).
  bool credentials_refused_ ABSL_GUARDED_BY(mu_) = false;

  // Last: stopped and joined before the members the sender uses are
  // destroyed. Its stop token interrupts the spool's wait and the backoff.
  std::jthread sender_;
};

// Delivers a spool left behind by an agent that is gone (its lock is free)
// straight to `deliver` (the server's own api::AgentBackend::Deliver), in
// order, then removes it. A batch that `deliver` refuses with
// InvalidArgument, AlreadyExists or NotFound is dropped with a warning; any
// other error stops the delivery and keeps the rest of the spool for the
// next try. Returns the number of batches delivered; FailedPrecondition when
// the spool belongs to a live agent.
using DeliverFn = std::function<absl::StatusOr<bool>(const api::AgentBatch& batch)>;
absl::StatusOr<int64_t> DeliverLeftoverSpool(const std::string& dir, const DeliverFn& deliver);

}  // namespace trainwatch::agent
