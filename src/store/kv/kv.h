#pragma once
// Kv: the store's only window onto RocksDB. Everything above store/kv sees
// column families, byte-string keys and values, batches, iterators and
// snapshots; no RocksDB type leaks out of this folder.
//
// One RocksDB instance holds all of trainwatch's data, one column family per
// kind (Cf below). A Kv is opened either as the primary (the single writer of
// the folder; the caller holds the writer lock, see store/data_folder.h) or as
// a secondary: a read-only follower that sees what the primary wrote after
// each CatchUp() (RocksDB's secondary instance, which tails the primary's WAL
// and MANIFEST).
//
// Thread safety: all methods are thread-safe. Iterators and snapshots must be
// destroyed before the Kv.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainwatch::store::kv {

// Column families. The numbering is persistent only through the names.
enum class Cf : int {
  kMeta = 0,    // format version, counters
  kIndex,       // series index
  kHead,        // unsealed samples (the head's write-ahead records)
  kRaw,         // sealed raw chunks
  kRollup60,    // 60 s rollup tier
  kRollup300,   // 300 s rollup tier
  kRollup3600,  // 3600 s rollup tier
  kLogs,        // log groups, streams and events
  kJobs,        // training-job records
};
inline constexpr int kCfCount = 9;
// "meta", "index", ... (RocksDB's column family names; kMeta is "default").
std::string_view CfName(Cf cf);

enum class OpenMode { kPrimary, kSecondary };

class WriteBatch;

// Called from RocksDB's compaction threads for every record of the column
// families that have retention (kRaw and the rollup tiers); true drops it.
// Must be thread-safe and must not call back into the Kv.
using DropFn = std::function<bool(Cf cf, std::string_view key, std::string_view value)>;

struct KvOptions {
  std::string path;  // the RocksDB folder
  OpenMode mode = OpenMode::kPrimary;
  // kSecondary: a private scratch folder (RocksDB keeps its info log there).
  std::string secondary_path;
  // kPrimary: create the database when missing (else NotFound).
  bool create_if_missing = true;
  // Shared block cache for all column families.
  size_t block_cache_bytes = 16 << 20;
  // Memtable size of each column family. Small memtables keep RSS low and
  // keep the WAL a secondary must replay on catch-up short.
  size_t write_buffer_bytes = 4 << 20;
  // The head and log column families take most small writes; their memtables
  // may be larger so head records rarely reach an SST before they are sealed.
  size_t head_write_buffer_bytes = 16 << 20;
  // Bulk load: no automatic compactions (call CompactAll() at the end).
  bool bulk_load = false;
  // Retention (see DropFn); empty = keep everything.
  DropFn drop;
  // Every SST older than this is recompacted, so that `drop` also reaches
  // data that no write would otherwise compact again. 0 = RocksDB's default.
  int64_t periodic_compaction_s = 24 * 3600;
  // Tests: called with every batch before it is written.
  std::function<void(const WriteBatch&)> observe_writes;
};

struct WriteOptions {
  // fsync the WAL before returning (survives power loss). Without it a
  // written batch survives the death of the process (kill -9) but not of the
  // machine.
  bool sync = false;
  // Skip the WAL (bulk load only; durable after Flush()).
  bool disable_wal = false;
};

class Kv;

// A set of writes applied atomically by Kv::Write. Not thread-safe.
class WriteBatch {
 public:
  WriteBatch();
  ~WriteBatch();
  WriteBatch(WriteBatch&&) noexcept;
  WriteBatch& operator=(WriteBatch&&) noexcept;

  void Put(Cf cf, std::string_view key, std::string_view value);
  void Delete(Cf cf, std::string_view key);
  // Deletes every key in [begin, end).
  void DeleteRange(Cf cf, std::string_view begin, std::string_view end);
  // Marks a point RollbackToSavePoint() returns to (nesting allowed).
  void SetSavePoint();
  // Undoes the writes since the last SetSavePoint(); InvalidArgument-free:
  // returns false when there is no save point.
  bool RollbackToSavePoint();
  void PopSavePoint();
  size_t ApproximateBytes() const;
  int Count() const;
  void Clear();
  // Calls fn(cf, begin, end) for each DeleteRange in the batch, in order.
  void ForEachRangeDelete(
      const std::function<void(Cf, std::string_view begin, std::string_view end)>& fn) const;

 private:
  friend class Kv;
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

// A consistent point-in-time view (primary only).
class Snapshot {
 public:
  virtual ~Snapshot() = default;
};

struct ReadOptions {
  // Iteration bounds: lower inclusive, upper exclusive; empty = unbounded.
  std::string lower_bound;
  std::string upper_bound;
  const Snapshot* snapshot = nullptr;  // nullptr = latest
  // False for one-off scans that should not evict hot blocks.
  bool fill_cache = true;
};

// Forward/backward iteration over one column family.
class Iterator {
 public:
  virtual ~Iterator() = default;
  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  // First key >= target.
  virtual void Seek(std::string_view target) = 0;
  // Last key <= target.
  virtual void SeekForPrev(std::string_view target) = 0;
  virtual void Next() = 0;
  virtual void Prev() = 0;
  // Valid until the iterator moves.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK when iteration stopped because of an error (not at the end).
  virtual absl::Status status() const = 0;
};

class Kv {
 public:
  // Opens (and in kPrimary mode with create_if_missing, creates) the
  // database with every column family. Errors: NotFound when there is no
  // database at options.path and it may not be created; FailedPrecondition
  // when another process holds it as primary; Internal/DataLoss for
  // RocksDB errors, with RocksDB's message and the path.
  static absl::StatusOr<std::unique_ptr<Kv>> Open(const KvOptions& options);
  ~Kv();

  bool secondary() const;
  const std::string& path() const;

  // Applies the batch atomically (FailedPrecondition on a secondary).
  absl::Status Write(WriteBatch* batch, const WriteOptions& options = {});
  absl::Status Put(Cf cf, std::string_view key, std::string_view value,
                   const WriteOptions& options = {});

  // The value of `key`, or nullopt when absent.
  absl::StatusOr<std::optional<std::string>> Get(Cf cf, std::string_view key,
                                                 const Snapshot* snapshot = nullptr) const;
  std::unique_ptr<Iterator> NewIterator(Cf cf, const ReadOptions& options = {}) const;
  // A snapshot of the primary; nullptr on a secondary (whose view changes
  // only on CatchUp(), so callers serialise CatchUp() with their reads).
  std::unique_ptr<Snapshot> GetSnapshot() const;

  // Secondary: applies what the primary wrote since the last call
  // (tails its WAL); cheap when little was written. Primary: no-op.
  absl::Status CatchUp();

  // Primary: writes every memtable to SST files and waits.
  absl::Status Flush();
  // Primary: fsyncs the WAL (what WriteOptions::sync does per write).
  absl::Status SyncWal();
  // Primary: compacts every column family fully (bottommost level
  // compressed with zstd) and waits; applies the DropFn to everything.
  absl::Status CompactAll();
  // Primary: compacts one column family fully and waits.
  absl::Status Compact(Cf cf);
  // Primary: turns automatic compactions off (bulk load) or back on.
  absl::Status SetBulkLoad(bool on);

  // Bytes of SST files of a column family (approximate, from RocksDB's
  // properties), and of its memtables.
  uint64_t SstBytes(Cf cf) const;
  uint64_t MemtableBytes(Cf cf) const;
  // Bytes of block cache in use.
  uint64_t BlockCacheBytes() const;

 private:
  struct Rep;
  explicit Kv(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace trainwatch::store::kv
