#pragma once
// ReadView: a consistent view of the store for one read operation. Get one
// from Db::View(), use it, drop it; everything read through one view belongs
// to the same moment (a RocksDB snapshot in the writer; in a reader, the state
// of the last catch-up, which waits while views exist).
//
// The query layer (src/query) builds the API semantics on these primitives.
// Thread safety: a view may be used by one thread at a time; several views
// may be used concurrently.

#include <cstdint>
#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/alarm.h"
#include "model/job_record.h"
#include "store/aggregate.h"
#include "store/head.h"
#include "store/kv/kv.h"
#include "store/lane.h"
#include "store/log_store.h"
#include "store/retention.h"
#include "store/series_index.h"
#include "util/mutex.h"

namespace trainwatch::store {

class LogCursor;
class RollupRecordCache;

// A series and its id, as the index knows it.
struct SeriesRef {
  SeriesId id = 0;
  model::SeriesKey key;
};

// What AggregateSeries computes: buckets[k] aggregates the series' data with
// origin_ms + k * period_ms <= t < origin_ms + (k + 1) * period_ms, limited
// to [start_ms, end_ms).
struct AggregateRequest {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t origin_ms = 0;
  int64_t period_ms = 1;
  // Tier::kRaw: from every sample (sealed chunks and the head). A rollup
  // tier: from its buckets (a tier bucket counts in the query bucket that
  // holds its start; exact when period and origin are aligned to the tier)
  // plus the head's samples, which no tier holds yet.
  Tier source = Tier::kRaw;
  // Build the value distribution (for percentiles): exactly from raw rows, or
  // as sketches (rollup tiers carry sketches; head rows are sketched too).
  Distribution distribution = Distribution::kNone;
  // Leave out standard-resolution data (periods under 60 s).
  bool high_resolution_only = false;
  // Statistics the caller reads besides the count (RollupColumns of
  // store/rollup.h): rollup columns not asked for need not be decoded, and
  // those fields of the result are meaningless (kept decoded records may
  // bring them).
  uint8_t columns = 7;
};

// A follower's shared hold on the state it has caught up to (catching up
// takes the mutex exclusively). It counts the holds of the current thread, so
// that Db::View() on a thread that still holds a view reads what that view
// reads instead of waiting for itself to catch up. A ReadView therefore stays
// on the thread that took it.
class CatchUpHold {
 public:
  CatchUpHold() = default;
  explicit CatchUpHold(util::SharedMutex& mu);
  CatchUpHold(CatchUpHold&& other) noexcept = default;
  CatchUpHold& operator=(CatchUpHold&&) = delete;
  ~CatchUpHold();
  // Holds of the calling thread, over every Db of the process.
  static int HeldByThisThread();

 private:
  std::shared_lock<util::SharedMutex> lock_;
};

class ReadView {
 public:
  // `rollup_cache` (may be null) keeps decoded rollup records for views to
  // come; it must outlive the view.
  ReadView(const kv::Kv* kv, std::shared_ptr<const kv::Snapshot> snapshot,
           CatchUpHold catch_up_hold, std::shared_ptr<const RetentionPolicy> retention,
           int64_t now_ms, RollupRecordCache* rollup_cache);
  ReadView(ReadView&&) = default;
  ~ReadView();

  // Another view of the same state, with iterators of its own, for one other
  // thread (a view and its iterators stay on one thread). Valid only while
  // this view lives: it shares this view's snapshot and relies on this view's
  // catch-up hold.
  ReadView Fork() const;

  // "Now" as the view's clock saw it when the view was taken.
  int64_t now_ms() const { return now_ms_; }
  const RetentionPolicy& retention() const { return *retention_; }

  // ---- jobs ---------------------------------------------------------------
  // The job whose name equals `name` ignoring case, or nullopt.
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name) const;
  // Every job in lower-cased name order; `fn` returns false to stop.
  absl::Status ForEachJob(const std::function<bool(model::JobRecord&&)>& fn) const;
  // Every CloudWatch alarm in byte order of its name.
  absl::Status ForEachAlarm(const std::function<bool(model::AlarmRecord&&)>& fn) const;

  // ---- logs ---------------------------------------------------------------
  // A log group's record, or nullopt when it does not exist.
  absl::StatusOr<std::optional<LogGroupInfo>> GetLogGroup(std::string_view group) const;
  // Every log group whose name starts with `prefix`, in byte order of the
  // name; `fn` returns false to stop.
  absl::Status ForEachLogGroup(std::string_view prefix,
                               const std::function<bool(LogGroupInfo&&)>& fn) const;
  absl::StatusOr<std::optional<LogStreamInfo>> GetLogStream(std::string_view group,
                                                           std::string_view stream) const;
  // Streams of `group` whose name starts with `prefix`, in byte order of the
  // name, beginning after `start_after` (empty: from the first); `fn` returns
  // false to stop. Descending order when `descending` (then `start_after`
  // means "before").
  absl::Status ForEachLogStream(std::string_view group, std::string_view prefix,
                                std::string_view start_after, bool descending,
                                const std::function<bool(LogStreamInfo&&)>& fn) const;
  // A cursor over one stream's events; see LogCursor.
  std::unique_ptr<LogCursor> NewLogCursor(const LogStreamInfo& stream) const;

