#include "store/db.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/job_codec.h"
#include "store/rollup.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::store {

struct Db::Writer {
  enum class Kind {
    kSamples, kLogs, kCreateJob, kUpdateJob, kMaintain, kSealAll, kStats, kCall
  } kind;
  std::function<absl::Status(kv::WriteBatch*)> call;
  const model::SampleBatch* samples = nullptr;
  // samples' keys, Canonical(): the batch's own canonical_keys, or made by
  // the writer's own thread before it queues (the leader's work is what
  // every writer waits for) and kept in canonical_made.
  const std::vector<std::string>* canonical = nullptr;
  std::vector<std::string> canonical_made;
  const model::LogBatch* logs = nullptr;
  const model::JobRecord* job = nullptr;
  HeadStats* stats = nullptr;
  const Delivery* delivery = nullptr;
  bool duplicate = false;  // set for a delivery seen before: nothing written
  absl::Status status;
  bool done = false;
  std::condition_variable cv;
};

Db::Db(DbOptions options, DataFolderPaths paths, util::Clock* clock, RetentionPolicy retention)
    : options_(std::move(options)),
      paths_(std::move(paths)),
      clock_(clock),
      retention_(std::make_shared<const RetentionPolicy>(std::move(retention))) {}

std::shared_ptr<const RetentionPolicy> Db::retention() const {
  std::lock_guard<std::mutex> lock(retention_mu_);
  return retention_;
}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(DbOptions options) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("no data folder given (DbOptions::data_dir is empty)");
  }
  util::Clock* clock = options.clock != nullptr ? options.clock : &util::SystemClock::Get();
  DataFolderPaths paths(options.data_dir);
  // First, before anything reads or writes the folder: one of another data
  // format is refused as it is (data_folder.h).
  TW_RETURN_IF_ERROR(CheckDataFormat(paths).status());
  RetentionPolicy retention;
  if (options.retention) {
    retention = *options.retention;
  } else {
    TW_ASSIGN_OR_RETURN(retention, RetentionPolicy::LoadFile(paths.retention));
  }
  if (options.command.empty()) options.command = CurrentCommandLine();
  const OpenMode mode = options.mode;
  std::unique_ptr<Db> db(new Db(std::move(options), paths, clock, std::move(retention)));

  std::error_code ec;
  const bool has_data = std::filesystem::exists(paths.db + "/CURRENT", ec);
  if (mode != OpenMode::kWriter && !has_data) {
    return absl::NotFoundError(absl::StrFormat(
        "no trainwatch data in \"%s\": nothing has been recorded there yet; start a job with "
        "`trainwatch run` first, or point --data (or TRAINWATCH_DATA) at the folder a run wrote",
        paths.root));
  }
  bool writer = false;
  if (mode == OpenMode::kWriter || mode == OpenMode::kWriterIfFree) {
    absl::StatusOr<std::unique_ptr<WriterLock>> lock =
        WriterLock::Acquire(paths, db->options_.command, clock->NowMs());
    if (lock.ok()) {
      db->lock_ = std::move(*lock);
      writer = true;
    } else if (mode == OpenMode::kWriter || !absl::IsFailedPrecondition(lock.status())) {
      return lock.status();
    }
  }
  if (writer) {
    // Checked again under the lock. A new folder gets its format file before
    // RocksDB creates db/; a folder written before the file existed (its db/
    // is format 1) gets it now.
    TW_ASSIGN_OR_RETURN(const bool has_format, CheckDataFormat(paths));
    if (!has_format) TW_RETURN_IF_ERROR(WriteDataFormat(paths));
  }
  TW_RETURN_IF_ERROR(db->OpenKv(writer));
  if (writer) {
    RemoveStaleReaderScratch(paths);
    if (absl::Status s = db->LoadWriterState(); !s.ok()) {
      // A half-loaded head must not reach the disk: ~Db checkpoints only
      // while no write failed.
      db->write_error_ = s;
      return s;
    }
    // From here on seals are queued (SealJob) and, with the background
    // threads, encoded off the commit path; replay sealed in the leader.
    db->async_seal_ = true;
    if (db->options_.background_thread) {
      db->seal_thread_ = std::thread([p = db.get()] { p->SealerLoop(); });
      db->maint_thread_ = std::thread([p = db.get()] { p->MaintenanceLoop(); });
    }
  }
  return db;
}

