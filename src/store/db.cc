#include "store/db.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/db_writer.h"
#include "store/rollup.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/mutex.h"
#include "util/stop_wait.h"

namespace trainwatch::store {

Db::Db(DbOptions options, DataFolderPaths paths, util::Clock* clock, RetentionPolicy retention)
    : options_(std::move(options)),
      paths_(std::move(paths)),
      clock_(clock),
      retention_(std::make_shared<const RetentionPolicy>(std::move(retention))) {
  retention_hold_ms_.store(options_.retention_hold_ms);
}

std::shared_ptr<const RetentionPolicy> Db::retention() const {
  util::MutexLock lock(retention_mu_);
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
    // is format 1) or in an older format this build reads is marked as this
    // build's format now, before anything is written (data_folder.h).
    TW_ASSIGN_OR_RETURN(const std::optional<int> format, CheckDataFormat(paths));
    if (format != kDataFormatVersion) TW_RETURN_IF_ERROR(WriteDataFormat(paths));
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
      db->seal_thread_ =
          std::jthread([p = db.get()](std::stop_token stop) { p->SealerLoop(std::move(stop)); });
      db->maint_thread_ = std::jthread(
          [p = db.get()](std::stop_token stop) { p->MaintenanceLoop(std::move(stop)); });
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
    util::MutexLock lock(drop_mu_);
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
    util::MutexLock lock(retention_mu_);
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
  maint_thread_.request_stop();
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
    util::WriterLock exclusive(catch_up_mu_);
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
    if (end_ms >= retention_hold_ms_.load()) return false;  // held (SetRetentionHold)
  } else {
    tier = cf == kv::Cf::kRollup60 ? Tier::k60 : cf == kv::Cf::kRollup300 ? Tier::k300 : Tier::k3600;
    if (!rollupkeys::DecodeKey(key, &id, &start_ms)) return false;
    end_ms = start_ms + kTierWindowMs[static_cast<int>(tier)] - 1;
  }
  int64_t keep;
  {
    util::MutexLock lock(drop_mu_);
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
  TW_RETURN_IF_ERROR(Submit(&w));
  constexpr int64_t kLogExpiryIntervalMs = 3600 * 1000;
  if (last_log_expiry_ms_ == INT64_MIN || now - last_log_expiry_ms_ >= kLogExpiryIntervalMs) {
    last_log_expiry_ms_ = now;
    // Read beside the writers; only the deletes and counts go through the
    // leader, so a first retention over millions of events stalls no write.
    TW_ASSIGN_OR_RETURN(std::vector<LogExpiry> plan, PlanLogExpiry(*kv_, now, retention_hold_ms_.load()));
    if (!plan.empty()) {
      TW_RETURN_IF_ERROR(RunAsLeader([&](kv::WriteBatch* batch) {
        return log_writer_->ApplyExpiry(plan, batch).status();
      }));
    }
  }
  return absl::OkStatus();
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
      util::MutexLock lock(drop_mu_);
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

void Db::MaintenanceLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-store-maint");
  int64_t interval_ms = 1000;
  if (options_.wal_sync_interval_ms > 0) {
    interval_ms = std::min<int64_t>(interval_ms, options_.wal_sync_interval_ms);
  }
  while (util::SleepFor(stop, std::chrono::milliseconds(interval_ms))) {
    absl::Status s = Maintain();
    if (!s.ok()) util::LogOnce("store-maintenance", absl::StrFormat("store maintenance: %s", s.message()));
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
