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
// fsyncs the WAL, checkpoints the head log (head.h) and seals idle data, and
// one sealer thread ("tw-store-seal") that encodes the chunks and rollups of
// sealed series off the commit path (see Db::SealJob); both are joined by the
// destructor.

#include <atomic>
#include <limits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/alarm.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "store/data_folder.h"
#include "store/head.h"
#include "store/kv/kv.h"
#include "store/log_store.h"
#include "store/read_view.h"
#include "store/retention.h"
#include "store/rollup.h"
#include "store/series_index.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::store {

// Every mode refuses a folder of another data format (FailedPrecondition
// naming both formats; data_folder.h) before it touches the folder.
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
  // SetRetentionHold's value from the moment the folder opens, before any
  // compaction (max: no hold).
  int64_t retention_hold_ms = std::numeric_limits<int64_t>::max();

  // When open chunks are sealed (store/head.h).
  HeadOptions head;

  // Durability (see the class comment).
  bool sync_writes = false;
  int64_t wal_sync_interval_ms = 1000;  // 0 = never (leave it to the OS)
  // Run the maintenance and sealer threads. Without them (tests that drive
  // Maintain() themselves, short-lived writers such as `trainwatch admin`) a
  // sealed head waits for Maintain, SealAll or the close, or is encoded by
  // the write leader once the queue passes HeadOptions::max_sealing_bytes.
  bool background_thread = true;
  // No automatic compactions while this Db is open (`trainwatch import`:
  // a bulk load followed by CompactAll() or by the next writer's own
  // compactions).
  bool bulk_load = false;
  // A reader catches up with the writer in View() at most this often.
  int64_t catch_up_min_interval_ms = 0;

  // Decoded rollup records kept for queries without percentiles (0: none);
  // see RollupRecordCache.
  size_t rollup_cache_bytes = 16 << 20;
  // RocksDB memory: block cache and per-column-family memtable sizes.
  size_t block_cache_bytes = 16 << 20;
  size_t write_buffer_bytes = 4 << 20;
  size_t head_write_buffer_bytes = 16 << 20;
  // Tests: called with every batch the store writes, before it is written.
  std::function<void(const kv::WriteBatch&)> observe_writes_for_test;
};

// Exactly-once delivery for senders that retry (an agent resending from its
// spool after a lost answer or a server restart): `agent` names the sender,
// `seq` numbers its batches, increasing by at least one each time. A write
// with a Delivery and the note "agent delivered up to seq" commit in one
// atomic write; a batch numbered at or below the note is not written again.
struct Delivery {
  std::string agent;  // 1-200 bytes
  int64_t seq = 0;    // > 0
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
  // The retention rules in force (a snapshot; AddRetentionRule swaps it).
  std::shared_ptr<const RetentionPolicy> retention() const;
  // A reader's note on who writes (for messages); empty for a writer.
  std::string WriterDescription() const;

  // ---- writes: FailedPrecondition on a reader (naming the writer) ---------

