#include "capture/training_process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/log.h"

namespace trainwatch::capture {
namespace {

// Without a pidfd, Wait polls for the exit this often.
constexpr int64_t kExitPollMs = 10;

bool IsTerminal(int fd) { return fd >= 0 && ::isatty(fd) == 1; }

OutputKind KindFor(OutputMode mode, int passthrough_fd) {
  switch (mode) {
    case OutputMode::kPipes:
      return OutputKind::kPipe;
    case OutputMode::kPty:
      return OutputKind::kPty;
    case OutputMode::kAuto:
      break;
  }
  return IsTerminal(passthrough_fd) ? OutputKind::kPty : OutputKind::kPipe;
}

// The terminal whose size the ptys follow: our stdout's passthrough if it is one,
// else stderr's; -1 when neither is.
int SizeSource(const TrainingProcessOptions& options) {
  if (IsTerminal(options.passthrough_stdout_fd)) return options.passthrough_stdout_fd;
  if (IsTerminal(options.passthrough_stderr_fd)) return options.passthrough_stderr_fd;
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingProcess>> TrainingProcess::Start(
    TrainingProcessOptions options, LineHandler on_line) {
  std::unique_ptr<TrainingProcess> process(new TrainingProcess());
  SpawnOptions spawn;
  spawn.argv = options.argv;
  spawn.working_dir = options.working_dir;
  spawn.env = options.env;
  spawn.stdout_kind = KindFor(options.output_mode, options.passthrough_stdout_fd);
  spawn.stderr_kind = KindFor(options.output_mode, options.passthrough_stderr_fd);
  if (int tty = SizeSource(options); tty >= 0) {
    struct winsize ws;
    if (::ioctl(tty, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      spawn.window_size = ws;
    }
  }
  spawn.stdin_fd = options.stdin_fd;
  // A shell starts programs with SIGPIPE at its default even if the runner ignores it.
  spawn.default_signals = {SIGPIPE};
  spawn.kill_with_parent = true;

  process->stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!process->stop_fd_.valid()) {
    return absl::InternalError(absl::StrFormat("eventfd: %s", ::strerror(errno)));
  }
  absl::StatusOr<SpawnedProcess> spawned = Spawn(spawn);
  if (!spawned.ok()) return spawned.status();
  process->start_ms_ = options.clock->NowMs();
  process->pid_ = spawned->pid;
  process->pidfd_ = std::move(spawned->pidfd);
  process->stdout_kind_ = spawned->stdout_kind;
  process->stderr_kind_ = spawned->stderr_kind;
  if (!process->pidfd_.valid()) {
    util::LogOnce("capture-no-pidfd",
                  "this kernel has no pidfd_open; watching the training process by polling");
  }
  OutputPump::Stream out{std::move(spawned->stdout_fd), options.passthrough_stdout_fd};
  OutputPump::Stream err{std::move(spawned->stderr_fd), options.passthrough_stderr_fd};
  process->pump_ = std::make_unique<OutputPump>(std::move(out), std::move(err), options.clock,
                                                options.queue_chunks, std::move(on_line),
                                                options.on_chunk_done);
  process->options_ = std::move(options);
  process->pump_->Start();
  return process;
}

TrainingProcess::~TrainingProcess() {
  if (finished_ || pid_ < 0) return;
  if (!exit_status_) {
    SignalGroup(SIGKILL);
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
  }
  pump_->BeginDrain(std::chrono::steady_clock::now());
  pump_->Join();
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED) < 0 && errno == EINTR) {
  }
}

bool TrainingProcess::PollExited() {
  if (exit_status_) return true;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  // WNOWAIT: the exited leader stays a zombie until Finish, so its process group id
  // cannot be reused while we may still signal the group.
  int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if (r == 0 && info.si_pid == pid_) {
    exit_status_ = ExitStatus::FromSiginfo(info);
    return true;
  }
  if (r < 0 && errno == ECHILD) {
    // Someone else reaped it (SIGCHLD set to SIG_IGN, or a waitpid(-1) elsewhere).
    util::LogWarning(absl::StrFormat(
        "the training process (pid %d) was reaped by someone else; its exit status is unknown",
        pid_));
    exit_status_ = ExitStatus{};
    return true;
  }
  return false;
}

TrainingProcess::Event TrainingProcess::Wait(int64_t timeout_ms) {
  if (pending_.empty() && !exit_status_) {
    struct pollfd fds[3];
    nfds_t n = 0;
    int signal_index = -1;
    int stop_index = -1;
    if (pidfd_.valid()) fds[n++] = {pidfd_.get(), POLLIN, 0};
    if (options_.signals != nullptr) {
      signal_index = static_cast<int>(n);
      fds[n++] = {options_.signals->fd(), POLLIN, 0};
    }
    stop_index = static_cast<int>(n);
    fds[n++] = {stop_fd_.get(), POLLIN, 0};
    if (!pidfd_.valid()) timeout_ms = std::min(timeout_ms, kExitPollMs);
    int timeout = static_cast<int>(std::clamp<int64_t>(timeout_ms, 0, 1 << 30));
    int ready = ::poll(fds, n, timeout);
    if (ready > 0 && signal_index >= 0 && fds[signal_index].revents != 0) {
      for (int sig : options_.signals->TakePending()) {
        if (sig == SIGINT) {
          if (++interrupts_ == 1) {
            SignalGroup(SIGINT);
            pending_.push_back(Event::kInterrupted);
          } else {
            SignalGroup(SIGKILL);
            pending_.push_back(Event::kKilled);
          }
        } else if (sig == SIGTERM || sig == SIGHUP) {
          pending_.push_back(Event::kStopRequested);
        } else if (sig == SIGWINCH) {
          ResizePtys();
        } else if (sig == SIGTSTP) {
          // Ctrl-Z: the command stops with us. SIGSTOP, because the kernel discards
          // SIGTSTP sent to an orphaned process group, which the command's is (its
          // session has no other process).
          SignalGroup(SIGSTOP);
          ::kill(::getpid(), SIGSTOP);
        } else if (sig == SIGCONT) {
          SignalGroup(SIGCONT);
        }
      }
    }
    if (ready > 0 && fds[stop_index].revents != 0) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(stop_fd_.get(), &count, sizeof(count));
      pending_.push_back(Event::kStopRequested);
    }
    PollExited();
  }
  if (!pending_.empty()) {
    Event event = pending_.front();
    pending_.pop_front();
    return event;
  }
  return exit_status_ ? Event::kExited : Event::kTimeout;
}