absl::Status Db::OpenKv(bool writer) {
  kv::KvOptions ko;
  ko.path = paths_.db;
  ko.block_cache_bytes = options_.block_cache_bytes;
  ko.write_buffer_bytes = options_.write_buffer_bytes;
  ko.head_write_buffer_bytes = options_.head_write_buffer_bytes;
  ko.observe_writes = options_.observe_writes_for_test;
  ko.bulk_load = options_.bulk_load && writer;
  if (writer) {
    ko.mode = kv::OpenMode::kPrimary;
    ko.create_if_missing = true;
    ko.drop = [this](kv::Cf cf, std::string_view key, std::string_view value) {
      return DropRecord(cf, key, value);
    };
  } else {
    ko.mode = kv::OpenMode::kSecondary;
    TW_ASSIGN_OR_RETURN(reader_scratch_, MakeReaderScratch(paths_));
    ko.secondary_path = reader_scratch_;
  }
  absl::StatusOr<std::unique_ptr<kv::Kv>> kv = kv::Kv::Open(ko);
  if (!kv.ok()) {
    return absl::Status(kv.status().code(),
                        absl::StrFormat("data folder \"%s\": %s", paths_.root,
                                        kv.status().message()));
  }
  kv_ = std::move(*kv);
  if (options_.rollup_cache_bytes > 0) {
    rollup_cache_ = std::make_unique<RollupRecordCache>(options_.rollup_cache_bytes);
  }
  return absl::OkStatus();
}

absl::Status Db::LoadWriterState() {
  log_writer_ = std::make_unique<LogWriter>(kv_.get());
  TW_RETURN_IF_ERROR(log_writer_->Load());
  chunk_seq_ = std::make_unique<Counter>("chunk_seq", 1 << 20);
  TW_RETURN_IF_ERROR(chunk_seq_->Load(*kv_));
  registry_ = std::make_unique<SeriesRegistry>(kv_.get());
  TW_RETURN_IF_ERROR(registry_->Load());
  TW_RETURN_IF_ERROR(LoadRetentionById());
  return ReplayHead();
}

absl::Status Db::LoadRetentionById() {
  // Retention of every known series, for the compaction filter.
  std::shared_ptr<const RetentionPolicy> policy = retention();
  {
    kv::ReadOptions ro;
    ro.lower_bound = "i";
    ro.upper_bound = "j";
    ro.fill_cache = false;
    auto it = kv_->NewIterator(kv::Cf::kIndex, ro);
    absl::flat_hash_map<SeriesId, TierRetention> by_id;
    model::SeriesKey key;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().size() != 9 || !indexkeys::DecodeSeriesKey(it->value(), &key)) {
        return absl::DataLossError("a series index record is damaged");
      }
      by_id[coding::GetBig64(it->key().data() + 1)] = policy->For(key.ns);
    }
    TW_RETURN_IF_ERROR(it->status());
    std::lock_guard<std::mutex> lock(drop_mu_);
    retention_by_id_ = std::move(by_id);
  }
  return absl::OkStatus();
}

absl::Status Db::AddRetentionRule(std::string_view pattern, std::string_view settings) {
  TW_RETURN_IF_ERROR(RequireWriter());
  RetentionPolicy next = *retention();
  TW_RETURN_IF_ERROR(next.AddRule(pattern, settings));
  // Persist first (write a new file, then rename it over the old one).
  const std::string tmp = paths_.retention + ".tmp";
  {
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrFormat("cannot write \"%s\": %s", tmp, std::strerror(errno)));
    }
    std::string text =
        "# trainwatch retention rules (docs/store.md): <namespace pattern> <tier>=<duration>...\n" +
        next.ToText();
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) {
      return absl::InternalError(absl::StrFormat("cannot write \"%s\"", tmp));
    }
  }
  if (std::rename(tmp.c_str(), paths_.retention.c_str()) != 0) {
    return absl::InternalError(absl::StrFormat("cannot replace \"%s\": %s", paths_.retention,
                                               std::strerror(errno)));
  }
  {
    std::lock_guard<std::mutex> lock(retention_mu_);
    retention_ = std::make_shared<const RetentionPolicy>(std::move(next));
  }
  TW_RETURN_IF_ERROR(RunAsLeader([this](kv::WriteBatch*) {
    retention_by_ns_.clear();
    for (auto& [id, entry] : heads_) entry->retention = RetentionFor(entry->ns);
    return absl::OkStatus();
  }));
  return LoadRetentionById();
}

