#pragma once
// Db: trainwatch's store. Start here (docs/store.md for the operator's view,
// docs/format/store.md for the bytes).
//
// One data folder, one writer, any number of readers:
//
//   auto db = Db::Open({.data_dir = dir, .mode = OpenMode::kWriter});    // trainwatch run
//   auto db = Db::Open({.data_dir = dir, .mode = OpenMode::kReader});    // describe, logs -f
//   auto db = Db::Open({.data_dir = dir, .mode = OpenMode::kWriterIfFree});
//
// Writes (PutSamples, PutLogs, CreateJob, UpdateJob) return once they are in
// RocksDB's write-ahead log: they survive the death of the process at any
// moment (kill -9). With DbOptions::sync_writes they also survive power loss;
// without it, the WAL is fsynced every wal_sync_interval_ms, so a power loss
// can lose at most that much. Concurrent writes are committed together
// (group commit: one WAL write for all writers waiting), so many small writes
// from many threads stay cheap. A write is visible to View() in this process
// as soon as it returns, and to readers in other processes after their next
// catch-up (each View() catches up; see DbOptions::catch_up_min_interval_ms).
//
// Input is expected to be validated (src/ingest does that: finite values,
// timestamps in range, keys canonical, log lines split); the store checks
// only what protects its own invariants.
//
// Thread safety: all methods are thread-safe.
// Threads: a writer owns one maintenance thread ("tw-store-maint") that
// fsyncs the WAL and seals idle data; it is joined by the destructor.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "store/data_folder.h"
#include "store/kv/kv.h"
#include "store/log_store.h"
#include "store/read_view.h"
#include "store/retention.h"
#include "util/clock.h"

namespace trainwatch::store {

enum class OpenMode {
  // The single writer. Creates the folder when missing. FailedPrecondition
  // naming the holder (pid, command) when another writer has it.
  kWriter,
  // A read-only follower, usable while a writer writes. NotFound when the
  // folder holds no data yet.
  kReader,
  // A writer when nobody else writes, else a reader (check Db::writable()).
  // NotFound when the folder holds no data yet (it is not created).
  kWriterIfFree,
};

struct DbOptions {
  std::string data_dir;
  OpenMode mode = OpenMode::kWriter;
  // Recorded in the writer lock so a refused writer can say who holds the
  // folder; default: this process's command line.
  std::string command;
  // Where "now" comes from (retention, ingestion times); default the system
  // clock. Must outlive the Db.
  util::Clock* clock = nullptr;
  // Retention rules; default: the built-in defaults plus <data>/retention.conf.
  std::optional<RetentionPolicy> retention;

  // Durability (see the class comment).
  bool sync_writes = false;
  int64_t wal_sync_interval_ms = 1000;  // 0 = never (leave it to the OS)
  // Run the maintenance thread (tests drive Maintain() themselves).
  bool background_thread = true;
  // A reader catches up with the writer in View() at most this often.
  int64_t catch_up_min_interval_ms = 0;

  // RocksDB memory: block cache and per-column-family memtable sizes.
  size_t block_cache_bytes = 16 << 20;
  size_t write_buffer_bytes = 4 << 20;
  size_t head_write_buffer_bytes = 16 << 20;
};

class Db {
 public:
  static absl::StatusOr<std::unique_ptr<Db>> Open(DbOptions options);
  // A writer leaves unsealed data in the head column family (durable; it is
  // picked up by the next writer) and releases the writer lock.
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  bool writable() const { return lock_ != nullptr; }
  const std::string& data_dir() const { return paths_.root; }
  util::Clock& clock() const { return *clock_; }
  const RetentionPolicy& retention() const { return retention_; }
  // A reader's note on who writes (for messages); empty for a writer.
  std::string WriterDescription() const;

  // ---- writes: FailedPrecondition on a reader (naming the writer) ---------

  // Appends log events to (group, stream), creating both on first use.
  // Events carry ingestion time = clock now.
  absl::Status PutLogs(const model::LogBatch& batch);
  // AlreadyExists when a job with that name exists (case-insensitively).
  absl::Status CreateJob(const model::JobRecord& job);
  // Replaces the record of job.name; NotFound when there is none.
  absl::Status UpdateJob(const model::JobRecord& job);

  // ---- reads ----------------------------------------------------------------

  // A consistent view (a reader catches up with the writer first).
  absl::StatusOr<ReadView> View();
  // Convenience: View().GetJob(name).
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name);

  // ---- operations -----------------------------------------------------------

  // Writer: fsyncs the WAL and runs the periodic work (the maintenance thread
  // calls this every second; tests call it after moving a FakeClock).
  absl::Status Maintain();
  // Writer: writes every memtable to disk and fully compacts every column
  // family, applying retention (`trainwatch admin compact`).
  absl::Status CompactAll();
  // Writer: memtables to disk (after a bulk load without WAL).
  absl::Status Flush();

  // For tests and tools that inspect the bytes.
  kv::Kv& kv() { return *kv_; }

 private:
  struct Writer;
  Db(DbOptions options, DataFolderPaths paths, util::Clock* clock, RetentionPolicy retention);
  absl::Status OpenKv(bool writer);
  absl::Status LoadWriterState();
  // Group commit: queues `w`, and either waits for a leader to commit it or
  // becomes the leader and commits every queued writer together.
  absl::Status Submit(Writer* w);
  void CommitGroup(const std::vector<Writer*>& group);
  absl::Status PrepareOne(Writer* w, kv::WriteBatch* batch, int64_t now_ms);
  absl::Status RequireWriter() const;
  bool DropRecord(kv::Cf cf, std::string_view key, std::string_view value) const;
  void MaintenanceLoop();

  DbOptions options_;
  DataFolderPaths paths_;
  util::Clock* clock_;
  RetentionPolicy retention_;
  std::unique_ptr<WriterLock> lock_;  // null for a reader
  std::string reader_scratch_;        // reader only
  std::unique_ptr<kv::Kv> kv_;

  // Readers: View() shares it, catch-up takes it exclusively.
  std::shared_mutex catch_up_mu_;
  std::atomic<int64_t> last_catch_up_ns_{0};

  // Group commit queue; the front writer is the leader.
  std::mutex queue_mu_;
  std::deque<Writer*> queue_;
  // Set when a write to RocksDB failed: the in-memory state may be ahead of
  // the disk, so every later write fails until the folder is reopened.
  absl::Status write_error_;

  // Writer state, touched only by the current leader (and Open).
  std::unique_ptr<LogWriter> log_writer_;

  // Maintenance thread.
  std::mutex maint_mu_;
  std::condition_variable maint_cv_;
  bool stopping_ = false;
  std::thread maint_thread_;
};

}  // namespace trainwatch::store
