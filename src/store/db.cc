#include "store/db.h"

#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/job_codec.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::store {

struct Db::Writer {
  enum class Kind { kLogs, kCreateJob, kUpdateJob, kMaintain } kind;
  const model::LogBatch* logs = nullptr;
  const model::JobRecord* job = nullptr;
  absl::Status status;
  bool done = false;
  std::condition_variable cv;
};

Db::Db(DbOptions options, DataFolderPaths paths, util::Clock* clock, RetentionPolicy retention)
    : options_(std::move(options)),
      paths_(std::move(paths)),
      clock_(clock),
      retention_(std::move(retention)) {}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(DbOptions options) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("no data folder given (DbOptions::data_dir is empty)");
  }
  util::Clock* clock = options.clock != nullptr ? options.clock : &util::SystemClock::Get();
  DataFolderPaths paths(options.data_dir);
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
  TW_RETURN_IF_ERROR(db->OpenKv(writer));
  if (writer) {
    RemoveStaleReaderScratch(paths);
    TW_RETURN_IF_ERROR(db->LoadWriterState());
    if (db->options_.background_thread) {
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
  return absl::OkStatus();
}

absl::Status Db::LoadWriterState() {
  log_writer_ = std::make_unique<LogWriter>(kv_.get());
  TW_RETURN_IF_ERROR(log_writer_->Load());
  return absl::OkStatus();
}

Db::~Db() {
  {
    std::lock_guard<std::mutex> lock(maint_mu_);
    stopping_ = true;
  }
  maint_cv_.notify_all();
  if (maint_thread_.joinable()) maint_thread_.join();
  if (kv_ && writable()) {
    absl::Status s = kv_->SyncWal();
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

void Db::CommitGroup(const std::vector<Writer*>& group) {
  kv::WriteBatch batch;
  const int64_t now_ms = clock_->NowMs();
  std::set<std::string> created;  // job keys created earlier in this group
  for (Writer* w : group) {
    batch.SetSavePoint();
    absl::Status s;
    if (w->kind == Writer::Kind::kCreateJob || w->kind == Writer::Kind::kUpdateJob) {
      const std::string key = JobKey(w->job->name);
      absl::StatusOr<std::optional<std::string>> existing = kv_->Get(kv::Cf::kJobs, key);
      if (!existing.ok()) {
        s = existing.status();
      } else {
        const bool exists = existing->has_value() || created.count(key) > 0;
        if (w->kind == Writer::Kind::kCreateJob && exists) {
          s = absl::AlreadyExistsError(absl::StrFormat(
              "a training job named \"%s\" already exists (names are compared ignoring case); "
              "choose another name",
              w->job->name));
        } else if (w->kind == Writer::Kind::kUpdateJob && !exists) {
          s = absl::NotFoundError(
              absl::StrFormat("no training job named \"%s\" to update", w->job->name));
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
    batch.PopSavePoint();
    w->status = absl::OkStatus();
  }
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
    case Writer::Kind::kLogs:
      return log_writer_->Prepare(*w->logs, now_ms, batch);
    case Writer::Kind::kMaintain:
      return absl::OkStatus();
    case Writer::Kind::kCreateJob:
    case Writer::Kind::kUpdateJob:
      break;
  }
  return absl::InternalError("unexpected writer kind");
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
  if (job.name.empty()) return absl::InvalidArgumentError("a training job needs a name");
  Writer w;
  w.kind = Writer::Kind::kCreateJob;
  w.job = &job;
  return Submit(&w);
}

absl::Status Db::UpdateJob(const model::JobRecord& job) {
  TW_RETURN_IF_ERROR(RequireWriter());
  Writer w;
  w.kind = Writer::Kind::kUpdateJob;
  w.job = &job;
  return Submit(&w);
}

// ---------------------------------------------------------------------------
// Reads

absl::StatusOr<ReadView> Db::View() {
  if (writable()) {
    return ReadView(kv_.get(), kv_->GetSnapshot(), std::shared_lock<std::shared_mutex>(),
                    &retention_, clock_->NowMs());
  }
  const int64_t mono = clock_->MonotonicNs();
  if (mono - last_catch_up_ns_.load() >= options_.catch_up_min_interval_ms * 1000000 ||
      options_.catch_up_min_interval_ms == 0) {
    std::unique_lock<std::shared_mutex> exclusive(catch_up_mu_);
    absl::Status s = kv_->CatchUp();
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrFormat("data folder \"%s\": %s", paths_.root,
                                                    s.message()));
    }
    last_catch_up_ns_ = mono;
  }
  return ReadView(kv_.get(), nullptr, std::shared_lock<std::shared_mutex>(catch_up_mu_),
                  &retention_, clock_->NowMs());
}

absl::StatusOr<std::optional<model::JobRecord>> Db::GetJob(std::string_view name) {
  TW_ASSIGN_OR_RETURN(ReadView view, View());
  return view.GetJob(name);
}

// ---------------------------------------------------------------------------
// Operations

bool Db::DropRecord(kv::Cf /*cf*/, std::string_view /*key*/, std::string_view /*value*/) const {
  return false;
}

absl::Status Db::Maintain() {
  TW_RETURN_IF_ERROR(RequireWriter());
  if (options_.wal_sync_interval_ms > 0 && !options_.sync_writes) {
    TW_RETURN_IF_ERROR(kv_->SyncWal());
  }
  return absl::OkStatus();
}

void Db::MaintenanceLoop() {
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
  TW_RETURN_IF_ERROR(kv_->Flush());
  return kv_->CompactAll();
}

}  // namespace trainwatch::store
