#pragma once
// The api's backends over the store, for `trainwatch server` (composition
// root: it may use every layer).
//
// What is served today: CloudWatch Logs (reads, and PutLogEvents when this
// process holds the data folder's writer lock) and SageMaker's job reads and
// StopTrainingJob (a signal to the job's runner), over a store::Db that
// `trainwatch run` writes. Metric samples and CreateTrainingJob are not
// wired yet (the store keeps no samples yet; local jobs start with
// `trainwatch run`): the server answers those operations "not available".
// Thread-safe (store::Db is).

#include <memory>
#include <string>

#include "api/backend.h"
#include "store/db.h"

namespace trainwatch::app {

// Opens `data_dir` for `trainwatch server`: as a follower of whoever writes it
// (`trainwatch run`), never holding the writer lock itself, so runs can start
// while the server serves. An empty or missing folder is initialised first.
absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir);

class StoreLogsBackend final : public api::LogsBackend {
 public:
  // `db` must outlive the backend.
  explicit StoreLogsBackend(store::Db& db) : db_(db) {}

  // The store creates groups and streams with their first events: these
  // succeed unless the name already exists (AlreadyExists, as AWS answers).
  absl::Status CreateLogGroup(const std::string& group, int64_t now_ms) override;
  absl::Status CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) override;
  absl::StatusOr<std::vector<api::LogGroupInfo>> ListLogGroups(const std::string& prefix) override;
  absl::StatusOr<std::vector<api::LogStreamInfo>> ListLogStreams(const std::string& group,
                                                                 const std::string& prefix) override;
  // FailedPrecondition (naming the writer) when this process only follows the folder.
  absl::StatusOr<std::string> PutLogEvents(const model::LogBatch& batch, int64_t now_ms) override;
  absl::StatusOr<std::vector<api::StoredLogEvent>> ReadLogStream(
      const api::LogReadQuery& query) override;
  absl::StatusOr<api::LogFilterPage> FilterLogEvents(const api::LogFilterQuery& query) override;

 private:
  store::Db& db_;
};

class StoreJobsBackend final : public api::JobsBackend {
 public:
  explicit StoreJobsBackend(store::Db& db) : db_(db) {}

  // Unimplemented: jobs run with `trainwatch run` until the server runs them.
  absl::StatusOr<model::JobRecord> CreateTrainingJob(const api::TrainingJobSpec& spec) override;
  // Jobs whose runner died are reported as Failed (app/job_access.h).
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) override;
  absl::StatusOr<std::vector<model::JobRecord>> ListJobs() override;
  // Signals the job's runner (job::RequestStop).
  absl::Status StopJob(const std::string& name) override;

 private:
  store::Db& db_;
};

}  // namespace trainwatch::app
