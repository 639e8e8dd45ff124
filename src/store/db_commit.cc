// Db's writes: the group commit (Submit, CommitGroup) and the write
// operations that go through it (samples, logs, jobs, deliveries).
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/db.h"
#include "store/db_writer.h"
#include "store/job_codec.h"
#include "util/status_macros.h"
#include "util/mutex.h"

namespace trainwatch::store {

// ---------------------------------------------------------------------------
// Group commit

absl::Status Db::Submit(Writer* w) {
  util::MutexLock lock(queue_mu_);
  queue_.push_back(w);
  while (!w->done && w != queue_.front()) lock.WaitOnce(w->cv);
  if (w->done) return w->status;

  // This writer leads: commit everything queued now, in arrival order.
  constexpr size_t kMaxGroup = 512;
  std::vector<Writer*> group;
  for (Writer* q : queue_) {
    group.push_back(q);
    if (group.size() >= kMaxGroup) break;
  }
  const absl::Status sticky = write_error_;
  lock.Unlock();

  if (!sticky.ok()) {
    for (Writer* g : group) g->status = sticky;
  } else {
    CommitGroup(group);
  }
  lock.Lock();
  for (size_t i = 0; i < group.size(); ++i) {
    Writer* g = queue_.front();
    queue_.pop_front();
    g->done = true;
    if (g != w) g->cv.notify_one();
  }
  if (!queue_.empty()) queue_.front()->cv.notify_one();
  return w->status;
}

namespace {

std::string DeliveryKey(const std::string& agent) { return "delivered/" + agent; }

// " (host algo-N)" for a host other than the first, for messages.
std::string HostSuffix(const model::JobRecord& job) {
  return job.host_index == 1 ? std::string() : absl::StrFormat(" (host algo-%d)", job.host_index);
}

// What every job write needs: a name, a host number, and one host's record.
absl::Status CheckJobWrite(const model::JobRecord& job) {
  if (job.name.empty()) return absl::InvalidArgumentError("a training job needs a name");
  if (job.host_index < 1 || job.host_index > model::kMaxJobHosts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host number %d of training job \"%s\" is out of range 1-%d", job.host_index, job.name,
        model::kMaxJobHosts));
  }
  if (!job.hosts.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the record of training job \"%s\" merges %d hosts; write each host's own record",
        job.name, job.hosts.size()));
  }
  return absl::OkStatus();
}

}  // namespace