Db::~Db() {
  {
    std::lock_guard<std::mutex> lock(maint_mu_);
    stopping_ = true;
  }
  maint_cv_.notify_all();
  if (maint_thread_.joinable()) maint_thread_.join();
  if (kv_ && writable()) {
    // An empty head log on a clean close: only a crash leaves log records
    // (which binaries older than the log cannot read; docs/format/store.md).
    absl::Status s;
    if (write_error_.ok()) {  // no other writer is left
      s = RunAsLeader([this](kv::WriteBatch* batch) {
        CommitSealJobs(/*all=*/true, batch);
        CheckpointHeadLog(batch);
        return absl::OkStatus();
      });
    }
    // Jobs left behind (a failed write) keep their rows in head records,
    // which the next writer replays.
    StopSealer();
    if (s.ok()) s = kv_->SyncWal();
    if (!s.ok()) util::LogWarning(absl::StrFormat("closing the store: %s", s.message()));
  }
  kv_.reset();
  lock_.reset();
  if (!reader_scratch_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(reader_scratch_, ec);
  }
}

std::string Db::WriterDescription() const {
  if (writable()) return "";
  WriterInfo info = ReadWriterInfo(paths_);
  if (info.pid <= 0) return "no writer";
  return absl::StrFormat("process %d (%s)", info.pid, info.command);
}

absl::Status Db::RequireWriter() const {
  if (writable()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "the data folder \"%s\" is open read-only because %s writes it; only the writer can "
      "change it (retry when it has finished)",
      paths_.root, WriterDescription()));
}

// ---------------------------------------------------------------------------
// Group commit

