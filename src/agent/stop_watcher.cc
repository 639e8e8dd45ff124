#include "agent/stop_watcher.h"

#include <chrono>
#include <utility>
#include "util/stop_wait.h"

namespace trainwatch::agent {

StopWatcher::StopWatcher(Beat beat, int64_t interval_ms, std::function<void()> on_stop)
    : beat_(std::move(beat)),
      interval_ms_(interval_ms),
      on_stop_(std::move(on_stop)),
      thread_([this](std::stop_token stop) { Loop(std::move(stop)); }) {}

void StopWatcher::Loop(std::stop_token stop) {
  while (util::SleepFor(stop, std::chrono::milliseconds(interval_ms_))) {
    // An unreachable server is the spool's business: try again next time.
    absl::StatusOr<bool> requested = beat_();
    // Beats go on while the command stops (its grace period may be longer
    // than the server's patience with a silent runner).
    if (requested.ok() && *requested && !stop_called_) {
      stop_called_ = true;
      on_stop_();
    }
  }
}

}  // namespace trainwatch::agent
