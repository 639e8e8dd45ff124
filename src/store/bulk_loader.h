#pragma once
// BulkLoader: the fast path for history (`trainwatch import`). Samples go
// straight into raw chunks and rollups, written without the WAL; Finish()
// seals what is open, records last values and flushes, after which
// everything is durable. Open the Db with DbOptions::bulk_load for speed
// (no compactions meanwhile).
//
// Unlike Db::PutSamples, timestamps are not limited to CloudWatch's window
// (history may be years old); retention still applies (see docs/store.md:
// keep imported namespaces with a retention rule, e.g. `--keep forever`).
// An import that dies before Finish() leaves what was flushed so far.
//
// Not thread-safe: one thread calls Add and Finish. The Db stays usable by
// other writers meanwhile. Threads: `seal_threads` sealers (encoding and
// writing chunks and rollups), joined by Finish() or the destructor.

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/series.h"
#include "store/db.h"
#include "store/head.h"
#include "util/bounded_queue.h"
#include "util/mutex.h"

namespace trainwatch::store {

inline constexpr int kMaxAutoSealThreads = 4;

struct BulkLoadOptions {
  // Larger chunks than the live head's: fewer records, fewer bytes.
  HeadOptions chunks = {.max_chunk_rows = 16384,
                        .max_chunk_bytes = 128 << 10,
                        .max_chunk_span_ms = kMaxChunkSpanMs,
                        .max_open_ms = 0,
                        .idle_ms = 0,
                        .max_head_bytes = 0};
  // Write a batch when it holds this much. Each sealer fills its own, and
  // RocksDB copies it into the memtable: at 4 MiB the import of gen_metrics
  // `big` peaked at about 81 MiB, at 1 MiB at 71, as fast (BENCHMARKS.md,
  // "Time-series store").
  size_t batch_bytes = 1 << 20;
  // Open chunks are sealed, least recently appended first, while they hold
  // more than this (the codec keeps 16 bytes per open sample).
  size_t max_open_bytes = 16 << 20;
  // Threads that encode sealed chunks and write them (0: one per CPU, at most
  // kMaxAutoSealThreads, each with its own write batch; negative: none, seal
  // in the calling thread). Encoding is the longest stage of an import: two
  // sealers instead of one made `trainwatch import` about a quarter faster on
  // 2 cores.
  int seal_threads = 0;
};

class BulkLoader {
 public:
  // `db` must be a writer and outlive the loader.
  static absl::StatusOr<std::unique_ptr<BulkLoader>> Create(Db* db, BulkLoadOptions options = {});
  ~BulkLoader();

  // Adds plain samples of one series, in any order (sorted runs are
  // cheapest). InvalidArgument for a non-canonical key or a non-finite value,
  // naming the series and sample.
  absl::Status Add(const model::SeriesKey& key, const std::vector<int64_t>& t_ms,
                   const std::vector<double>& values);
  // Seals everything, records last values, flushes; turns compactions on.
  absl::Status Finish();

  uint64_t samples() const { return samples_; }
  size_t series() const { return series_.size(); }

 private:
  struct Series {
    SeriesId id = 0;
    uint64_t last_add = 0;  // Add() call count at the last append
    TierRetention retention;
    SeriesHead head;
    bool has_last = false;
    LastValue last;
  };
  struct SealTask {
    SeriesId id = 0;
    TierRetention retention;
    SeriesHead head;
    uint64_t first_seq = 0;  // kSeqsPerSeal reserved from here
  };
  static constexpr uint64_t kSeqsPerSeal = 64;
  BulkLoader(Db* db, BulkLoadOptions options) : db_(db), options_(options) {}
  void SealerLoop();
  absl::Status StopSealers();
  absl::StatusOr<Series*> Lookup(const model::SeriesKey& key);
  absl::Status SealSeries(Series* s);
  absl::Status MaybeWrite(bool force);
  // Seals least recently used series while open chunks exceed the bound.
  absl::Status BoundOpenChunks();
  absl::Status EnsureSeqs();
  uint64_t NextSeq();

  Db* db_;
  BulkLoadOptions options_;
  absl::flat_hash_map<std::string, std::unique_ptr<Series>> series_;
  kv::WriteBatch batch_;
  uint64_t seq_next_ = 0;
  uint64_t seq_end_ = 0;
  uint64_t samples_ = 0;
  uint64_t adds_ = 0;
  size_t open_rows_ = 0;  // rows in open chunks
  bool finished_ = false;
  std::vector<Row> rows_;  // scratch
  std::unique_ptr<util::BoundedQueue<SealTask>> tasks_;  // null: seal inline
  util::Mutex seal_mu_;
  absl::Status seal_error_ ABSL_GUARDED_BY(seal_mu_);
  // Last: destroyed before what they use. They stop when tasks_ is closed
  // and drained (not by their stop tokens: every queued task must be sealed),
  // so StopSealers closes it and joins them, from Finish or the destructor.
  std::vector<std::jthread> sealers_;
};

}  // namespace trainwatch::store
