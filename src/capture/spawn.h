#pragma once
// Spawn: starts a command in a new session (and so its own process group), with its
// stdout and stderr connected to pipes or pseudo-terminals that the caller reads.
// This is the low level of TrainingProcess (training_process.h); see docs/running.md
// for what a user sees.
//
// A command that cannot be started (not found, not executable, a directory, a missing
// script interpreter, a bad working directory) is reported as an error before Spawn
// returns: the child reports exec's errno through a close-on-exec pipe, so there is
// never a half-started process to clean up.

#include <sys/ioctl.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/unique_fd.h"

namespace trainwatch::capture {

// How one output stream of the child is connected.
enum class OutputKind {
  kPipe,  // a pipe: the child sees isatty() == false
  kPty,   // a pseudo-terminal in raw mode (bytes pass unchanged; isatty() == true)
};

struct SpawnOptions {
  // argv[0] is looked up on the PATH of the child's environment unless it holds a '/'
  // (as execvp does; a file without a #! line is run by /bin/sh).
  std::vector<std::string> argv;
  // Empty: ours. Relative argv[0] and PATH entries resolve against it.
  std::string working_dir;
  // The child's environment: ours with PYTHONUNBUFFERED=1 added, then these set
  // (a later entry wins).
  std::vector<std::pair<std::string, std::string>> env;
  OutputKind stdout_kind = OutputKind::kPipe;
  OutputKind stderr_kind = OutputKind::kPipe;
  // Window size of the pseudo-terminals (ignored for pipes).
  struct winsize window_size = {24, 80, 0, 0};
  // The child's stdin: this fd (inherited), or /dev/null when -1.
  int stdin_fd = 0;
  // Signals to reset to their default disposition in the child before exec (signals
  // that we ignore on purpose; caught ones are reset by exec anyway).
  std::vector<int> default_signals;
  // The child is SIGKILLed if the thread that called Spawn exits first
  // (PR_SET_PDEATHSIG): a training process never outlives a runner killed by
  // kill -9. That thread must therefore stay alive until the child is reaped.
  bool kill_with_parent = true;
};

struct SpawnedProcess {
  pid_t pid = -1;  // also its process group id and session id
  // pidfd_open(pid): readable once the process has exited; invalid when the
  // kernel has no pidfd (then poll with waitid(WNOHANG)).
  UniqueFd pidfd;
  UniqueFd stdout_fd;  // our end: the pipe's read end or the pty master (non-blocking)
  UniqueFd stderr_fd;
  OutputKind stdout_kind = OutputKind::kPipe;
  OutputKind stderr_kind = OutputKind::kPipe;
};

// InvalidArgument for an empty argv or an environment name that is empty or holds
// '='; NotFound (no such file, not on PATH, missing interpreter), PermissionDenied
// (not executable, a directory) or FailedPrecondition (bad working directory, other
// exec errors) with a one-line message that quotes the command and says what to do;
// Internal when pipes or ptys cannot be created.
absl::StatusOr<SpawnedProcess> Spawn(const SpawnOptions& options);

}  // namespace trainwatch::capture