void Db::CommitGroup(const std::vector<Writer*>& group) {
  kv::WriteBatch batch;
  const int64_t now_ms = clock_->NowMs();
  // Job records written earlier in this group, by key: a later writer of the
  // same record builds on them, not on the record as last committed (which
  // would lose the earlier write, e.g. the engine's rule statuses under the
  // runner's status update).
  std::map<std::string, std::string> job_records;
  std::map<std::string, int64_t> delivered;  // agent -> seq, as of this group
  bool drain_seals = false;
  for (Writer* w : group) {
    // SealAll promises the data sealed. Without the sealer thread nothing
    // else would encode the jobs, so maintenance does; with it, maintenance
    // writes what the sealer has finished (as any commit does), which
    // bounds how long a sealed head's rows stay in head records when
    // writes stop to about a tick, and keeps encoding off the write path.
    drain_seals = drain_seals || w->kind == Writer::Kind::kSealAll ||
                  (w->kind == Writer::Kind::kMaintain && !options_.background_thread);
    batch.SetSavePoint();
    absl::Status s;
    if (w->delivery != nullptr) {
      auto known = delivered.find(w->delivery->agent);
      if (known == delivered.end()) {
        absl::StatusOr<std::optional<std::string>> v =
            kv_->Get(kv::Cf::kMeta, DeliveryKey(w->delivery->agent));
        if (!v.ok()) {
          batch.RollbackToSavePoint();
          w->status = v.status();
          continue;
        }
        int64_t seq = (*v && (*v)->size() == 8) ? static_cast<int64_t>(coding::GetBig64((*v)->data())) : 0;
        known = delivered.emplace(w->delivery->agent, seq).first;
      }
      if (w->delivery->seq <= known->second) {
        batch.PopSavePoint();
        w->duplicate = true;
        w->status = absl::OkStatus();
        continue;
      }
    }
    if (w->kind == Writer::Kind::kCreateJob || w->kind == Writer::Kind::kUpdateJob ||
        w->kind == Writer::Kind::kRuleStatuses || w->kind == Writer::Kind::kStopRequest) {
      // Each host of a job has its own record (JobHostKey).
      const std::string key = JobHostKey(w->job->name, w->job->host_index);
      absl::StatusOr<std::optional<std::string>> existing;
      if (auto earlier = job_records.find(key); earlier != job_records.end()) {
        existing = std::optional<std::string>(earlier->second);
      } else {
        existing = kv_->Get(kv::Cf::kJobs, key);
      }
      if (!existing.ok()) {
        s = existing.status();
      } else {
        const bool exists = existing->has_value();
        if (w->kind == Writer::Kind::kCreateJob && exists) {
          s = absl::AlreadyExistsError(
              w->job->host_index == 1
                  ? absl::StrFormat("a training job named \"%s\" already exists (names are "
                                    "compared ignoring case); choose another name",
                                    w->job->name)
                  : absl::StrFormat("host algo-%d of training job \"%s\" is already recorded; "
                                    "give each host of the job its own --host number",
                                    w->job->host_index, w->job->name));
        } else if (w->kind != Writer::Kind::kCreateJob && !exists) {
          s = absl::NotFoundError(absl::StrFormat("no training job named \"%s\"%s to update",
                                                  w->job->name, HostSuffix(*w->job)));
        } else if (w->kind != Writer::Kind::kCreateJob) {
          // Two writers share a record: the runner (everything) and the rule
          // engine (rule_statuses). Each keeps what the other wrote; and a
          // stop asked for while the runner was writing an update of its own
          // survives that update (its heartbeat brings it to the runner).
          absl::StatusOr<model::JobRecord> stored = DecodeJob(**existing);
          if (!stored.ok()) {
            s = stored.status();
          } else if (w->kind == Writer::Kind::kRuleStatuses) {
            stored->rule_statuses = w->job->rule_statuses;
            batch.Put(kv::Cf::kJobs, key, job_records[key] = EncodeJob(*stored));
          } else if (w->kind == Writer::Kind::kStopRequest) {
            if (model::IsTerminal(stored->status)) {
              s = absl::FailedPreconditionError(absl::StrFormat(
                  "The request was rejected because the training job is in status %s.",
                  model::JobStatusName(stored->status)));
            } else {
              if (!stored->stop_requested_ms) stored->stop_requested_ms = w->stop_ms;
              batch.Put(kv::Cf::kJobs, key, job_records[key] = EncodeJob(*stored));
            }
          } else if (w->as_read != nullptr &&
                     (model::IsTerminal(stored->status) ||
                      stored->last_modified_ms != w->as_read->last_modified_ms ||
                      stored->transitions != w->as_read->transitions)) {
            s = absl::FailedPreconditionError(absl::StrFormat(
                "training job \"%s\"%s changed since it was read (it is %s now): not written",
                w->job->name, HostSuffix(*w->job), model::JobStatusName(stored->status)));
          } else {
            model::JobRecord kept = *w->job;
            kept.rule_statuses = std::move(stored->rule_statuses);
            if (stored->stop_requested_ms && !w->job->stop_requested_ms &&
                !model::IsTerminal(w->job->status)) {
              kept.stop_requested_ms = stored->stop_requested_ms;
            }
            batch.Put(kv::Cf::kJobs, key, job_records[key] = EncodeJob(kept));
          }
        } else {
          batch.Put(kv::Cf::kJobs, key, job_records[key] = EncodeJob(*w->job));
        }
      }
      if (!s.ok()) {
        batch.RollbackToSavePoint();
        w->status = s;
        continue;
      }
    } else {
      s = PrepareOne(w, &batch, now_ms);
      if (!s.ok()) {
        // The in-memory writer state may already include this writer's part:
        // stop writing rather than risk reusing sequence numbers.
        write_error_ = s;
        for (Writer* g : group) g->status = s;
        return;
      }
    }
    if (w->delivery != nullptr) {
      std::string v;
      coding::PutBig64(&v, static_cast<uint64_t>(w->delivery->seq));
      batch.Put(kv::Cf::kMeta, DeliveryKey(w->delivery->agent), v);
      delivered[w->delivery->agent] = w->delivery->seq;
    }
    batch.PopSavePoint();
    w->status = absl::OkStatus();
  }
  if (async_seal_) {
    HelpSeal();
    CommitSealJobs(drain_seals, &batch);
  }
  FinishHeadLog(&batch);
  if (batch.Count() == 0) {
    if (log_writer_ != nullptr) log_writer_->ForgetMisses();
    return;
  }
  kv::WriteOptions wo;
  wo.sync = options_.sync_writes;
  absl::Status s = kv_->Write(&batch, wo);
  if (s.ok() && log_writer_ != nullptr) log_writer_->ForgetMisses();  // the batch is written
  if (!s.ok()) {
    write_error_ = absl::Status(
        s.code(), absl::StrFormat("writing to \"%s\" failed (%s); reopen the data folder",
                                  paths_.root, s.message()));
    for (Writer* g : group) {
      if (g->status.ok()) g->status = write_error_;
    }
  }
}