absl::Status Db::Submit(Writer* w) {
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_.push_back(w);
  while (!w->done && w != queue_.front()) w->cv.wait(lock);
  if (w->done) return w->status;

  // This writer leads: commit everything queued now, in arrival order.
  constexpr size_t kMaxGroup = 512;
  std::vector<Writer*> group;
  for (Writer* q : queue_) {
    group.push_back(q);
    if (group.size() >= kMaxGroup) break;
  }
  const absl::Status sticky = write_error_;
  lock.unlock();

  if (!sticky.ok()) {
    for (Writer* g : group) g->status = sticky;
  } else {
    CommitGroup(group);
  }
  lock.lock();
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
  std::set<std::string> created;  // job keys created earlier in this group
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
    if (w->kind == Writer::Kind::kCreateJob || w->kind == Writer::Kind::kUpdateJob) {
      // Each host of a job has its own record (JobHostKey).
      const std::string key = JobHostKey(w->job->name, w->job->host_index);
      absl::StatusOr<std::optional<std::string>> existing = kv_->Get(kv::Cf::kJobs, key);
      if (!existing.ok()) {
        s = existing.status();
      } else {
        const bool exists = existing->has_value() || created.count(key) > 0;
        if (w->kind == Writer::Kind::kCreateJob && exists) {
          s = absl::AlreadyExistsError(
              w->job->host_index == 1
                  ? absl::StrFormat("a training job named \"%s\" already exists (names are "
                                    "compared ignoring case); choose another name",
                                    w->job->name)
                  : absl::StrFormat("host algo-%d of training job \"%s\" is already recorded; "
                                    "give each host of the job its own --host number",
                                    w->job->host_index, w->job->name));
        } else if (w->kind == Writer::Kind::kUpdateJob && !exists) {
          s = absl::NotFoundError(absl::StrFormat("no training job named \"%s\"%s to update",
                                                  w->job->name, HostSuffix(*w->job)));
        } else if (w->kind == Writer::Kind::kUpdateJob && existing->has_value() &&
                   !w->job->stop_requested_ms) {
          // A stop asked for while the runner was writing an update of its own
          // must survive that update (its heartbeat brings it to the runner).
          absl::StatusOr<model::JobRecord> stored = DecodeJob(**existing);
          if (stored.ok() && stored->stop_requested_ms && !model::IsTerminal(w->job->status)) {
            model::JobRecord kept = *w->job;
            kept.stop_requested_ms = stored->stop_requested_ms;
            batch.Put(kv::Cf::kJobs, key, EncodeJob(kept));
          } else {
            batch.Put(kv::Cf::kJobs, key, EncodeJob(*w->job));
          }
        } else {
          batch.Put(kv::Cf::kJobs, key, EncodeJob(*w->job));
          created.insert(key);
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
  if (batch.Count() == 0) return;
  kv::WriteOptions wo;
  wo.sync = options_.sync_writes;
  absl::Status s = kv_->Write(&batch, wo);
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
        std::lock_guard<std::mutex> lock(seal_mu_);
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
  TW_ASSIGN_OR_RETURN(w.canonical, CanonicalKeys(batch, &w.canonical_made));
  return Submit(&w);
}

absl::Status Db::PutLogs(const model::LogBatch& batch) {
  TW_RETURN_IF_ERROR(RequireWriter());
  Writer w;
  w.kind = Writer::Kind::kLogs;
  w.logs = &batch;
  return Submit(&w);
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
  TW_ASSIGN_OR_RETURN(w.canonical, CanonicalKeys(batch, &w.canonical_made));
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

absl::Status Db::UpdateJob(const model::JobRecord& job) {
  TW_RETURN_IF_ERROR(RequireWriter());
  TW_RETURN_IF_ERROR(CheckJobWrite(job));
  Writer w;
  w.kind = Writer::Kind::kUpdateJob;
  w.job = &job;
  return Submit(&w);
}

// ---------------------------------------------------------------------------
// Reads

absl::StatusOr<ReadView> Db::View() {
  if (writable()) {
    return ReadView(kv_.get(), kv_->GetSnapshot(), CatchUpHold(),
                    retention(), clock_->NowMs(), rollup_cache_.get());
  }
  const int64_t mono = clock_->MonotonicNs();
  // A thread that still holds a view cannot catch up (it would wait for its
  // own shared hold); it reads what it has caught up to.
  const bool due = mono - last_catch_up_ns_.load() >= options_.catch_up_min_interval_ms * 1000000 ||
                   options_.catch_up_min_interval_ms == 0;
  if (due && CatchUpHold::HeldByThisThread() == 0) {
    std::unique_lock<std::shared_mutex> exclusive(catch_up_mu_);
    absl::Status s = kv_->CatchUp();
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrFormat("data folder \"%s\": %s", paths_.root,
                                                    s.message()));
    }
    last_catch_up_ns_ = mono;
  }
  return ReadView(kv_.get(), nullptr, CatchUpHold(catch_up_mu_),
                  retention(), clock_->NowMs(), rollup_cache_.get());
}

absl::StatusOr<std::optional<model::JobRecord>> Db::GetJob(std::string_view name) {
  TW_ASSIGN_OR_RETURN(ReadView view, View());
  return view.GetJob(name);
}

// ---------------------------------------------------------------------------
// Operations

bool Db::DropRecord(kv::Cf cf, std::string_view key, std::string_view value) const {
  uint64_t id;
  int64_t start_ms;
  Tier tier;
  int64_t end_ms;
  if (cf == kv::Cf::kRaw) {
    RawChunkHeader header;
    if (!rawkeys::DecodeKey(key, &id, &start_ms) || !DecodeRawHeader(value, &header)) return false;
    tier = Tier::kRaw;
    end_ms = start_ms + header.span_ms;
  } else {
    tier = cf == kv::Cf::kRollup60 ? Tier::k60 : cf == kv::Cf::kRollup300 ? Tier::k300 : Tier::k3600;
    if (!rollupkeys::DecodeKey(key, &id, &start_ms)) return false;
    end_ms = start_ms + kTierWindowMs[static_cast<int>(tier)] - 1;
  }
  int64_t keep;
  {
    std::lock_guard<std::mutex> lock(drop_mu_);
    auto it = retention_by_id_.find(id);
    if (it == retention_by_id_.end()) return false;
    keep = it->second.Get(tier);
  }
  if (keep == kForever) return false;
  return end_ms < clock_->NowMs() - keep;
}

absl::Status Db::Maintain() {
  TW_RETURN_IF_ERROR(RequireWriter());
  const int64_t now = clock_->NowMs();
  if (options_.wal_sync_interval_ms > 0 && !options_.sync_writes &&
      now - last_wal_sync_ms_ >= options_.wal_sync_interval_ms) {
    TW_RETURN_IF_ERROR(kv_->SyncWal());
    last_wal_sync_ms_ = now;
  }
  Writer w;
  w.kind = Writer::Kind::kMaintain;
  return Submit(&w);
}

absl::Status Db::RunAsLeader(std::function<absl::Status(kv::WriteBatch*)> fn) {
  TW_RETURN_IF_ERROR(RequireWriter());
  Writer w;
  w.kind = Writer::Kind::kCall;
  w.call = std::move(fn);
  return Submit(&w);
}

absl::StatusOr<SeriesId> Db::ResolveSeries(const model::SeriesKey& key) {
  model::SampleBatch probe;
  probe.series.push_back({key, 1, {}, {}, {}});
  TW_RETURN_IF_ERROR(CheckSamples(probe));
  SeriesId id = 0;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) {
    bool created = false;
    id = registry_->Resolve(key, key.Canonical(), batch, &created)->id;
    if (created) {
      TierRetention r = RetentionFor(key.ns);
      std::lock_guard<std::mutex> lock(drop_mu_);
      retention_by_id_[id] = r;
    }
    return absl::OkStatus();
  }));
  return id;
}

