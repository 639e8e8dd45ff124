#pragma once
// Who runs a job, and whether that runner is still alive: so that a job whose
// `trainwatch run` died (kill -9, crash, reboot) does not stay InProgress forever,
// and so that `trainwatch stop` in another terminal can reach the runner.
//
// A runner is identified by host name, boot id (/proc/sys/kernel/random/boot_id),
// pid and the pid's start time in clock ticks (field 22 of /proc/<pid>/stat), which
// tells a reused pid apart.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "model/job_record.h"

namespace trainwatch::job {

// Where the host facts come from; tests point proc_dir at a fixture tree.
struct HostView {
  std::string proc_dir = "/proc";
  std::optional<std::string> hostname;  // nullopt: gethostname()
};

enum class RunnerState {
  kAlive,        // same host and boot, the pid exists and started at the same tick
  kGone,         // machine restarted, no such pid, pid reused, or no runner recorded
  kOnOtherHost,  // recorded on another host: nothing can be checked from here
};

// This process.
model::RunnerIdentity CurrentRunnerIdentity(const HostView& host = {});
// Another process of this host; nullopt when there is no such (live) process.
std::optional<model::RunnerIdentity> ProcessIdentity(int64_t pid, const HostView& host = {});

RunnerState CheckRunner(const model::RunnerIdentity& runner, const HostView& host = {});
// CheckRunner(...) != kGone (a runner on another host is presumed alive).
bool IsRunnerAlive(const model::RunnerIdentity& runner, const HostView& host = {});

// Marks a job whose runner is gone as Failed at now_ms, with FailureReason
// "InternalServerError: the trainwatch runner (pid N on HOST) stopped without
// finishing the job ..." (spec/aws-api.md §7.1). TrainingEndTime is the time this
// was noticed. No-op for a job in a terminal status.
void RecordRunnerGone(model::JobRecord* job, int64_t now_ms);
void RecordRunnerGone(model::JobRecord* job);  // now_ms = the system clock
// The same for a runner on another machine that a server has not heard from for
// `silent_ms` (FailureReason "InternalServerError: the trainwatch runner (pid N
// on HOST) has not been heard from for 5m ...").
void RecordRunnerSilent(model::JobRecord* job, int64_t now_ms, int64_t silent_ms);

// For readers (describe, jobs, logs --follow): when `job` is not terminal and its
// runner is gone, records that (RecordRunnerGone) and returns true; the caller writes
// the record back through its JobSink.
bool ReconcileRunner(model::JobRecord* job, int64_t now_ms, const HostView& host = {});

// `trainwatch stop` from another process: sends SIGTERM to the job's runner, which
// then moves the job to Stopping and Stopped (SIGTERM to the training process, SIGKILL
// after the grace period). The runner must be a `trainwatch run` process (one job per
// process); a job run inside a server is stopped through that server's API.
// The pid is pinned with a pidfd and its start ticks re-checked, so a reused pid is
// never signalled. Errors: FailedPrecondition when the job is not InProgress
// ("The request was rejected because the training job is in status Stopped.") or its
// runner is on another host; NotFound when the runner is gone (ReconcileRunner
// records that); PermissionDenied when the runner belongs to another user.
absl::Status RequestStop(const model::JobRecord& job, const HostView& host = {});

}  // namespace trainwatch::job
