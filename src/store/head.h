#pragma once
// The head: the open (unsealed) chunks of every active series, in memory,
// with a durable copy of their rows in the head column family.
//
// Invariant: the head records of a series (key: series id | seq) plus its
// entries in the head log hold exactly the rows in its open chunks and in its
// sealed chunks not yet written (Db::SealJob: those are in records below the
// seal's boundary).
//
// Each commit writes one head log record (key: kLogSeries | seq) with the
// rows that every series of the commit kept open, instead of one record per
// series: per-series records, each a memtable insert that RocksDB later
// flushes and compacts until the series seals, were half of the write path's
// cost with many series per request. A checkpoint moves the log's rows to
// per-series head records (one per series, with everything it got since the
// previous checkpoint, read from its open chunks: the writer keeps no other
// copy) and deletes the log, in one atomic batch; it runs when
// the log reaches HeadOptions::log_checkpoint_bytes, at every maintenance
// tick (about a second), and before any seal, so that log rows are never
// sealed and replay can take every log row as open. Sealing a series writes
// its chunks to the raw column family, its rollups to the tiers, and deletes
// its head records, in the same atomic batch (the writer encodes the chunks
// first, usually on its sealer thread, and the batch deletes only the records
// of the rows it sealed: Db::SealJob). After a crash, the next writer
// reads the head records and the log back (only the unsealed tail) and
// continues.
//
// Head records and log entries also carry the series' last value as of
// their write, so the newest of them answers "last value" with one lookup
// each; the index's "l" record is brought up to date when the series seals.
// Readers take the newest of the three (ReadView::GetLastValue). They index
// the log (at most a checkpoint's worth) by series once per view, and decode
// the entries of the series they read.
//
// Within a lane, rows in time order go to the main chunk; a late row (older
// than the main chunk's last) goes to a second "late" chunk while it is in
// order there; a row that fits neither makes the series seal first. Chunks
// are also sealed when full (rows, bytes, span) and by the writer's
// maintenance (age, idleness, total head memory).
//
// Memory per active series: see SeriesHead::MemoryBytes() and docs/store.md.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "store/kv/kv.h"
#include "store/lane.h"
#include "store/raw_chunk.h"
#include "store/retention.h"
#include "store/series_index.h"

namespace trainwatch::store {

struct HeadOptions {
  // A chunk is sealed when it reaches any of these.
  size_t max_chunk_rows = 4096;
  size_t max_chunk_bytes = 16 << 10;
  int64_t max_chunk_span_ms = 2 * 3'600'000LL;  // <= kMaxChunkSpanMs
  // Maintenance seals a series whose head was opened this long ago (wall
  // clock), or that received nothing for idle_ms; this bounds what a restart
  // replays and what readers in other processes decode from head records.
  int64_t max_open_ms = 3'600'000;
  int64_t idle_ms = 10 * 60'000;
  // Maintenance seals the biggest heads while the total exceeds this.
  size_t max_head_bytes = 64 << 20;
  // When sealed heads waiting for the sealer thread hold more than this
  // many bytes at the end of a commit (before its write), the write leader
  // encodes the oldest itself until they hold less. This bounds memory when
  // sealing falls behind: to this plus one commit's seals and the job the
  // sealer is encoding, plus encoded chunks waiting for their commit.
  size_t max_sealing_bytes = 16 << 20;
  // A commit that brings the head log past this many bytes checkpoints it
  // (see above); readers index at most about this much per view. Each
  // checkpoint writes a record per series, whatever its size: at 1 MiB they
  // were a tenth of the server's CPU under a fast sender of many series.
  size_t log_checkpoint_bytes = 4 << 20;
};

// The open chunks of one series.
class SeriesHead {
 public:
  SeriesHead() = default;
  // Appends `row` to `lane` (see the class comment); false when it fits
  // neither chunk of the lane: the caller seals the series and appends again.
  bool TryAppend(uint8_t lane, const Row& row, const HeadOptions& options);
  bool empty() const;
  size_t rows() const;
  size_t EstimatedBytes() const;
  // Heap bytes this head uses, all included (for the memory bound).
  size_t MemoryBytes() const;
  // Every non-empty open chunk.
  void ForEachChunk(const std::function<void(const LaneChunk&)>& fn) const;
  // Appends to *out the rows appended since the last call (or Clear) as the
  // lane sections of a head record (a lane's main and late chunk give one
  // each), and marks them taken: the rows a checkpoint writes to the
  // series' next head record (see above), read from the open chunks rather
  // than kept twice.
  void TakeRowsSinceCheckpoint(std::string* out);
  void Clear();
  // Starts loading the memory the next in-order append to the first lane
  // writes to (see codec::ChunkBuilder::PrefetchNextAppend).
  void PrefetchNextAppend() const {
    if (!lanes_.empty()) lanes_[0].main.PrefetchNextAppend();
  }

