#pragma once
// Rollup tiers: 60 s, 300 s and 3600 s buckets of count, sum, min, max (and
// a quantile sketch where raw data will not outlive the tier, see
// TierRetention::SketchesNeeded). Rollups are computed when the head seals a
// chunk (and by the bulk loader), from exactly the rows that go into raw
// chunks; data not sealed yet is aggregated from the head at query time, so
// queries always see everything at once.
//
// Records group the buckets of one series in an aligned window (6 h for the
// 60 s tier, 1 d for 300 s, 16 d for 3600 s). Several records may hold
// buckets of the same window (one per seal); readers merge them.
//
//   rollup column family key:  series id (8) | window start (8, ordered) | seq (8)
//   value:  u8 version=1 | u8 flags (1 sketches, 2 no-percentile bitmap) | varint n
//           | 4 x (varint length, codec chunk): (bucket start, count|sum|min|max)
//           | [bitmap, ceil(n/8) bytes] | [n x (varint length, sketch bytes)]
// (docs/format/store.md).

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/aggregate.h"
#include "store/kv/kv.h"
#include "store/lane.h"
#include "store/retention.h"
#include "util/mutex.h"

namespace trainwatch::store {

inline constexpr std::array<int64_t, kTierCount> kTierWindowMs = {
    0, 6 * 3'600'000LL, 24 * 3'600'000LL, 16 * 24 * 3'600'000LL};

// The column family of a rollup tier.
kv::Cf TierCf(Tier tier);

// Floor division for possibly negative times.
inline int64_t AlignDown(int64_t t, int64_t step) {
  int64_t r = t % step;
  return r < 0 ? t - r - step : t - r;
}

struct RollupBucket {
  int64_t t_ms = 0;  // bucket start
  Aggregate agg;
};

namespace rollupkeys {
std::string Key(uint64_t series_id, int64_t window_start_ms, uint64_t seq);
std::string SeriesPrefix(uint64_t series_id);
bool DecodeKey(std::string_view key, uint64_t* series_id, int64_t* window_start_ms);
}  // namespace rollupkeys

// Which statistics a reader needs besides SampleCount (always decoded).
enum RollupColumns : uint8_t { kSumColumn = 1, kMinColumn = 2, kMaxColumn = 4, kAllColumns = 7 };

// `buckets` sorted by t_ms; sketches are written when `with_sketches` and a
// bucket has one.
std::string EncodeRollupRecord(const std::vector<RollupBucket>& buckets, bool with_sketches);
// Appends the record's buckets to `out`; sketches decoded only when asked,
// and of sum, min and max only the `columns` asked for (the others keep
// their empty-aggregate defaults). DataLoss on damaged bytes (never
// undefined behaviour).
absl::Status DecodeRollupRecord(std::string_view value, bool want_sketches,
                                std::vector<RollupBucket>* out, uint8_t columns = kAllColumns);

// A rollup record's bucket without its sketch, as RollupRecordCache keeps it.
struct StoredBucket {
  int64_t t_ms = 0;
  double count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  bool no_percentiles = false;
};

// Merges a stored bucket into `into`, as Merge would merge the bucket that
// DecodeRollupRecord gives for it without its sketch.
void MergeStoredBucket(const StoredBucket& b, Aggregate* into);

// Decoded rollup records, by tier and record key, for queries that want no
// percentiles. Dashboards ask for the same series again and again, and
// decoding a record's columns was about half of what such a query cost on
// sealed data. A record never changes under its key (every seal writes
// records under new keys; retention only deletes them), so a kept entry is
// always right. The least recently used entries go once the entries pass
// `max_bytes`. Thread-safe.
class RollupRecordCache {
 public:
  using Buckets = std::vector<StoredBucket>;
  explicit RollupRecordCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  RollupRecordCache(const RollupRecordCache&) = delete;
  RollupRecordCache& operator=(const RollupRecordCache&) = delete;

  // The buckets of the record stored under `key` with `value` in `tier`'s
  // column family, with at least `columns` of sum, min and max (the others
  // keep an empty aggregate's values, as DecodeRollupRecord leaves them):
  // kept ones, or decoded now with those and the kept entry's columns, and
  // kept. DataLoss as DecodeRollupRecord gives it.
  absl::StatusOr<std::shared_ptr<const Buckets>> Get(Tier tier, std::string_view key,
                                                     std::string_view value,
                                                     uint8_t columns = kAllColumns);
  size_t bytes() const;
  size_t entries() const;

 private:
  // Tier and record key (series id, window start, seq: 24 bytes); a key of
  // another length is decoded every time.
  using CacheKey = std::array<char, 25>;
  struct Entry {
    CacheKey key;
    std::shared_ptr<const Buckets> buckets;
    uint8_t columns;  // RollupColumns decoded
    size_t bytes;
  };
  const size_t max_bytes_;
  mutable util::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<CacheKey, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Computes every tier's records from rows.
class RollupBuilder {
 public:
  explicit RollupBuilder(const TierRetention& retention);
  RollupBuilder(const RollupBuilder&) = delete;  // last_ points into m1_
  RollupBuilder& operator=(const RollupBuilder&) = delete;
  void Add(uint8_t lane, const Row& row);
  bool empty() const { return m1_.empty(); }
  // Calls emit(tier, window start, record value) for every window of every
  // tier, then clears.
  void Finish(const std::function<void(Tier, int64_t, std::string)>& emit);

 private:
  std::array<bool, kTierCount> sketch_{};  // store sketches in this tier
  bool track_ = false;                     // build sketches at all
  std::map<int64_t, Aggregate> m1_;
  // The bucket Add used last: rows come in time order, so mostly the next.
  std::map<int64_t, Aggregate>::iterator last_ = m1_.end();
};

}  // namespace trainwatch::store
