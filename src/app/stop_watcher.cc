#include "app/stop_watcher.h"

#include <chrono>
#include <utility>

namespace trainwatch::app {

StopWatcher::StopWatcher(Fetch fetch, model::RunnerIdentity runner, int64_t interval_ms,
                         std::function<void()> on_stop)
    : fetch_(std::move(fetch)),
      runner_(std::move(runner)),
      interval_ms_(interval_ms),
      on_stop_(std::move(on_stop)),
      thread_([this] { Loop(); }) {}

StopWatcher::~StopWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StopWatcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return done_; })) {
    lock.unlock();
    // An unreachable server is the spool's business: try again next time.
    absl::StatusOr<std::optional<model::JobRecord>> job = fetch_();
    bool requested = false;
    if (job.ok() && job->has_value()) {
      for (const model::JobRecord& host : model::HostRecords(**job)) {
        if (host.runner == runner_ && host.stop_requested_ms) requested = true;
      }
    }
    if (requested) {
      on_stop_();
      return;
    }
    lock.lock();
  }
}

}  // namespace trainwatch::app