  // Stores samples (validated by ingest: finite values, canonical keys).
  // Series are created on first use. InvalidArgument for a key that is not
  // canonical or a non-finite value (nothing of the batch is written then).
  absl::Status PutSamples(const model::SampleBatch& batch);
  // Appends log events to (group, stream), creating both on first use.
  // Events carry ingestion time = clock now.
  absl::Status PutLogs(const model::LogBatch& batch);
  // CloudWatch Logs' groups and streams (PutLogs creates both on first use).
  // Each answers what it found; the change is made only when LogChange::kDone.
  absl::StatusOr<LogChange> CreateLogGroup(std::string_view group);
  // kNoGroup when the group does not exist.
  absl::StatusOr<LogChange> CreateLogStream(const model::LogStreamId& stream);
  // Deletes the group with its streams and their events.
  absl::StatusOr<LogChange> DeleteLogGroup(std::string_view group);
  // Deletes the stream with its events.
  absl::StatusOr<LogChange> DeleteLogStream(const model::LogStreamId& stream);
  // Keeps the group's events `days` days (nullopt: for ever). Older events
  // are deleted by the next Maintain, and hourly after that.
  absl::StatusOr<LogChange> SetLogRetention(std::string_view group, std::optional<int> days);
  // Job records are per host (job.host_index; JobRecord::hosts must be empty):
  // AlreadyExists when that host of a job with that name exists
  // (case-insensitively); another host of the same job joins it.
  absl::Status CreateJob(const model::JobRecord& job);
  // Replaces the record of job.name's host job.host_index; NotFound when there is
  // none. A stored stop_requested_ms is kept when `job` has none and is not
  // terminal, and the stored rule_statuses are always kept (the rule engine
  // owns them: SetRuleStatuses).
  absl::Status UpdateJob(const model::JobRecord& job);
  // UpdateJob for a writer that read the record (as `as_read`), decided, and
  // writes it back changed (a runner found gone or silent, recorded as
  // Failed): written only if the stored record is still as read, i.e. not
  // terminal, with the same last modification and transitions. Otherwise
  // FailedPrecondition and nothing is written: its runner updated it in
  // between (it completed, say), and that update stands.
  absl::Status UpdateJobIfUnchanged(const model::JobRecord& job, const model::JobRecord& as_read);
  // Sets stop_requested_ms (to `now_ms`, unless one is set) in the record of
  // job `name`'s host `host_index`, keeping the rest as stored: a stop asked
  // of a runner on another machine, which its heartbeat brings it.
  // FailedPrecondition ("The request was rejected because the training job is
  // in status Completed.") when that record is terminal; NotFound when there
  // is none.
  absl::Status RequestStop(const std::string& name, int host_index, int64_t now_ms);
  // Replaces the rule_statuses of that host's record, and nothing else;
  // NotFound when there is no such record.
  absl::Status SetRuleStatuses(const std::string& name, int host_index,
                               const std::vector<model::RuleStatus>& statuses);

  // Writes a CloudWatch alarm's record whole (creating or replacing it), or
  // deletes it (nothing to delete is no error).
  absl::Status PutAlarm(const model::AlarmRecord& alarm);
  absl::Status DeleteAlarm(std::string_view name);

  // The same writes with a Delivery: true when written now, false when the
  // batch had been delivered before (nothing written). Errors as above, plus
  // InvalidArgument for a malformed Delivery.
  absl::StatusOr<bool> PutSamples(const model::SampleBatch& batch, const Delivery& delivery);
  absl::StatusOr<bool> PutLogs(const model::LogBatch& batch, const Delivery& delivery);
  absl::StatusOr<bool> CreateJob(const model::JobRecord& job, const Delivery& delivery);
  absl::StatusOr<bool> UpdateJob(const model::JobRecord& job, const Delivery& delivery);
  // The highest seq delivered by `agent` (0 when none).
  absl::StatusOr<int64_t> DeliveredUpTo(const std::string& agent);

  // ---- reads ----------------------------------------------------------------