  int64_t opened_ms = 0;       // wall clock of the first row since the last seal
  int64_t last_append_ms = 0;  // wall clock of the last row

 private:
  struct LaneState {
    explicit LaneState(uint8_t lane) : main(lane), late(lane) {}
    LaneChunk main;
    LaneChunk late;
    // Rows of each chunk that TakeRowsSinceCheckpoint has taken.
    size_t main_taken = 0;
    size_t late_taken = 0;
  };
  static bool Fits(const LaneChunk& c, const Row& row, const HeadOptions& o);
  // At most kLaneCount, nearly always one: kept inside the head, an append
  // reaches its chunk through one pointer fewer (a cache miss, with
  // thousands of series written at once).
  absl::InlinedVector<LaneState, 1> lanes_;
};

// The records a seal writes, encoded but not yet keyed: its raw chunks and
// their rollups. Encoding is the costly part of a seal and needs nothing but
// the head, so it can run on another thread than the one that keys and writes.
struct SealedRecords {
  struct Record {
    kv::Cf cf;     // kRaw or a rollup tier's
    int64_t t_ms;  // raw: the chunk's first row; rollup: the window's start
    std::string value;
  };
  std::vector<Record> records;
};
SealedRecords EncodeSeal(const TierRetention& retention, const SeriesHead& head);
// Adds `sealed` to `batch` under `series_id`, with keys from `next_seq`.
void PutSealed(uint64_t series_id, SealedRecords sealed, const std::function<uint64_t()>& next_seq,
               kv::WriteBatch* batch);

// EncodeSeal and PutSealed in one go, then clears the head. Does not touch
// head records (the caller deletes them).
void SealChunks(uint64_t series_id, const TierRetention& retention, SeriesHead* head,
                const std::function<uint64_t()>& next_seq, kv::WriteBatch* batch);

// Head records.
namespace headkeys {
std::string Key(uint64_t series_id, uint64_t seq);
std::string SeriesPrefix(uint64_t series_id);
std::string SeriesEnd(uint64_t series_id);
// A range delete's start just below Key(series_id, seq) and above every
// lower record: Key(series_id, seq - 1) and a zero byte (seq >= 1). 17 bytes,
// which store/kv's memtable insert hints leave alone (a range delete's start
// must not share a hint with point keys).
std::string RangeStart(uint64_t series_id, uint64_t seq);
bool DecodeKey(std::string_view key, uint64_t* series_id, uint64_t* seq);
// The head log's records are keyed as a series with this reserved id (no
// series gets it: ids count up from 1), so they sort after every series'.
inline constexpr uint64_t kLogSeries = UINT64_MAX;
std::string LogKey(uint64_t seq);
// [LogPrefix(), LogEnd()) holds exactly the head log. LogPrefix() is 8 bytes,
// so it can start a range delete (see store/kv's insert hints).
std::string LogPrefix();
std::string LogEnd();
}  // namespace headkeys

// Rows of several lanes, as in one head record.
struct LaneRows {
  uint8_t lane = 0;
  std::vector<Row> rows;
};
// `last`: the series' newest sample as of this write (null: none known).
std::string EncodeHeadRecord(const std::vector<LaneRows>& lanes, const LastValue* last);
// Ends a head record whose lane sections are in *out with the last value.
void AppendHeadRecordLast(const LastValue& last, std::string* out);
// DataLoss on damaged bytes. Appends to `lanes`; `last` (may be null) is set
// when the record carries one (records written before it existed do not).
// `t_base`: the time the record's sections count from (a head log entry's:
// ForEachHeadLogEntry gives it; 0 in head records).
absl::Status DecodeHeadRecord(std::string_view value, std::vector<LaneRows>* lanes,
                              std::optional<LastValue>* last = nullptr, int64_t t_base = 0);

// A head log record: in data format 2 a zero byte and a zigzag varint time
// base (the time the record's first row), then one entry per series, each a
// varint series id, a varint length and a head record (EncodeHeadRecord,
// its times from the base) of that length, except that a last value that is
// the entry's last row is written as one byte saying so. Format 1 records
// have no base (their times count from 0).
void AppendHeadLogEntry(uint64_t series_id, const std::vector<LaneRows>& lanes,
                        const LastValue* last, std::string* record);
// Calls `fn` with each entry's series id, head record bytes and time base
// (for DecodeHeadRecord), in order, without decoding them; DataLoss on
// damaged framing (the entries' own bytes are checked when DecodeHeadRecord
// reads them).
absl::Status ForEachHeadLogEntry(
    std::string_view value,
    const std::function<void(uint64_t series_id, std::string_view entry, int64_t t_base)>& fn);
// Calls `fn` for each entry in order, decoded; DataLoss on damaged bytes.
absl::Status DecodeHeadLogRecord(
    std::string_view value,
    const std::function<void(uint64_t series_id, std::vector<LaneRows>&& lanes,
                             std::optional<LastValue> last)>& fn);

}  // namespace trainwatch::store
