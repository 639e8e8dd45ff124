#pragma once
// The api's backends over the store, for `trainwatch server` (composition
// root: it may use every layer).
//
// What is served: CloudWatch metric reads (GetMetricStatistics,
// GetMetricData, ListMetrics through query/metrics.h), CloudWatch Logs
// (reads, and writes when this process holds the data folder's writer lock)
// and SageMaker's job reads and StopTrainingJob (a signal to the job's
// runner), over a store::Db that `trainwatch run` writes. CreateTrainingJob
// is not wired yet (local jobs start with `trainwatch run`).
// Thread-safe (store::Db is).

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "api/backend.h"
#include "ingest/ingest.h"
#include "job/local_jobs.h"
#include "store/db.h"
#include "util/clock.h"

namespace trainwatch::app {

// Opens `data_dir` for `trainwatch server`: as a follower of whoever writes it
// (`trainwatch run`), never holding the writer lock itself, so runs can start
// while the server serves. An empty or missing folder is initialised first.
// `clock` (default: the system clock) must outlive the Db.
absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir,
                                                        util::Clock* clock = nullptr);

// Opens `data_dir` for `trainwatch server`: as its writer when nobody holds
// it (runs then send their data through the server: agent/remote_sink.h), else
// as a follower of the run that does (OpenFollower).
absl::StatusOr<std::unique_ptr<store::Db>> OpenForServer(const std::string& data_dir,
                                                         util::Clock* clock = nullptr);

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
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> heard_ms_;  // lower-cased job name, host
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

class StoreMetricsBackend final : public api::MetricsReader, public model::SampleSink {
 public:
  // Writes go through `ingest` (null for a follower, which refuses them).
  explicit StoreMetricsBackend(store::Db& db, ingest::Ingest* ingest = nullptr)
      : db_(db), ingest_(ingest) {}

  // FailedPrecondition (naming the writer) when this process only follows the folder.
  absl::Status Put(const model::SampleBatch& batch) override;
  // Through query::GetMetricStatistics (tier choice, rounding, percentiles);
  // a GetMetricData query over more than 1440 periods goes through
  // query::GetMetricData (its units aggregated together).
  absl::StatusOr<std::vector<api::StatisticsBucket>> GetStatistics(
      const api::StatisticsQuery& query) override;
  // A reader over one read view of the store.
  absl::StatusOr<std::unique_ptr<api::MetricsReader>> Snapshot() override;
  // Series of the namespace (and metric) from the index, filtered, without
  // units, in MetricId order. O(series in the namespace) a page.
  absl::StatusOr<std::vector<api::MetricId>> ListMetrics(const api::ListMetricsQuery& query) override;

 private:
  store::Db& db_;
  ingest::Ingest* ingest_;
};

class StoreLogsBackend final : public api::LogsBackend {
 public:
  // `db` must outlive the backend.
  // Writes go through `ingest` (null for a follower, which refuses them).
  explicit StoreLogsBackend(store::Db& db, ingest::Ingest* ingest = nullptr)
      : db_(db), ingest_(ingest) {}

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
  ingest::Ingest* ingest_;
};

class StoreJobsBackend final : public api::JobsBackend {
 public:
  // `local` runs CreateTrainingJob's jobs (null: CreateTrainingJob is not
  // served, as in a server that only follows the folder).
  // `contacts` (may be null) tells RecordSilentRunners which runners are silent.
  explicit StoreJobsBackend(store::Db& db, job::LocalJobs* local = nullptr,
                            const RunnerContacts* contacts = nullptr)
      : db_(db), local_(local), contacts_(contacts) {}

  absl::StatusOr<model::JobRecord> CreateTrainingJob(const api::TrainingJobSpec& spec) override;
  // Jobs whose runner died are reported as Failed (app/job_access.h).
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) override;
  absl::StatusOr<std::vector<model::JobRecord>> ListJobs() override;
  // Stops a job run here, or signals the job's runner (job::RequestStop).
  absl::Status StopJob(const std::string& name) override;

  // Records as Failed every running host whose runner is on another machine
  // and has been silent for the contacts' timeout (job::RecordRunnerSilent).
  // The server calls it periodically. Returns how many hosts it recorded.
  int RecordSilentRunners();

 private:
  store::Db& db_;
  job::LocalJobs* local_;
  const RunnerContacts* contacts_;
};

}  // namespace trainwatch::app
