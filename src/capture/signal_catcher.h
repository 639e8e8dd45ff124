#pragma once
// SignalCatcher: turns the signals a runner must react to into readable events.
//
// While a SignalCatcher is alive, SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP and
// SIGCONT are caught (each one that was not ignored when the catcher was created:
// under `nohup`, SIGHUP stays ignored) and queued; fd() becomes readable and
// TakePending() returns them in arrival order. The handler only writes one byte to a
// non-blocking self-pipe, so it is async-signal-safe and works whichever thread the
// kernel picks. Signals that arrive while 64 Ki are queued are dropped.
//
// SIGPIPE is ignored meanwhile, so that a terminal or pipe that went away turns the
// runner's writes into EPIPE errors instead of killing it (the training command still
// starts with SIGPIPE at its default). The destructor restores every disposition.
//
// At most one SignalCatcher exists per process (Create fails otherwise): signal
// dispositions are process-wide. Thread-safe.

#include <signal.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/unique_fd.h"

namespace trainwatch::capture {

class SignalCatcher {
 public:
  // FailedPrecondition when another SignalCatcher is alive.
  static absl::StatusOr<std::unique_ptr<SignalCatcher>> Create();
  ~SignalCatcher();
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

  // Readable while signals are pending.
  int fd() const { return read_fd_.get(); }
  // The pending signals, oldest first (each delivery once); empty when none.
  std::vector<int> TakePending();
  // Whether `sig` is caught by this catcher (false for one that was ignored).
  bool Catches(int sig) const;
  // The signals this catcher handles; a child process must get them back at their
  // default disposition (a caught signal is reset by exec anyway).
  const std::vector<int>& caught() const { return caught_; }

 private:
  SignalCatcher() = default;

  UniqueFd read_fd_;
  UniqueFd write_fd_;
  std::vector<int> caught_;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

// Signals handled by SignalCatcher, in this order.
inline constexpr int kCaughtSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT};

}  // namespace trainwatch::capture