void TrainingProcess::SignalGroup(int sig) {
  if (finished_ || pid_ <= 0) return;
  ::kill(-pid_, sig);  // ESRCH: the group is gone (a zombie leader still counts)
}

void TrainingProcess::RequestStop() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_fd_.get(), &one, sizeof(one));
}

ExitStatus TrainingProcess::Finish() {
  TW_CHECK(exit_status_.has_value());
  if (finished_) return *exit_status_;
  pump_->BeginDrain(std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(options_.drain_after_exit_ms));
  pump_->Join();
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED) < 0 && errno == EINTR) {
  }
  finished_ = true;
  return *exit_status_;
}

void TrainingProcess::ResizePtys() {
  int tty = SizeSource(options_);
  if (tty < 0) return;
  struct winsize ws;
  if (::ioctl(tty, TIOCGWINSZ, &ws) != 0) return;
  bool any = false;
  if (stdout_kind_ == OutputKind::kPty) {
    any |= ::ioctl(pump_->fd(model::OutputStream::kStdout), TIOCSWINSZ, &ws) == 0;
  }
  if (stderr_kind_ == OutputKind::kPty) {
    any |= ::ioctl(pump_->fd(model::OutputStream::kStderr), TIOCSWINSZ, &ws) == 0;
  }
  // The ptys are nobody's controlling terminal, so the kernel does not send
  // SIGWINCH itself.
  if (any) SignalGroup(SIGWINCH);
}

}  // namespace trainwatch::capture
