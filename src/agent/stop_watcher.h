#pragma once
// StopWatcher: the heartbeat of a `trainwatch run` that sends to a server.
// Every interval it calls `beat` (RemoteSink::Heartbeat: POST
// /api/v1/agent/heartbeat), which tells the server the runner is alive (a
// server records a runner on another machine that went silent as Failed) and
// answers whether StopTrainingJob or `trainwatch stop` asked this host to stop:
// the server cannot signal a runner on another machine, so it records the
// request in the host's record (JobRecord::stop_requested_ms). On the first
// "yes" the watcher calls `on_stop`, once; it beats on until destroyed, since
// the command may take its grace period to stop.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "util/mutex.h"

namespace trainwatch::agent {

class StopWatcher {
 public:
  // True when a stop is asked for; errors (server away, job not created yet)
  // are retried at the next interval.
  using Beat = std::function<absl::StatusOr<bool>()>;

  StopWatcher(Beat beat, int64_t interval_ms, std::function<void()> on_stop);
  ~StopWatcher();  // stops polling (waits for a fetch in flight)
  StopWatcher(const StopWatcher&) = delete;
  StopWatcher& operator=(const StopWatcher&) = delete;

 private:
  void Loop();

  const Beat beat_;
  const int64_t interval_ms_;
  const std::function<void()> on_stop_;
  util::Mutex mu_;
  std::condition_variable cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_called_ = false;  // only the watcher's thread uses it
  std::thread thread_;
};

}  // namespace trainwatch::agent