absl::Status Db::PrepareOne(Writer* w, kv::WriteBatch* batch, int64_t now_ms) {
  switch (w->kind) {
    case Writer::Kind::kSamples:
      return PrepareSamples(*w->samples, *w->canonical, batch, now_ms);
    case Writer::Kind::kLogs:
      return log_writer_->Prepare(*w->logs, now_ms, batch);
    case Writer::Kind::kMaintain:
      PrepareMaintenance(false, batch, now_ms);
      return absl::OkStatus();
    case Writer::Kind::kSealAll:
      PrepareMaintenance(true, batch, now_ms);
      return absl::OkStatus();
    case Writer::Kind::kCall:
      return w->call(batch);
    case Writer::Kind::kStats: {
      HeadStats& st = *w->stats;
      st.series = registry_->size();
      st.registry_bytes = registry_->MemoryBytes();
      st.head_log_bytes = head_log_bytes_;
      st.open_series = 0;
      st.rows = 0;
      st.head_bytes = heads_.capacity() * (sizeof(SeriesId) + sizeof(void*)) +
                      head_sealed_below_.capacity() * (sizeof(SeriesId) + sizeof(uint64_t) + 1);
      {
        util::MutexLock lock(seal_mu_);
        st.head_bytes += seal_unencoded_bytes_;  // sealed heads not yet encoded
      }
      for (const auto& [id, e] : heads_) {
        if (!e->head.empty()) ++st.open_series;
        st.rows += e->head.rows();
        // MemoryBytes counts the SeriesHead inside the entry already.
        st.head_bytes += sizeof(HeadEntry) - sizeof(SeriesHead) + e->head.MemoryBytes();
      }
      return absl::OkStatus();
    }
    case Writer::Kind::kCreateJob:
    case Writer::Kind::kUpdateJob:
    case Writer::Kind::kRuleStatuses:
    case Writer::Kind::kStopRequest:
      break;
  }
  return absl::InternalError("unexpected writer kind");
}

absl::Status Db::PutSamples(const model::SampleBatch& batch) {
  TW_RETURN_IF_ERROR(RequireWriter());
  if (batch.empty()) return absl::OkStatus();
  TW_RETURN_IF_ERROR(CheckSamples(batch));
  Writer w;
  w.kind = Writer::Kind::kSamples;
  w.samples = &batch;
  w.canonical = CanonicalKeys(batch, &w.canonical_made);
  return Submit(&w);
}

absl::Status Db::PutLogs(const model::LogBatch& batch) {
  TW_RETURN_IF_ERROR(RequireWriter());
  Writer w;
  w.kind = Writer::Kind::kLogs;
  w.logs = &batch;
  return Submit(&w);
}

absl::StatusOr<LogChange> Db::CreateLogGroup(std::string_view group) {
  LogChange change = LogChange::kDone;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    TW_ASSIGN_OR_RETURN(change, log_writer_->CreateGroup(group, clock_->NowMs(), batch));
    return absl::OkStatus();
  }));
  return change;
}

absl::StatusOr<LogChange> Db::CreateLogStream(const model::LogStreamId& stream) {
  LogChange change = LogChange::kDone;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    TW_ASSIGN_OR_RETURN(change, log_writer_->CreateStream(stream, clock_->NowMs(), batch));
    return absl::OkStatus();
  }));
  return change;
}

absl::StatusOr<LogChange> Db::DeleteLogGroup(std::string_view group) {
  LogChange change = LogChange::kDone;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    TW_ASSIGN_OR_RETURN(change, log_writer_->DeleteGroup(group, batch));
    return absl::OkStatus();
  }));
  return change;
}

absl::StatusOr<LogChange> Db::DeleteLogStream(const model::LogStreamId& stream) {
  LogChange change = LogChange::kDone;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    TW_ASSIGN_OR_RETURN(change, log_writer_->DeleteStream(stream, batch));
    return absl::OkStatus();
  }));
  return change;
}

