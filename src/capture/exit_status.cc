#include "capture/exit_status.h"

#include <string.h>
#include <sys/wait.h>

#include "absl/strings/str_format.h"

namespace trainwatch::capture {

ExitStatus ExitStatus::FromWaitStatus(int status) {
  ExitStatus out;
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.core_dumped = WCOREDUMP(status);
  }
  return out;
}

ExitStatus ExitStatus::FromSiginfo(const siginfo_t& info) {
  ExitStatus out;
  if (info.si_code == CLD_EXITED) {
    out.exit_code = info.si_status;
  } else {
    out.signal = info.si_status;
    out.core_dumped = info.si_code == CLD_DUMPED;
  }
  return out;
}

int ExitStatus::ShellCode() const {
  if (exit_code) return *exit_code;
  if (signal) return 128 + *signal;
  return 1;  // unknown: someone else reaped the process
}

std::string ExitStatus::Describe() const {
  if (exit_code) return absl::StrFormat("exited with code %d", *exit_code);
  if (signal) {
    return absl::StrFormat("was killed by signal %d (%s)%s", *signal, SignalName(*signal),
                           core_dumped ? " (core dumped)" : "");
  }
  return "ended with an unknown status";
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);  // glibc 2.32+: "KILL"
  if (abbrev == nullptr) return absl::StrFormat("signal %d", sig);
  return absl::StrFormat("SIG%s", abbrev);
}

}  // namespace trainwatch::capture