absl::StatusOr<uint64_t> Db::ReserveSeqs(uint64_t n) {
  uint64_t first = 0;
  TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) {
    first = chunk_seq_->Reserve(n, batch);
    return absl::OkStatus();
  }));
  return first;
}

absl::Status Db::UpdateLastValues(const std::vector<std::pair<SeriesId, LastValue>>& values) {
  return RunAsLeader([&](kv::WriteBatch* batch) {
    for (const auto& [id, last] : values) {
      TW_ASSIGN_OR_RETURN(std::optional<std::string> key, kv_->Get(kv::Cf::kIndex, indexkeys::ById(id)));
      if (!key) continue;
      model::SeriesKey series;
      if (!indexkeys::DecodeSeriesKey(*key, &series)) continue;
      SeriesRegistry::Entry* e = registry_->Find(series.Canonical());
      if (e == nullptr || last.t_ms < e->last.t_ms) continue;
      e->last = last;
      batch->Put(kv::Cf::kIndex, indexkeys::Last(id), indexkeys::EncodeLast(last));
      // The "l" record is current now: an open head has nothing newer to
      // write there when it seals, and its next records carry this value.
      if (auto h = heads_.find(id); h != heads_.end()) {
        h->second->last = last;
        h->second->last_unindexed = false;
      }
    }
    return absl::OkStatus();
  });
}

absl::Status Db::WriteUnlogged(kv::WriteBatch* batch) {
  TW_RETURN_IF_ERROR(RequireWriter());
  kv::WriteOptions wo;
  wo.disable_wal = true;
  return kv_->Write(batch, wo);
}

absl::Status Db::SealAll() {
  TW_RETURN_IF_ERROR(RequireWriter());
  Writer w;
  w.kind = Writer::Kind::kSealAll;
  return Submit(&w);
}

Db::HeadStats Db::GetHeadStats() {
  HeadStats stats;
  if (!writable()) return stats;
  Writer w;
  w.kind = Writer::Kind::kStats;
  w.stats = &stats;
  (void)Submit(&w);
  return stats;
}

void Db::MaintenanceLoop() {
  ::pthread_setname_np(::pthread_self(), "tw-store-maint");
  int64_t interval_ms = 1000;
  if (options_.wal_sync_interval_ms > 0) {
    interval_ms = std::min<int64_t>(interval_ms, options_.wal_sync_interval_ms);
  }
  std::unique_lock<std::mutex> lock(maint_mu_);
  while (!stopping_) {
    maint_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms), [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    absl::Status s = Maintain();
    if (!s.ok()) util::LogOnce("store-maintenance", absl::StrFormat("store maintenance: %s", s.message()));
    lock.lock();
  }
}

absl::Status Db::Flush() {
  TW_RETURN_IF_ERROR(RequireWriter());
  return kv_->Flush();
}

absl::Status Db::CompactAll() {
  TW_RETURN_IF_ERROR(RequireWriter());
  TW_RETURN_IF_ERROR(SealAll());
  TW_RETURN_IF_ERROR(kv_->Flush());
  return kv_->CompactAll();
}

}  // namespace trainwatch::store
