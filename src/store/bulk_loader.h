#pragma once
// BulkLoader: the fast path for history (`trainwatch import`). Samples go
// straight into raw chunks and rollups, written without the WAL and with
// RocksDB's automatic compactions off; Finish() seals what is open, records
// last values and flushes, after which everything is durable.
//
// Unlike Db::PutSamples, timestamps are not limited to CloudWatch's window
// (history may be years old); retention still applies (see docs/store.md:
// keep imported namespaces with a retention rule, e.g. `--keep forever`).
// An import that dies before Finish() leaves what was flushed so far.
//
// Not thread-safe: one thread calls Add and Finish. The Db stays usable by
// other writers meanwhile.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/series.h"
#include "store/db.h"
#include "store/head.h"

namespace trainwatch::store {

struct BulkLoadOptions {
  // Larger chunks than the live head's: fewer records, fewer bytes.
  HeadOptions chunks = {.max_chunk_rows = 8192,
                        .max_chunk_bytes = 64 << 10,
                        .max_chunk_span_ms = kMaxChunkSpanMs,
                        .max_open_ms = 0,
                        .idle_ms = 0,
                        .max_head_bytes = 0};
  // Write a batch when it holds this much.
  size_t batch_bytes = 4 << 20;
  // Open chunks are sealed, least recently appended first, while they hold
  // more than this (the codec keeps 16 bytes per open sample).
  size_t max_open_bytes = 48 << 20;
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
  BulkLoader(Db* db, BulkLoadOptions options) : db_(db), options_(options) {}
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
};

}  // namespace trainwatch::store
