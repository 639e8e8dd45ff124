#include "app/job_access.h"

#include "absl/strings/str_format.h"
#include "job/runner_identity.h"
#include "query/store_reader.h"
#include "util/log.h"

namespace trainwatch::app {

namespace {

// Writes back a host record that ReconcileRunner changed.
void RecordReconciled(store::Db& db, const model::JobRecord& host) {
  if (!db.writable()) return;
  if (absl::Status s = db.UpdateJob(host); !s.ok()) {
    util::LogWarning(absl::StrFormat("job %s: could not record that its runner is gone: %s",
                                     host.name, s.ToString()));
  }
}

}  // namespace

bool ReconcileJob(store::Db& db, model::JobRecord* job) {
  const int64_t now_ms = db.clock().NowMs();
  if (job->hosts.empty()) {
    if (!job::ReconcileRunner(job, now_ms)) return false;
    RecordReconciled(db, *job);
    return true;
  }
  bool changed = false;
  for (model::JobRecord& host : job->hosts) {
    if (!job::ReconcileRunner(&host, now_ms)) continue;
    RecordReconciled(db, host);
    changed = true;
  }
  if (changed) *job = model::MergeHostRecords(std::move(job->hosts));
  return changed;
}

absl::Status StopJobHosts(store::Db& db, const model::JobRecord& job) {
  if (job.status != model::JobStatus::kInProgress) {
    return absl::FailedPreconditionError(
        absl::StrFormat("The request was rejected because the training job is in status %s.",
                        model::JobStatusName(job.status)));
  }
  bool stopping = false;
  absl::Status first_error;
  for (model::JobRecord& host : model::HostRecords(job)) {
    if (host.status != model::JobStatus::kInProgress) continue;
    absl::Status s;
    if (job::CheckRunner(host.runner) == job::RunnerState::kOnOtherHost && db.writable()) {
      host.stop_requested_ms = db.clock().NowMs();
      s = db.UpdateJob(host);
    } else {
      s = job::RequestStop(host);
      if (absl::IsNotFound(s) && job::ReconcileRunner(&host, db.clock().NowMs())) {
        RecordReconciled(db, host);
      }
    }
    if (s.ok()) {
      stopping = true;
    } else if (first_error.ok()) {
      first_error = s;
    }
  }
  return stopping ? absl::OkStatus() : first_error;
}

absl::StatusOr<std::optional<model::JobRecord>> LoadJob(store::Db& db, std::string_view name) {
  auto job = query::StoreReader(db).GetJob(std::string(name));
  if (!job.ok() || !job->has_value()) return job;
  ReconcileJob(db, &**job);
  return job;
}

absl::Status JobNotFound(std::string_view name, const std::string& data_dir) {
  return absl::NotFoundError(absl::StrFormat(
      "no training job named \"%s\" in %s; `trainwatch jobs --data %s` lists the jobs there",
      std::string(name), data_dir, data_dir));
}

}  // namespace trainwatch::app