  // A consistent view (a reader catches up with the writer first).
  absl::StatusOr<ReadView> View();
  // Convenience: View().GetJob(name).
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name);

  // ---- operations -----------------------------------------------------------

  // Writer: fsyncs the WAL and runs the periodic work (the maintenance thread
  // calls this every second; tests call it after moving a FakeClock): seals
  // by age, idleness and memory, and, hourly, deletes log events older than
  // their group's retention.
  absl::Status Maintain();
  // Writer: writes every memtable to disk and fully compacts every column
  // family, applying retention (`trainwatch admin compact`).
  absl::Status CompactAll();
  // Writer: memtables to disk (after a bulk load without WAL).
  absl::Status Flush();
  // Writer: seals every open chunk now (all data then lives in raw chunks
  // and rollup tiers; the head column family is empty).
  absl::Status SealAll();

  // ---- bulk loading (store/bulk_loader.h) ----------------------------------

  // The id of a series, creating it (index records, durably) when new.
  absl::StatusOr<SeriesId> ResolveSeries(const model::SeriesKey& key);
  // Reserves `n` record sequence numbers for keys the caller writes.
  absl::StatusOr<uint64_t> ReserveSeqs(uint64_t n);
  // Records last values (each kept only when newer than the stored one).
  absl::Status UpdateLastValues(const std::vector<std::pair<SeriesId, LastValue>>& values);
  // Writes a batch without the WAL: durable only after Flush(). For raw and
  // rollup records with reserved sequence numbers.
  absl::Status WriteUnlogged(kv::WriteBatch* batch);
  // The retention of a namespace as this Db applies it.
  TierRetention RetentionOf(std::string_view ns) const { return retention()->For(ns); }
  // Writer: raw samples and the training jobs' log events at or after
  // `keep_from_ms` are kept whatever the retention says, until the hold
  // moves (the archive's: what it has not taken yet stays; app/archiver.h).
  // kNoHold (the default) holds nothing.
  // Not persisted: whoever holds sets it again after a restart.
  static constexpr int64_t kNoHold = std::numeric_limits<int64_t>::max();
  void SetRetentionHold(int64_t keep_from_ms) { retention_hold_ms_.store(keep_from_ms); }
  int64_t retention_hold_ms() const { return retention_hold_ms_.load(); }
  // Writer: adds a retention rule (store/retention.h), persists it in
  // <data>/retention.conf and applies it at once (compaction included).
  absl::Status AddRetentionRule(std::string_view pattern, std::string_view settings);

  struct HeadStats {
    size_t series = 0;          // known series (index)
    size_t open_series = 0;     // series with open chunks
    size_t rows = 0;            // rows in open chunks
    size_t head_bytes = 0;      // heap bytes of the open chunks and their state
    size_t registry_bytes = 0;  // heap bytes of the series map
    size_t head_log_bytes = 0;  // head log since its last checkpoint (head.h)
  };
  // Writer: the head's size (docs/store.md's memory figures come from here).
  HeadStats GetHeadStats();

  // For tests and tools that inspect the bytes.
  kv::Kv& kv() { return *kv_; }

 private:
  struct Writer;
  struct HeadEntry {
    SeriesHead head;
    TierRetention retention;
    std::string ns;
    // The series' last value, carried by each head record (t_ms INT64_MIN:
    // none); last_unindexed: newer than its "l" record, which Seal updates.
    LastValue last{INT64_MIN, 0};
    bool last_unindexed = false;
    // In Db::unckpt_series_: the head has rows in the head log (or in this
    // commit's log record), or appended in this commit before a seal, that
    // are in no head record of the series yet. The next checkpoint writes
    // them there (SeriesHead::TakeRowsSinceCheckpoint).
    bool listed_unckpt = false;
  };
  struct ResolvedSeries {
    SeriesRegistry::Entry* entry = nullptr;  // null: the series has no samples
    SeriesId id = 0;
    HeadEntry* head = nullptr;
  };
  static constexpr size_t kPrefetchAhead = 8;  // series; see ResolveBatch
  // A seal off the commit path. The leader detaches the series' open chunks
  // into a job, after putting every row of them into head records with
  // sequence numbers below `boundary` (rows that arrive later get records
  // above it). The sealer thread (or the leader, see HelpSeal) encodes the
  // job; the leader of the same or a later commit writes its records and deletes the series' head
  // records from `delete_from` to below `boundary`, in one batch. Until then readers and a restart
  // find the rows in the head records, as before the seal.
  //
  // Jobs are written in the order they were detached, so a series' earlier jobs have deleted its
  // records below `delete_from` by then. The ranges of one series must not nest: RocksDB 7.8
  // fragments overlapping range deletes into a list that keeps, per fragment, every delete that
  // covers it, so n nested ones cost n^2 / 2 entries at each memtable switch, flush and reopen
  // (docs/store.md: a reopen took 30 s instead of 0.5 s).
  struct SealJob {
    SeriesId id = 0;
    uint64_t delete_from = 0;  // 0: from the series' first record
    uint64_t boundary = 0;
    TierRetention retention;
    SeriesHead head;
    size_t bytes = 0;      // head.MemoryBytes() when detached
    bool encoded = false;  // `sealed` is ready
    SealedRecords sealed;
  };
  Db(DbOptions options, DataFolderPaths paths, util::Clock* clock, RetentionPolicy retention);
  // Rebuilds the compaction filter's id -> retention map from the index.
  absl::Status LoadRetentionById();
  absl::Status OpenKv(bool writer);
  absl::Status LoadWriterState();
  // Runs `fn` as the write leader (exclusive access to the writer state) and
  // commits what it adds to the batch.
  absl::Status RunAsLeader(std::function<absl::Status(kv::WriteBatch*)> fn);
  // Group commit: queues `w`, and either waits for a leader to commit it or
  // becomes the leader and commits every queued writer together.
  absl::Status Submit(Writer* w);
  // Submit with a Delivery (see Delivery): true when written.
  absl::StatusOr<bool> SubmitDelivered(Writer* w, const Delivery& delivery);
  void CommitGroup(const std::vector<Writer*>& group);
  absl::Status PrepareOne(Writer* w, kv::WriteBatch* batch, int64_t now_ms);
  // What the store itself insists on (ingest checks more, with better
  // messages): canonical keys and finite values.
  static absl::Status CheckSamples(const model::SampleBatch& samples);
  // Canonical() of each series' key, in order: the batch's canonical_keys
  // when it has one per series (checked against the keys in debug builds
  // only), else *made, filled here.
  static const std::vector<std::string>* CanonicalKeys(
      const model::SampleBatch& samples, std::vector<std::string>* made);
  absl::Status PrepareSamples(const model::SampleBatch& samples,
                              const std::vector<std::string>& canonical, kv::WriteBatch* batch,
                              int64_t now_ms);
  // Appends rows (sorted per lane) to a series' head, sealing as needed, and
  // adds the rows that stay open (with entry->last) to this commit's head
  // log record.
  void AppendRows(SeriesId id, HeadEntry* entry, std::vector<LaneRows>* lanes,
                  kv::WriteBatch* batch, int64_t now_ms);
  // Lists the series for the next checkpoint (once until then).
  void ListUnckpt(SeriesId id, HeadEntry* entry);
  // Checkpoints the head log first (head.h: log rows are never sealed).
  void Seal(SeriesId id, HeadEntry* entry, kv::WriteBatch* batch);
  // Moves every series' log rows to a head record of its own and deletes the
  // head log, in `batch` (head.h).
  void CheckpointHeadLog(kv::WriteBatch* batch);
  // End of a commit: adds its head log record to `batch`, or checkpoints
  // when the log has grown past HeadOptions::log_checkpoint_bytes.
  void FinishHeadLog(kv::WriteBatch* batch);
  // Leader: queues a SealJob for the series' head (Seal's off-thread form;
  // Seal has checkpointed the head log first).
  void DetachForSeal(SeriesId id, HeadEntry* entry, kv::WriteBatch* batch);
  // Leader: adds the encoded jobs at the front of the queue to `batch`, in
  // queue order. With `all`, every queued job: it encodes those no thread
  // has taken and waits for the sealer's current one.
  void CommitSealJobs(bool all, kv::WriteBatch* batch);
  // Leader: encodes queued jobs itself while they hold more than
  // HeadOptions::max_sealing_bytes (the sealer fell behind).
  void HelpSeal();
  // Encodes the first job no thread has taken; false when there is none.
  // Called with seal_mu_ held, which it releases while encoding.
  bool EncodeOneSealJob() ABSL_EXCLUSIVE_LOCKS_REQUIRED(seal_mu_);
  void SealerLoop(std::stop_token stop);
  void StopSealer();
  HeadEntry* HeadFor(SeriesId id, std::string_view ns);
  static void PrefetchHead(const HeadEntry* entry);
  // The registry entry and head of each series of `samples` (creating new
  // series' index records in `batch`), in order.
  void ResolveBatch(const model::SampleBatch& samples,
                    const std::vector<std::string>& canonical_keys, kv::WriteBatch* batch,
                    std::vector<ResolvedSeries>* out);
  // Maintenance work done by the write leader: seal by age, idleness, memory.
  void PrepareMaintenance(bool seal_all, kv::WriteBatch* batch, int64_t now_ms);
  absl::Status ReplayHead();
  TierRetention RetentionFor(std::string_view ns);
  absl::Status RequireWriter() const;
  bool DropRecord(kv::Cf cf, std::string_view key, std::string_view value) const;
  void MaintenanceLoop(std::stop_token stop);

  DbOptions options_;
  DataFolderPaths paths_;
  util::Clock* clock_;
  mutable util::Mutex retention_mu_;
  std::shared_ptr<const RetentionPolicy> retention_ ABSL_GUARDED_BY(retention_mu_);
  std::unique_ptr<WriterLock> lock_;                  // null for a reader
  std::string reader_scratch_;                        // reader only
  std::unique_ptr<kv::Kv> kv_;
  std::unique_ptr<RollupRecordCache> rollup_cache_;  // null when turned off

  // Readers: View() shares it, catch-up takes it exclusively.
  util::SharedMutex catch_up_mu_;
  std::atomic<int64_t> last_catch_up_ns_{0};

  // Group commit queue; the front writer is the leader.
  util::Mutex queue_mu_;
  std::deque<Writer*> queue_ ABSL_GUARDED_BY(queue_mu_);
  // Set when a write to RocksDB failed: the in-memory state may be ahead of
  // the disk, so every later write fails until the folder is reopened.
  absl::Status write_error_;  // leader state (below)

  // Writer state, touched only by the current leader (and Open).
  std::unique_ptr<LogWriter> log_writer_;
  std::unique_ptr<SeriesRegistry> registry_;
  std::unique_ptr<Counter> chunk_seq_;  // head, raw and rollup record keys
  absl::flat_hash_map<SeriesId, std::unique_ptr<HeadEntry>> heads_;
  absl::flat_hash_map<std::string, TierRetention> retention_by_ns_;
  std::atomic<int64_t> last_wal_sync_ms_{0};
  // When Maintain last deleted expired log events (INT64_MIN: due now).
  std::atomic<int64_t> last_log_expiry_ms_{INT64_MIN};
  // The head log (head.h): this commit's record being built, the bytes of
  // the log since its last checkpoint (this record included), whether a log
  // record was written since, and the series listed for the next checkpoint
  // (HeadEntry::listed_unckpt).
  std::string head_log_record_;
  size_t head_log_bytes_ = 0;
  bool head_log_written_ = false;
  // Head log records below this sequence number are deleted (0: no
  // checkpoint since the store opened). Checkpoints delete from here, so that
  // their range deletes do not nest (see SealJob).
  uint64_t head_log_deleted_below_ = 0;
  uint64_t head_log_last_seq_ = 0;  // of the newest head log record
  // Per series sealed since the store opened: its head records below this
  // sequence number are deleted, or will be when its seal jobs are written.
  // Kept apart from heads_, whose entries go when their series idles.
  absl::flat_hash_map<SeriesId, uint64_t> head_sealed_below_;
  std::vector<SeriesId> unckpt_series_;
  std::string checkpoint_record_;  // CheckpointHeadLog's scratch
  // Scratch of the commit path (the leader, or Open before any writer): one
  // series' rows by lane, and the part of them appended since the last seal.
  // Kept between series so that their buffers are reused.
  std::vector<LaneRows> series_lanes_;
  std::vector<ResolvedSeries> resolved_scratch_;  // PrepareSamples'
  std::vector<LaneRows> appended_lanes_;

  // Retention of each series, for the compaction filter (RocksDB threads).
  std::atomic<int64_t> retention_hold_ms_{kNoHold};
  mutable util::Mutex drop_mu_;
  absl::flat_hash_map<SeriesId, TierRetention> retention_by_id_ ABSL_GUARDED_BY(drop_mu_);
  std::atomic<size_t> head_bytes_{0};

  // Sealing off the commit path (SealJob). async_seal_ is leader state:
  // false while Open replays the head (those seals are written at once).
  bool async_seal_ = false;
  util::Mutex seal_mu_;
  // A job queued or a job encoded (a stop wakes the sealer through its
  // token: hence condition_variable_any).
  std::condition_variable_any seal_cv_;
  std::deque<std::unique_ptr<SealJob>> seal_jobs_ ABSL_GUARDED_BY(seal_mu_);  // detach order
  // Jobs are taken in queue order, so the taken ones are the first
  // seal_taken_ of seal_jobs_.
  size_t seal_taken_ ABSL_GUARDED_BY(seal_mu_) = 0;
  size_t seal_encoding_ ABSL_GUARDED_BY(seal_mu_) = 0;         // taken, not yet encoded
  size_t seal_unencoded_bytes_ ABSL_GUARDED_BY(seal_mu_) = 0;  // of the jobs not yet encoded

  // The background threads, last: destroyed before the state they use. ~Db
  // stops them explicitly, in order: the maintenance thread first, the
  // sealer only after the close has committed the seal jobs it could.
  std::jthread seal_thread_;
  std::jthread maint_thread_;
};

}  // namespace trainwatch::store