absl::StatusOr<LogChange> Db::SetLogRetention(std::string_view group, std::optional<int> days) {
  LogChange change = LogChange::kDone;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    TW_ASSIGN_OR_RETURN(change, log_writer_->SetRetention(group, days, batch));
    return absl::OkStatus();
  }));
  if (change == LogChange::kDone && days) last_log_expiry_ms_ = INT64_MIN;
  return change;
}

absl::Status Db::CreateJob(const model::JobRecord& job) {
  TW_RETURN_IF_ERROR(RequireWriter());
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kCreateJob;
  w.job = &job;
  return Submit(&w);
}

absl::StatusOr<bool> Db::SubmitDelivered(Writer* w, const Delivery& delivery) {
  TW_RETURN_IF_ERROR(RequireWriter());
  if (delivery.agent.empty() || delivery.agent.size() > 200 || delivery.seq <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a delivery needs an agent name of 1-200 bytes and a batch number > 0 (got \"%s\", %d)",
        delivery.agent.substr(0, 200), delivery.seq));
  }
  w->delivery = &delivery;
  TW_RETURN_IF_ERROR(Submit(w));
  return !w->duplicate;
}

absl::StatusOr<bool> Db::PutSamples(const model::SampleBatch& batch, const Delivery& delivery) {
  TW_RETURN_IF_ERROR(CheckSamples(batch));
  Writer w;
  w.kind = Writer::Kind::kSamples;
  w.samples = &batch;
  w.canonical = CanonicalKeys(batch, &w.canonical_made);
  return SubmitDelivered(&w, delivery);
}

absl::StatusOr<bool> Db::PutLogs(const model::LogBatch& batch, const Delivery& delivery) {
  Writer w;
  w.kind = Writer::Kind::kLogs;
  w.logs = &batch;
  return SubmitDelivered(&w, delivery);
}

absl::StatusOr<bool> Db::CreateJob(const model::JobRecord& job, const Delivery& delivery) {
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kCreateJob;
  w.job = &job;
  return SubmitDelivered(&w, delivery);
}

absl::StatusOr<bool> Db::UpdateJob(const model::JobRecord& job, const Delivery& delivery) {
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kUpdateJob;
  w.job = &job;
  return SubmitDelivered(&w, delivery);
}

absl::StatusOr<int64_t> Db::DeliveredUpTo(const std::string& agent) {
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, kv_->Get(kv::Cf::kMeta, DeliveryKey(agent)));
  return (v && v->size() == 8) ? static_cast<int64_t>(coding::GetBig64(v->data())) : 0;
}

absl::Status Db::SetRuleStatuses(const std::string& name, int host_index,
                                 const std::vector<model::RuleStatus>& statuses) {
  TW_RETURN_IF_ERROR(RequireWriter());
  model::JobRecord job;
  job.name = name;
  job.host_index = host_index;
  job.rule_statuses = statuses;
  Writer w;
  w.kind = Writer::Kind::kRuleStatuses;
  w.job = &job;
  return Submit(&w);
}

absl::Status Db::UpdateJob(const model::JobRecord& job) {
  TW_RETURN_IF_ERROR(RequireWriter());
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kUpdateJob;
  w.job = &job;
  return Submit(&w);
}

absl::Status Db::UpdateJobIfUnchanged(const model::JobRecord& job,
                                      const model::JobRecord& as_read) {
  TW_RETURN_IF_ERROR(RequireWriter());
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kUpdateJob;
  w.job = &job;
  w.as_read = &as_read;
  return Submit(&w);
}

absl::Status Db::RequestStop(const std::string& name, int host_index, int64_t now_ms) {
  TW_RETURN_IF_ERROR(RequireWriter());
  model::JobRecord job;
  job.name = name;
  job.host_index = host_index;
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kStopRequest;
  w.job = &job;
  w.stop_ms = now_ms;
  return Submit(&w);
}

absl::Status Db::PutAlarm(const model::AlarmRecord& alarm) {
  TW_RETURN_IF_ERROR(RequireWriter());
  const std::string key = AlarmKey(alarm.definition.name);
  const std::string value = model::EncodeAlarmRecord(alarm);
  return RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    batch->Put(kv::Cf::kJobs, key, value);
    return absl::OkStatus();
  });
}

absl::Status Db::DeleteAlarm(std::string_view name) {
  TW_RETURN_IF_ERROR(RequireWriter());
  const std::string key = AlarmKey(name);
  return RunAsLeader([&](kv::WriteBatch* batch) -> absl::Status {
    batch->Delete(kv::Cf::kJobs, key);
    return absl::OkStatus();
  });
}

}  // namespace trainwatch::store
