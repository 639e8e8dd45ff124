#pragma once
// ExitStatus: how a process ended: an exit code, or the signal that killed it.

#include <signal.h>

#include <optional>
#include <string>

namespace trainwatch::capture {

struct ExitStatus {
  std::optional<int> exit_code;  // set when the process called exit()
  std::optional<int> signal;     // set when a signal killed it
  bool core_dumped = false;

  // From a waitpid() status word.
  static ExitStatus FromWaitStatus(int status);
  // From waitid()'s siginfo (si_code CLD_EXITED, CLD_KILLED, CLD_DUMPED).
  static ExitStatus FromSiginfo(const siginfo_t& info);

  bool success() const { return exit_code.has_value() && *exit_code == 0; }
  // What a POSIX shell reports in $?: the exit code, or 128 + the signal number.
  int ShellCode() const;
  // "exited with code 1", "was killed by signal 9 (SIGKILL)", "... (core dumped)".
  std::string Describe() const;

  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

// "SIGKILL" for 9; "signal 64" for numbers without a name.
std::string SignalName(int sig);

}  // namespace trainwatch::capture
