#include "capture/signal_catcher.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace trainwatch::capture {
namespace {

// The write end of the live catcher's self-pipe; -1 when there is none.
std::atomic<int> g_write_fd{-1};
std::atomic<bool> g_alive{false};

void OnSignal(int sig) {
  int saved_errno = errno;
  int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(sig);
    // Non-blocking: when the pipe is full the signal is dropped rather than
    // blocking inside a handler.
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalCatcher>> SignalCatcher::Create() {
  bool expected = false;
  if (!g_alive.compare_exchange_strong(expected, true)) {
    return absl::FailedPreconditionError(
        "another SignalCatcher is alive in this process: signal dispositions are "
        "process-wide, so only one running job may handle Ctrl-C and SIGTERM; run "
        "further jobs with signal handling off");
  }
  std::unique_ptr<SignalCatcher> catcher(new SignalCatcher());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    int err = errno;
    g_alive = false;
    return absl::InternalError(absl::StrFormat("signal self-pipe: %s", std::strerror(err)));
  }
  catcher->read_fd_.reset(fds[0]);
  catcher->write_fd_.reset(fds[1]);
  g_write_fd = fds[1];
  for (int sig : kCaughtSignals) {
    struct sigaction old_action;
    if (::sigaction(sig, nullptr, &old_action) != 0) continue;
    if (old_action.sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (::sigaction(sig, &action, nullptr) != 0) continue;
    catcher->previous_.emplace_back(sig, old_action);
    catcher->caught_.push_back(sig);
  }
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe;
  if (::sigaction(SIGPIPE, &ignore, &old_pipe) == 0) {
    catcher->previous_.emplace_back(SIGPIPE, old_pipe);
  }
  return catcher;
}

SignalCatcher::~SignalCatcher() {
  for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) {
    ::sigaction(it->first, &it->second, nullptr);
  }
  g_write_fd = -1;
  g_alive = false;
}

std::vector<int> SignalCatcher::TakePending() {
  std::vector<int> out;
  unsigned char buf[256];
  for (;;) {
    ssize_t n = ::read(read_fd_.get(), buf, sizeof(buf));
    if (n > 0) {
      out.insert(out.end(), buf, buf + n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: drained
  }
  return out;
}

bool SignalCatcher::Catches(int sig) const {
  return std::find(caught_.begin(), caught_.end(), sig) != caught_.end();
}

}  // namespace trainwatch::capture