  // ---- metrics --------------------------------------------------------------
  // Series with this namespace, metric and exactly these dimensions (sorted
  // by name); any unit, or only `unit` when not null. In unit order.
  absl::Status FindSeries(std::string_view ns, std::string_view metric,
                          const std::vector<model::Dimension>& dims, const std::string* unit,
                          std::vector<SeriesRef>* out) const;
  // Every series in ListMetrics order (namespace, metric, dimensions, unit),
  // narrowed to `ns` and `metric` when they are not empty, starting after
  // the listing key `start_after` (empty: the first). `fn` gets the series
  // and its listing key (see indexkeys::MetricPart) and returns false to stop.
  absl::Status ForEachSeries(
      std::string_view ns, std::string_view metric, std::string_view start_after,
      const std::function<bool(SeriesRef&&, std::string_view listing_key)>& fn) const;
  absl::StatusOr<std::optional<model::SeriesKey>> GetSeriesKey(SeriesId id) const;
  // The newest sample of a series: its "l" record, its newest head record
  // and its newest head log entry, see head.h; nullopt when it
  // has none.
  absl::StatusOr<std::optional<LastValue>> GetLastValue(SeriesId id) const;
  // Adds the series' data to `buckets` (sized by the caller; see
  // AggregateRequest).
  absl::Status AggregateSeries(SeriesId id, const AggregateRequest& request,
                               std::vector<Aggregate>* buckets) const;
  // Every row with start_ms <= t < end_ms, sealed or open, in no particular
  // order (overlapping chunks are not merged).
  absl::Status ScanRows(SeriesId id, int64_t start_ms, int64_t end_ms,
                        const std::function<void(uint8_t lane, const Row&)>& fn) const;
  // The buckets of a rollup tier (not kRaw) with start_ms <= bucket start <
  // end_ms, in no particular order and unmerged (several records may hold
  // buckets of one period, one per seal), without sketches; of sum, min and
  // max only the `columns` asked for (RollupColumns of store/rollup.h). Data
  // still in the head is in no tier yet: ScanHeadRows reads it.
  absl::Status ScanRollupBuckets(SeriesId id, Tier tier, int64_t start_ms, int64_t end_ms,
                                 uint8_t columns,
                                 const std::function<void(int64_t t_ms, const Aggregate&)>& fn) const;
  // The rows of the head only (not sealed yet).
  absl::Status ScanHeadRows(SeriesId id, int64_t start_ms, int64_t end_ms,
                            const std::function<void(uint8_t lane, const Row&)>& fn) const;

  // ---- raw access for the rest of the store -------------------------------
  absl::StatusOr<std::optional<std::string>> Get(kv::Cf cf, std::string_view key) const;
  std::unique_ptr<kv::Iterator> NewIterator(kv::Cf cf, std::string lower, std::string upper,
                                            bool fill_cache = true) const;

 private:
  const kv::Kv* kv_;
  // An unbounded iterator per column family, made on first use and reused
  // (creating RocksDB iterators costs more than seeking them).
  kv::Iterator* Cached(kv::Cf cf) const;
  // Visits [lower, upper) with the cached iterator of `cf`.
  template <typename Fn>
  absl::Status Range(kv::Cf cf, std::string_view lower, std::string_view upper, Fn fn) const;
  // ScanRows over the raw chunks only; fn also gets the places of the chunk's
  // values (RawChunkReader::value_places).
  template <typename Fn>
  absl::Status ScanChunkRows(SeriesId id, int64_t start_ms, int64_t end_ms, Fn fn) const;

  // The head log (head.h), indexed once per view on first use and shared
  // with its forks: a copy of its records, and each series' entries in them
  // in write order. An entry is decoded only when its series is read: a
  // view that reads a few series of a log of many pays for their rows only.
  struct HeadLog {
    HeadLog() = default;
    HeadLog(const HeadLog&) = delete;  // a copy's entries would point into this one
    HeadLog& operator=(const HeadLog&) = delete;
    std::deque<std::string> records;  // a deque: the entries point into them
    struct Entry {
      std::string_view bytes;  // a head record, its times from t_base
      int64_t t_base = 0;
    };
    absl::flat_hash_map<SeriesId, std::vector<Entry>> entries;
  };
  absl::StatusOr<const HeadLog*> IndexedHeadLog() const;

  std::shared_ptr<const kv::Snapshot> snapshot_;
  mutable std::shared_ptr<const HeadLog> head_log_;
  mutable std::array<std::unique_ptr<kv::Iterator>, kv::kCfCount> cached_;
  CatchUpHold catch_up_hold_;
  std::shared_ptr<const RetentionPolicy> retention_;
  int64_t now_ms_;
  RollupRecordCache* rollup_cache_;
};

// Iterates one stream's events in (t_ms, seq) order, both ways. Valid only
// while the ReadView that made it lives.
class LogCursor {
 public:
  explicit LogCursor(std::unique_ptr<kv::Iterator> it, uint64_t stream_id)
      : it_(std::move(it)), stream_id_(stream_id) {}
  // First event at or after `pos`.
  void Seek(LogPosition pos);
  // Last event at or before `pos`.
  void SeekForPrev(LogPosition pos);
  void SeekToFirst();
  void SeekToLast();
  bool Valid() const;
  void Next();
  void Prev();
  // The current event (Valid() must be true). DataLoss for a damaged record.
  absl::StatusOr<StoredLogEvent> event() const;
  // The position of the current event without decoding its message.
  LogPosition position() const;
  absl::Status status() const { return it_->status(); }

 private:
  std::unique_ptr<kv::Iterator> it_;
  uint64_t stream_id_;
};

}  // namespace trainwatch::store
