#pragma once
// TrainingProcess: the training command as trainwatch runs it. Start() spawns it in a
// new session (its own process group) with PYTHONUNBUFFERED=1 added to its
// environment, copies everything it writes to our stdout/stderr at once and byte for
// byte, and hands every line to a LineHandler. The owner drives it with Wait() and
// ends it with Finish(). docs/running.md says what a user sees.
//
//   auto process = TrainingProcess::Start(options, on_line);   // error: not started
//   for (;;) {
//     switch (process->Wait(/*timeout_ms=*/100)) {
//       case Event::kExited: ...; break;
//       case Event::kStopRequested: process->SignalGroup(SIGTERM); ...
//     }
//   }
//   ExitStatus status = process->Finish();   // all lines delivered, process reaped
//
// Terminals: with OutputMode::kAuto a stream whose passthrough fd is a terminal gets
// a pseudo-terminal (raw mode, our window size), so isatty(), colours and progress
// bars behave as without trainwatch; other streams get pipes. The child's stdin is
// ours (a process in another session may read a terminal that is not its controlling
// terminal, so input() and pdb work).
//
// Signals (only when options.signals is set): Ctrl-C (SIGINT) is forwarded to the
// process group and a second one SIGKILLs the group; SIGTERM and SIGHUP to the runner
// become kStopRequested (the owner decides: SIGTERM, grace, SIGKILL); SIGWINCH
// resizes the pseudo-terminals and is forwarded; Ctrl-Z (SIGTSTP) stops the process
// group and then the runner itself, and SIGCONT (fg, bg) continues the group.
//
// Threads: two owned by the OutputPump (see output_pump.h). Start, Wait, SignalGroup,
// Finish and the destructor must be called from one thread, the one that called
// Start, which must stay alive until Finish returns (the child is SIGKILLed when
// that thread exits: PR_SET_PDEATHSIG). RequestStop and stats are thread-safe.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/exit_status.h"
#include "capture/output_pump.h"
#include "capture/signal_catcher.h"
#include "capture/spawn.h"
#include "capture/unique_fd.h"
#include "util/clock.h"

namespace trainwatch::capture {

enum class OutputMode {
  kAuto,   // pty for a stream whose passthrough fd is a terminal, pipe otherwise
  kPipes,  // pipes always
  kPty,    // ptys always (tests; programs that insist on a terminal)
};

struct TrainingProcessOptions {
  std::vector<std::string> argv;
  std::string working_dir;                                // empty: ours
  std::vector<std::pair<std::string, std::string>> env;  // added after PYTHONUNBUFFERED=1
  OutputMode output_mode = OutputMode::kAuto;
  // Where the output is copied as it arrives; -1: captured only.
  int passthrough_stdout_fd = 1;
  int passthrough_stderr_fd = 2;
  int stdin_fd = 0;  // -1: /dev/null
  // Ctrl-C, Ctrl-Z, SIGTERM, SIGHUP, SIGWINCH handling (see above); nullptr: none. Must
  // outlive the TrainingProcess.
  SignalCatcher* signals = nullptr;
  // After the process exits, how long to keep reading output that processes it left
  // behind may still write; reading stops earlier at end of file.
  int64_t drain_after_exit_ms = 1000;
  // Chunks (at most 64 KiB each) read but not yet split into lines.
  size_t queue_chunks = 256;
  // Called after the lines of each read (output_pump.h); may be empty.
  ChunkDoneHandler on_chunk_done;
  // Line timestamps (t_ms of each LogLine) come from it. Must outlive the process.
  const util::Clock* clock = &util::SystemClock::Get();
};

class TrainingProcess {
 public:
  enum class Event {
    kExited,         // the process exited; call Finish()
    kInterrupted,    // Ctrl-C: SIGINT was forwarded to the process group
    kKilled,         // a further Ctrl-C: SIGKILL was sent to the process group
    kStopRequested,  // SIGTERM/SIGHUP to the runner, or RequestStop()
    kTimeout,
  };

  // Errors from Spawn (spawn.h): the command was not started, nothing to clean up.
  static absl::StatusOr<std::unique_ptr<TrainingProcess>> Start(TrainingProcessOptions options,
                                                                LineHandler on_line);
  // If Finish() was not called: SIGKILLs the group, waits for the exit, drains
  // without waiting, joins.
  ~TrainingProcess();
  TrainingProcess(const TrainingProcess&) = delete;
  TrainingProcess& operator=(const TrainingProcess&) = delete;

  pid_t pid() const { return pid_; }  // also the process group id
  int64_t start_ms() const { return start_ms_; }
  OutputKind stdout_kind() const { return stdout_kind_; }
  OutputKind stderr_kind() const { return stderr_kind_; }

  // Waits up to timeout_ms for the next event. Once the process has exited every
  // call returns kExited.
  Event Wait(int64_t timeout_ms);
  // The exit status, once Wait returned kExited.
  const std::optional<ExitStatus>& exit_status() const { return exit_status_; }
  // Sends sig to the whole process group (no-op after Finish). Safe from pid reuse:
  // the group leader is reaped only in Finish.
  void SignalGroup(int sig);
  // Makes Wait return kStopRequested. Thread-safe.
  void RequestStop();
  // After kExited: reads the remaining output (until end of file, at most
  // drain_after_exit_ms), delivers every line, joins the threads, reaps the process.
  ExitStatus Finish();

  CaptureStats stats() const { return pump_->stats(); }

 private:
  TrainingProcess() = default;
  bool PollExited();
  void ResizePtys();

  TrainingProcessOptions options_;
  pid_t pid_ = -1;
  int64_t start_ms_ = 0;
  OutputKind stdout_kind_ = OutputKind::kPipe;
  OutputKind stderr_kind_ = OutputKind::kPipe;
  UniqueFd pidfd_;
  UniqueFd stop_fd_;  // eventfd written by RequestStop
  std::unique_ptr<OutputPump> pump_;
  std::deque<Event> pending_;
  int interrupts_ = 0;
  std::optional<ExitStatus> exit_status_;
  bool finished_ = false;
};

}  // namespace trainwatch::capture
