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

#include <cstdint>
#include <functional>
#include <stop_token>
#include <thread>

#include "absl/status/statusor.h"

namespace trainwatch::agent {

class StopWatcher {
 public:
  // True when a stop is asked for; errors (server away, job not created yet)
  // are retried at the next interval.
  using Beat = std::function<absl::StatusOr<bool>()>;

  StopWatcher(Beat beat, int64_t interval_ms, std::function<void()> on_stop);
  // Stops polling (waits for a fetch in flight): the thread's stop token.
  ~StopWatcher() = default;
  StopWatcher(const StopWatcher&) = delete;
  StopWatcher& operator=(const StopWatcher&) = delete;

 private:
  void Loop(std::stop_token stop);

  const Beat beat_;
  const int64_t interval_ms_;
  const std::function<void()> on_stop_;
  bool stop_called_ = false;  // only the watcher's thread uses it
  // Last: destroyed (stopped and joined) before what it uses.
  std::jthread thread_;
};

}  // namespace trainwatch::agent
