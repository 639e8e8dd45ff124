#pragma once
// StopWatcher: how a `trainwatch run` on one machine learns that StopTrainingJob
// or `trainwatch stop` was called on the server it sends to, on another machine.
// The server cannot signal it, so it records the request in the host's job
// record (JobRecord::stop_requested_ms); the watcher polls the job and calls
// `on_stop` once when this runner's host record carries a request.
//
// This runner's record is the one whose RunnerIdentity is `runner`: a job name
// that changes while the runner reserves one, or another host of the same job,
// never triggers it.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::app {

class StopWatcher {
 public:
  // The job as the server has it (merged over its hosts), nullopt when there is none.
  using Fetch = std::function<absl::StatusOr<std::optional<model::JobRecord>>()>;

  StopWatcher(Fetch fetch, model::RunnerIdentity runner, int64_t interval_ms,
              std::function<void()> on_stop);
  ~StopWatcher();  // stops polling (waits for a fetch in flight)
  StopWatcher(const StopWatcher&) = delete;
  StopWatcher& operator=(const StopWatcher&) = delete;

 private:
  void Loop();

  const Fetch fetch_;
  const model::RunnerIdentity runner_;
  const int64_t interval_ms_;
  const std::function<void()> on_stop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace trainwatch::app
