#pragma once
// MemoryTelemetrySink: a thread-safe, in-memory model::TelemetrySink for tests of
// anything that writes telemetry (the job runner, the profiler, api handlers).
//
// It keeps the sinks.h contract where a test could notice: a batch with a NaN/±Inf
// value or an invalid key is refused whole (InvalidArgument); CreateJob is
// AlreadyExists for a name and host that exist in any letter case (another host
// joins the job, and GetJob merges the hosts' records); UpdateJob is NotFound for
// an unknown job or host. Besides the data it keeps every accepted job-record write in order
// (JobHistory), and it can be made slow (SetLatency) or failing (FailNext*) to test
// back-pressure and retries. WaitUntil polls a condition without sleeping blindly:
// it wakes on every write.
//
// Library tw_model_testing (tests only).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "model/sinks.h"
#include "util/mutex.h"

namespace trainwatch::model::testing {

class MemoryTelemetrySink : public TelemetrySink {
 public:
  // --- TelemetrySink ---
  absl::Status Put(const SampleBatch& batch) override;
  absl::Status PutLogs(const LogBatch& batch) override;
  absl::Status CreateJob(const JobRecord& job) override;
  absl::Status UpdateJob(const JobRecord& job) override;
  absl::StatusOr<std::optional<JobRecord>> GetJob(std::string_view name) override;

  // --- what was written (copies) ---
  std::vector<SeriesKey> Keys() const;
  // Samples of one series in arrival order (empty for an unknown key).
  std::vector<Sample> Samples(const SeriesKey& key) const;
  // The storage resolution of the series' last write; 0 for an unknown key.
  int StorageResolution(const SeriesKey& key) const;
  std::vector<LogStreamId> Streams() const;
  std::vector<LogEvent> Events(const LogStreamId& stream) const;
  std::optional<JobRecord> Job(std::string_view name) const;
  // Every accepted CreateJob/UpdateJob of the job, oldest first.
  std::vector<JobRecord> JobHistory(std::string_view name) const;
  uint64_t put_calls() const;
  uint64_t put_logs_calls() const;

  // --- faults ---
  // Each later Put / PutLogs takes at least this long before it returns.
  void SetLatency(std::chrono::microseconds put, std::chrono::microseconds put_logs);
  // The next n calls of Put (or PutLogs, or UpdateJob) return `status` and store nothing.
  void FailNextPuts(int n, absl::Status status);
  void FailNextPutLogs(int n, absl::Status status);
  void FailNextUpdates(int n, absl::Status status);
  // Called at the end of every accepted Put, before it returns (e.g. to timestamp
  // arrival in a latency test). Runs on the writer's thread, outside the sink's lock.
  void OnPut(std::function<void(const SampleBatch&)> callback);

  // Evaluates `condition` after every write until it holds (true) or `timeout`
  // passes (false). `condition` may call the accessors above.
  bool WaitUntil(const std::function<bool()>& condition,
                 std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  struct Series {
    std::vector<Sample> samples;
    int storage_resolution_s = 0;
  };
  void Wrote() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // bumps version_ and wakes waiters

  mutable util::Mutex mu_;
  std::condition_variable changed_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<SeriesKey, Series> series_ ABSL_GUARDED_BY(mu_);
  std::map<LogStreamId, std::vector<LogEvent>> logs_ ABSL_GUARDED_BY(mu_);
  // By lower-cased name, then host index (each host's own record, as the store).
  std::map<std::string, std::map<int, JobRecord>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<JobRecord>> history_ ABSL_GUARDED_BY(mu_);
  uint64_t put_calls_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t put_logs_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::microseconds put_latency_ ABSL_GUARDED_BY(mu_){0};
  std::chrono::microseconds put_logs_latency_ ABSL_GUARDED_BY(mu_){0};
  int fail_puts_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status fail_puts_status_;
  int fail_put_logs_ = 0;
  absl::Status fail_put_logs_status_;
  int fail_updates_ = 0;
  absl::Status fail_updates_status_;
  std::function<void(const SampleBatch&)> on_put_;
};

}  // namespace trainwatch::model::testing
