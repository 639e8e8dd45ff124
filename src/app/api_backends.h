#pragma once
// The api's write and job backends over the store, for `trainwatch server`
// (composition root: it may use every layer). Reads are query::StoreReader's
// (query/store_reader.h); these only wire writes to ingest and jobs to the
// job layer.
//
// What is served: PutMetricData, native ingest and CloudWatch Logs' writes
// through ingest (when this process holds the data folder's writer lock),
// agents' batches and heartbeats, and SageMaker's jobs: CreateTrainingJob
// (a local job, app/local_jobs.h), job reads reconciled with their runners,
// and StopTrainingJob (a signal to the job's runner).
// Thread-safe (store::Db is).

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "api/backend.h"
#include "app/open_store.h"
#include "ingest/ingest.h"
#include "job/local_jobs.h"
#include "query/reader.h"
#include "store/db.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::app {

// When the server last heard from each job host's runner (heartbeats), so
// that it can record a runner on another machine that went silent as Failed:
// it cannot check that process itself. Kept in memory: after a server start
// every runner has `timeout_ms` to be heard from. Thread-safe.
class RunnerContacts {
 public:
  RunnerContacts(util::Clock* clock, int64_t timeout_ms);
  void Heard(std::string_view job, int host);
  // Not heard from for timeout_ms (counted from this object's creation when
  // never heard from).
  bool Silent(std::string_view job, int host) const;
  int64_t timeout_ms() const { return timeout_ms_; }

 private:
  util::Clock* const clock_;
  const int64_t timeout_ms_;
  const int64_t since_ms_;
  mutable util::Mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> heard_ms_ ABSL_GUARDED_BY(mu_);  // lower-cased job name, host
};

// Agents' batches (POST /api/v1/agent/deliver) through ingest, exactly once,
// and their heartbeats (noted in `contacts`, which may be null).
class StoreAgentBackend final : public api::AgentBackend {
 public:
  explicit StoreAgentBackend(ingest::Ingest& ingest, RunnerContacts* contacts = nullptr)
      : ingest_(ingest), contacts_(contacts) {}
  absl::StatusOr<bool> Deliver(const api::AgentBatch& batch) override;
  absl::StatusOr<bool> Heartbeat(const api::AgentHeartbeat& heartbeat) override;

 private:
  ingest::Ingest& ingest_;
  RunnerContacts* contacts_;
};

// PutMetricData and native ingest through ingest.
class StoreSampleWriter final : public model::SampleSink {
 public:
  // Writes go through `ingest` (null for a follower, which refuses them).
  explicit StoreSampleWriter(store::Db& db, ingest::Ingest* ingest = nullptr)
      : db_(db), ingest_(ingest) {}
  // FailedPrecondition (naming the writer) when this process only follows the folder.
  absl::Status Put(const model::SampleBatch& batch) override;

 private:
  store::Db& db_;
  ingest::Ingest* ingest_;
};

// CloudWatch Logs' writes through ingest; `reader` answers whether a group
// or stream exists.
class StoreLogsWriter final : public api::LogsWriter {
 public:
  // `db` and `reader` must outlive the writer. Writes go through `ingest`
  // (null for a follower, which refuses them).
  StoreLogsWriter(store::Db& db, query::LogsReader& reader, ingest::Ingest* ingest = nullptr)
      : db_(db), reader_(reader), ingest_(ingest) {}

  // As api::LogsWriter says; each is FailedPrecondition (naming the
  // writer) when this process only follows the folder.
  absl::Status CreateLogGroup(const std::string& group, int64_t now_ms) override;
  absl::Status CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) override;
  absl::Status DeleteLogGroup(const std::string& group) override;
  absl::Status DeleteLogStream(const model::LogStreamId& stream) override;
  absl::Status PutRetentionPolicy(const std::string& group, std::optional<int> days) override;
  // The stream must exist. A stream deleted while its events are written is
  // created again with them.
  absl::StatusOr<std::string> PutLogEvents(const model::LogBatch& batch, int64_t now_ms) override;

 private:
  store::Db& db_;
  query::LogsReader& reader_;
  ingest::Ingest* ingest_;
};

class StoreJobsBackend final : public api::JobsBackend {
 public:
  // `ingest` (null for a follower) records the jobs whose runners are gone
  // (app/job_access.h). `local` runs CreateTrainingJob's jobs (null:
  // CreateTrainingJob is not served, as in a server that only follows the
  // folder). `contacts` (may be null) tells RecordSilentRunners which runners
  // are silent.
  explicit StoreJobsBackend(store::Db& db, ingest::Ingest* ingest = nullptr,
                            job::LocalJobs* local = nullptr,
                            const RunnerContacts* contacts = nullptr)
      : db_(db), ingest_(ingest), local_(local), contacts_(contacts) {}

  absl::StatusOr<model::JobRecord> CreateTrainingJob(const api::TrainingJobSpec& spec) override;
  // Jobs whose runner died are reported as Failed (app/job_access.h).
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) override;
  absl::StatusOr<std::vector<model::JobRecord>> ListJobs() override;
  // Stops a job run here, or signals the job's runner (job::RequestStop).
  absl::Status StopJob(const std::string& name) override;
  // The same, with the Stopped status's message for a job run here (a rule's
  // StopTraining action says which rule and why).
  absl::Status StopJob(const std::string& name, const std::string& message);

  // Records as Failed every running host whose runner is on another machine
  // and has been silent for the contacts' timeout (job::RecordRunnerSilent).
  // The server calls it periodically. Returns how many hosts it recorded.
  int RecordSilentRunners();

 private:
  store::Db& db_;
  ingest::Ingest* ingest_;
  job::LocalJobs* local_;
  const RunnerContacts* contacts_;
};

}  // namespace trainwatch::app
