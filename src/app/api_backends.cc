#include "app/api_backends.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "app/job_access.h"
#include "job/runner_identity.h"
#include "query/store_reader.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::app {

RunnerContacts::RunnerContacts(util::Clock* clock, int64_t timeout_ms)
    : clock_(clock), timeout_ms_(timeout_ms), since_ms_(clock->NowMs()) {}

void RunnerContacts::Heard(std::string_view job, int host) {
  const int64_t now_ms = clock_->NowMs();
  util::MutexLock lock(mu_);
  heard_ms_[{absl::AsciiStrToLower(std::string(job)), host}] = now_ms;
}

bool RunnerContacts::Silent(std::string_view job, int host) const {
  const int64_t now_ms = clock_->NowMs();
  util::MutexLock lock(mu_);
  auto it = heard_ms_.find({absl::AsciiStrToLower(std::string(job)), host});
  const int64_t last_ms = it == heard_ms_.end() ? since_ms_ : std::max(it->second, since_ms_);
  return now_ms - last_ms >= timeout_ms_;
}

absl::StatusOr<bool> StoreAgentBackend::Heartbeat(const api::AgentHeartbeat& heartbeat) {
  absl::StatusOr<std::optional<model::JobRecord>> job = ingest_.GetJob(heartbeat.job);
  if (!job.ok()) return job.status();
  const model::JobRecord* host =
      job->has_value() ? model::FindHost(**job, heartbeat.host) : nullptr;
  if (host == nullptr) {
    return absl::NotFoundError(absl::StrFormat("training job \"%s\" has no host %d",
                                               heartbeat.job, heartbeat.host));
  }
  if (!(host->runner == heartbeat.runner)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "host %d of training job \"%s\" is run by pid %d on %s, not by this runner",
        heartbeat.host, heartbeat.job, host->runner.pid, host->runner.hostname));
  }
  if (contacts_ != nullptr) contacts_->Heard(heartbeat.job, heartbeat.host);
  return host->stop_requested_ms.has_value();
}

absl::StatusOr<bool> StoreAgentBackend::Deliver(const api::AgentBatch& batch) {
  const store::Delivery delivery{batch.agent, batch.seq};
  switch (batch.kind) {
    case api::AgentBatch::Kind::kSamples: return ingest_.Put(batch.samples, delivery);
    case api::AgentBatch::Kind::kLogs: return ingest_.PutLogs(batch.logs, delivery);
    case api::AgentBatch::Kind::kCreateJob: return ingest_.CreateJob(batch.job, delivery);
    case api::AgentBatch::Kind::kUpdateJob: return ingest_.UpdateJob(batch.job, delivery);
  }
  return absl::InvalidArgumentError("unknown agent batch kind");
}


absl::Status StoreSampleWriter::Put(const model::SampleBatch& batch) {
  if (ingest_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this server follows %s, which %s writes; metrics reach it through that writer",
        db_.data_dir(), db_.WriterDescription()));
  }
  return ingest_->Put(batch);
}

namespace {

// The store's answer to a change of a log group or stream, in CloudWatch
// Logs' words.
absl::Status LogChangeStatus(absl::StatusOr<store::LogChange> change) {
  if (!change.ok()) return change.status();
  switch (*change) {
    case store::LogChange::kDone: return absl::OkStatus();
    case store::LogChange::kExists: return absl::AlreadyExistsError("exists");
    case store::LogChange::kNoGroup: return absl::NotFoundError(query::kGroupNotFound);
    case store::LogChange::kNoStream: return absl::NotFoundError(query::kStreamNotFound);
  }
  return absl::InternalError("unknown log change");
}

}  // namespace

absl::Status StoreLogsWriter::CreateLogGroup(const std::string& group, int64_t) {
  return LogChangeStatus(db_.CreateLogGroup(group));
}

absl::Status StoreLogsWriter::CreateLogStream(const model::LogStreamId& stream, int64_t) {
  return LogChangeStatus(db_.CreateLogStream(stream));
}

absl::Status StoreLogsWriter::DeleteLogGroup(const std::string& group) {
  return LogChangeStatus(db_.DeleteLogGroup(group));
}

absl::Status StoreLogsWriter::DeleteLogStream(const model::LogStreamId& stream) {
  return LogChangeStatus(db_.DeleteLogStream(stream));
}

absl::Status StoreLogsWriter::PutRetentionPolicy(const std::string& group,
                                                 std::optional<int> days) {
  return LogChangeStatus(db_.SetLogRetention(group, days));
}

