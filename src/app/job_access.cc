#include "app/job_access.h"

#include "absl/strings/str_format.h"
#include "job/runner_identity.h"
#include "util/log.h"

namespace trainwatch::app {

absl::StatusOr<std::unique_ptr<store::Db>> OpenForRead(const std::string& data_dir) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kWriterIfFree;
  // A read command is short-lived: no background maintenance thread.
  options.background_thread = false;
  auto db = store::Db::Open(options);
  if (!db.ok() && absl::IsNotFound(db.status())) {
    return absl::NotFoundError(absl::StrFormat(
        "no trainwatch data in %s (run a job with `trainwatch run` first, or point --data / "
        "TRAINWATCH_DATA at the folder a job used)",
        data_dir));
  }
  return db;
}

bool ReconcileJob(store::Db& db, model::JobRecord* job) {
  if (!job::ReconcileRunner(job, db.clock().NowMs())) return false;
  if (db.writable()) {
    if (absl::Status s = db.UpdateJob(*job); !s.ok()) {
      util::LogWarning(absl::StrFormat("job %s: could not record that its runner is gone: %s",
                                       job->name, s.ToString()));
    }
  }
  return true;
}

absl::StatusOr<std::optional<model::JobRecord>> LoadJob(store::Db& db, std::string_view name) {
  auto job = db.GetJob(name);
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
