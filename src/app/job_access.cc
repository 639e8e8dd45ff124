#include "app/job_access.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "job/runner_identity.h"
#include "query/store_reader.h"
#include "util/log.h"

namespace trainwatch::app {

absl::Status RecordRunnerLost(store::Db& db, ingest::Ingest* ingest, const model::JobRecord& host,
                              const model::JobRecord& as_read) {
  absl::Status s;
  if (ingest != nullptr) {
    s = ingest->UpdateJobIfUnchanged(host, as_read);
  } else if (db.writable()) {
    s = db.UpdateJobIfUnchanged(host, as_read);
  }
  if (!s.ok() && !absl::IsFailedPrecondition(s)) {
    util::LogWarning(absl::StrFormat("job %s: could not record that its runner is gone: %s",
                                     host.name, s.ToString()));
  }
  return s;
}

bool ReconcileJob(store::Db& db, model::JobRecord* job, ingest::Ingest* ingest) {
  const int64_t now_ms = db.clock().NowMs();
  std::vector<model::JobRecord> hosts = model::HostRecords(*job);
  bool changed = false, updated_meanwhile = false;
  for (model::JobRecord& host : hosts) {
    const model::JobRecord as_read = host;
    if (!job::ReconcileRunner(&host, now_ms)) continue;
    changed = true;
    // The runner may have finished the job after the read: its record stands.
    updated_meanwhile |= absl::IsFailedPrecondition(RecordRunnerLost(db, ingest, host, as_read));
  }
  if (updated_meanwhile) {
    absl::StatusOr<std::optional<model::JobRecord>> latest =
        query::StoreReader(db).GetJob(job->name);
    if (latest.ok() && latest->has_value()) {
      *job = **std::move(latest);
      return true;
    }
  }
  if (changed) *job = model::MergeHostRecords(std::move(hosts));
  return changed;
}

absl::Status StopJobHosts(store::Db& db, const model::JobRecord& job, ingest::Ingest* ingest) {
  // A job of several hosts is Stopping while any one host is: the others,
  // still InProgress, are stopped all the same.
  const std::vector<model::JobRecord> hosts = model::HostRecords(job);
  if (std::none_of(hosts.begin(), hosts.end(), [](const model::JobRecord& host) {
        return host.status == model::JobStatus::kInProgress;
      })) {
    return absl::FailedPreconditionError(
        absl::StrFormat("The request was rejected because the training job is in status %s.",
                        model::JobStatusName(job.status)));
  }
  bool stopping = false;
  absl::Status first_error;
  for (model::JobRecord host : hosts) {
    if (host.status != model::JobStatus::kInProgress) continue;
    absl::Status s;
    if (job::CheckRunner(host.runner) == job::RunnerState::kOnOtherHost && db.writable()) {
      s = db.RequestStop(host.name, host.host_index, db.clock().NowMs());
    } else {
      s = job::RequestStop(host);
      const model::JobRecord as_read = host;
      if (absl::IsNotFound(s) && job::ReconcileRunner(&host, db.clock().NowMs())) {
        // FailedPrecondition: the runner's own update came in between; the
        // caller reads the job again.
        RecordRunnerLost(db, ingest, host, as_read).IgnoreError();
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

absl::StatusOr<std::optional<model::JobRecord>> LoadJob(store::Db& db, std::string_view name,
                                                        ingest::Ingest* ingest) {
  auto job = query::StoreReader(db).GetJob(std::string(name));
  if (!job.ok() || !job->has_value()) return job;
  ReconcileJob(db, &**job, ingest);
  return job;
}

absl::Status JobNotFound(std::string_view name, const std::string& data_dir) {
  return absl::NotFoundError(absl::StrFormat(
      "no training job named \"%s\" in %s; `trainwatch jobs --data %s` lists the jobs there",
      std::string(name), data_dir, data_dir));
}

}  // namespace trainwatch::app