absl::StatusOr<std::string> StoreLogsWriter::PutLogEvents(const model::LogBatch& batch, int64_t) {
  if (ingest_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this server follows %s, which %s writes; log events reach it through that writer",
        db_.data_dir(), db_.WriterDescription()));
  }
  absl::StatusOr<std::vector<api::LogStreamInfo>> streams =
      reader_.ListLogStreams(batch.stream.group, batch.stream.stream);
  if (!streams.ok()) return streams.status();
  if (std::none_of(streams->begin(), streams->end(), [&](const api::LogStreamInfo& s) {
        return s.name == batch.stream.stream;
      })) {
    return absl::NotFoundError(query::kStreamNotFound);
  }
  if (absl::Status s = ingest_->PutLogs(batch); !s.ok()) return s;
  return absl::StrFormat("%056d", db_.clock().NowMs());
}

absl::StatusOr<model::JobRecord> StoreJobsBackend::CreateTrainingJob(
    const api::TrainingJobSpec& spec) {
  if (local_ == nullptr) {
    return absl::UnimplementedError(
        "this trainwatch server only follows its data folder (a run held it when the server "
        "started), so it cannot start jobs; start them with `trainwatch run`, or restart the "
        "server once no run holds the folder");
  }
  return local_->Start(spec);
}

absl::StatusOr<std::optional<model::JobRecord>> StoreJobsBackend::GetJob(const std::string& name) {
  return LoadJob(db_, name, ingest_);
}

absl::StatusOr<std::vector<model::JobRecord>> StoreJobsBackend::ListJobs() {
  absl::StatusOr<std::vector<model::JobRecord>> jobs = query::StoreReader(db_).ListJobs();
  if (!jobs.ok()) return jobs.status();
  for (model::JobRecord& job : *jobs) ReconcileJob(db_, &job, ingest_);
  return jobs;
}

int StoreJobsBackend::RecordSilentRunners() {
  if (contacts_ == nullptr || !db_.writable()) return 0;
  absl::StatusOr<std::vector<model::JobRecord>> jobs = query::StoreReader(db_).ListJobs();
  if (!jobs.ok()) return 0;
  std::vector<model::JobRecord> running;
  for (model::JobRecord& job : *jobs) {
    if (!model::IsTerminal(job.status)) running.push_back(std::move(job));
  }
  int recorded = 0;
  for (const model::JobRecord& job : running) {
    for (model::JobRecord& host : model::HostRecords(job)) {
      if (model::IsTerminal(host.status) ||
          job::CheckRunner(host.runner) != job::RunnerState::kOnOtherHost ||
          !contacts_->Silent(host.name, host.host_index)) {
        continue;
      }
      const model::JobRecord as_read = host;
      job::RecordRunnerSilent(&host, db_.clock().NowMs(), contacts_->timeout_ms());
      // Not when the runner's own update came in between (FailedPrecondition).
      if (RecordRunnerLost(db_, ingest_, host, as_read).ok()) ++recorded;
    }
  }
  return recorded;
}

absl::Status StoreJobsBackend::StopJob(const std::string& name) { return StopJob(name, ""); }

absl::Status StoreJobsBackend::StopJob(const std::string& name, const std::string& message) {
  absl::StatusOr<std::optional<model::JobRecord>> job = LoadJob(db_, name, ingest_);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return absl::NotFoundError(name);
  if (local_ != nullptr && (*job)->status == model::JobStatus::kInProgress) {
    if (local_->Stop((*job)->name, message)) return absl::OkStatus();
    // A job this server ran, which ended after the read: its runner is this
    // process, which a signal would stop instead.
    const model::RunnerIdentity self = job::CurrentRunnerIdentity();
    for (const model::JobRecord& host : model::HostRecords(**job)) {
      if (host.runner == self) {
        absl::StatusOr<std::optional<model::JobRecord>> latest = LoadJob(db_, name, ingest_);
        if (!latest.ok() || !latest->has_value()) {
          return absl::FailedPreconditionError(
              "The request was rejected because the training job is no longer running.");
        }
        return absl::FailedPreconditionError(absl::StrFormat(
            "The request was rejected because the training job is in status %s.",
            model::JobStatusName((*latest)->status)));
      }
    }
  }
  absl::Status s = StopJobHosts(db_, **job, ingest_);
  if (absl::IsNotFound(s)) {
    // The runner is gone: the job is recorded as Failed, so it cannot be stopped.
    absl::StatusOr<std::optional<model::JobRecord>> latest = LoadJob(db_, name, ingest_);
    model::JobStatus status = model::JobStatus::kFailed;
    if (latest.ok() && latest->has_value()) status = (*latest)->status;
    return absl::FailedPreconditionError(std::string(model::JobStatusName(status)));
  }
  return s;
}

}  // namespace trainwatch::app
