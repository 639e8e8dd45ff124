#include "job/runner_identity.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "job/lifecycle.h"
#include "util/clock.h"
#include "util/time_parse.h"

namespace trainwatch::job {
namespace {

std::string Hostname(const HostView& host) {
  if (host.hostname) return *host.hostname;
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

std::string BootId(const HostView& host) {
  std::ifstream in(host.proc_dir + "/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Field 22 (starttime) of <proc_dir>/<pid>/stat; nullopt when there is no such process.
std::optional<uint64_t> StartTicks(const HostView& host, int64_t pid) {
  std::ifstream in(absl::StrFormat("%s/%d/stat", host.proc_dir, pid));
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so start after the last ')'.
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  // Fields 3.. follow; starttime is field 22, the 20th after the parenthesis.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  // A zombie has exited: it is no longer a runner.
  std::istringstream state(stat.substr(paren + 1));
  std::string s;
  state >> s;
  if (s == "Z" || s == "X") return std::nullopt;
  uint64_t ticks = 0;
  if (!absl::SimpleAtoi(field, &ticks)) return std::nullopt;
  return ticks;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace

model::RunnerIdentity CurrentRunnerIdentity(const HostView& host) {
  model::RunnerIdentity id;
  id.hostname = Hostname(host);
  id.boot_id = BootId(host);
  id.pid = ::getpid();
  id.start_ticks = StartTicks(host, id.pid).value_or(0);
  return id;
}

std::optional<model::RunnerIdentity> ProcessIdentity(int64_t pid, const HostView& host) {
  std::optional<uint64_t> ticks = StartTicks(host, pid);
  if (!ticks) return std::nullopt;
  model::RunnerIdentity id;
  id.hostname = Hostname(host);
  id.boot_id = BootId(host);
  id.pid = pid;
  id.start_ticks = *ticks;
  return id;
}

RunnerState CheckRunner(const model::RunnerIdentity& runner, const HostView& host) {
  if (runner.pid <= 0) return RunnerState::kGone;
  if (runner.hostname != Hostname(host)) return RunnerState::kOnOtherHost;
  if (runner.boot_id != BootId(host)) return RunnerState::kGone;
  std::optional<uint64_t> ticks = StartTicks(host, runner.pid);
  if (!ticks || *ticks != runner.start_ticks) return RunnerState::kGone;
  return RunnerState::kAlive;
}

bool IsRunnerAlive(const model::RunnerIdentity& runner, const HostView& host) {
  return CheckRunner(runner, host) != RunnerState::kGone;
}

namespace {

// Failed, with FailureReason "InternalServerError: the trainwatch runner (pid N
// on HOST) <what happened>. The job was last in status ...".
void RecordRunnerLost(model::JobRecord* job, int64_t now_ms, std::string_view what_happened) {
  if (model::IsTerminal(job->status)) return;
  std::string reason = absl::StrFormat(
      "InternalServerError: the trainwatch runner (pid %d on %s) %s. The job was last in status "
      "%s (%s, %s); its logs and metrics up to then are kept.",
      job->runner.pid, job->runner.hostname.empty() ? "an unknown host" : job->runner.hostname,
      what_happened, model::SecondaryStatusName(job->secondary_status),
      model::JobStatusName(job->status), util::FormatIso8601Ms(job->last_modified_ms));
  EnterStatus(job, model::JobStatus::kFailed, model::SecondaryStatus::kFailed,
              TruncateUtf8(reason, kMaxFailureReasonBytes), now_ms);
}

}  // namespace

void RecordRunnerGone(model::JobRecord* job, int64_t now_ms) {
  RecordRunnerLost(job, now_ms,
                   "stopped without finishing the job: it was killed, crashed, or the machine "
                   "restarted");
}

void RecordRunnerSilent(model::JobRecord* job, int64_t now_ms, int64_t silent_ms) {
  RecordRunnerLost(job, now_ms,
                   absl::StrFormat("has not been heard from for %s: it was killed, its machine "
                                   "stopped, or the network to the server is down",
                                   util::FormatDurationMs(silent_ms)));
}

void RecordRunnerGone(model::JobRecord* job) {
  RecordRunnerGone(job, util::SystemClock::Get().NowMs());
}

bool ReconcileRunner(model::JobRecord* job, int64_t now_ms, const HostView& host) {
  if (model::IsTerminal(job->status)) return false;
  if (CheckRunner(job->runner, host) != RunnerState::kGone) return false;
  RecordRunnerGone(job, now_ms);
  return true;
}

absl::Status RequestStop(const model::JobRecord& job, const HostView& host) {
  if (job.status != model::JobStatus::kInProgress) {
    return absl::FailedPreconditionError(
        absl::StrFormat("The request was rejected because the training job is in status %s.",
                        model::JobStatusName(job.status)));
  }
  const model::RunnerIdentity& runner = job.runner;
  switch (CheckRunner(runner, host)) {
    case RunnerState::kOnOtherHost:
      return absl::FailedPreconditionError(absl::StrFormat(
          "training job \"%s\" runs on host %s (runner pid %d): run trainwatch stop there",
          job.name, runner.hostname, runner.pid));
    case RunnerState::kGone:
      return absl::NotFoundError(absl::StrFormat(
          "the runner of training job \"%s\" (pid %d on %s) is gone; the job is recorded as "
          "Failed",
          job.name, runner.pid, runner.hostname));
    case RunnerState::kAlive:
      break;
  }
  // Pin the process, then make sure it is still the runner (the pid may have been
  // reused between the check above and the pin).
  int pidfd = PidfdOpen(static_cast<pid_t>(runner.pid));
  if (pidfd < 0 && errno != ENOSYS) {
    return absl::NotFoundError(absl::StrFormat(
        "the runner of training job \"%s\" (pid %d) has just exited", job.name, runner.pid));
  }
  if (CheckRunner(runner, host) != RunnerState::kAlive) {
    if (pidfd >= 0) ::close(pidfd);
    return absl::NotFoundError(absl::StrFormat(
        "the runner of training job \"%s\" (pid %d) has just exited", job.name, runner.pid));
  }
  int rc = pidfd >= 0 ? PidfdSendSignal(pidfd, SIGTERM)
                      : ::kill(static_cast<pid_t>(runner.pid), SIGTERM);
  int err = errno;
  if (pidfd >= 0) ::close(pidfd);
  if (rc == 0) return absl::OkStatus();
  if (err == EPERM) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "not allowed to signal the runner of training job \"%s\" (pid %d): it belongs to "
        "another user; run trainwatch stop as that user",
        job.name, runner.pid));
  }
  return absl::NotFoundError(absl::StrFormat(
      "the runner of training job \"%s\" (pid %d) has just exited", job.name, runner.pid));
}

}  // namespace trainwatch::job
