#include "store/rollup.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "codec/chunk.h"
#include "store/coding.h"
#include "store/raw_chunk.h"
#include "util/status_macros.h"
#include "util/mutex.h"

namespace trainwatch::store {

kv::Cf TierCf(Tier tier) {
  switch (tier) {
    case Tier::k60:
      return kv::Cf::kRollup60;
    case Tier::k300:
      return kv::Cf::kRollup300;
    case Tier::k3600:
      return kv::Cf::kRollup3600;
    case Tier::kRaw:
      break;
  }
  return kv::Cf::kRaw;
}

// Rollup rows are keyed like raw chunks (series, time, seq), in their own
// column families: the same encoding serves both.
namespace rollupkeys {

std::string SeriesPrefix(uint64_t series_id) { return rawkeys::SeriesPrefix(series_id); }

std::string Key(uint64_t series_id, int64_t window_start_ms, uint64_t seq) {
  return rawkeys::Key(series_id, window_start_ms, seq);
}

bool DecodeKey(std::string_view key, uint64_t* series_id, int64_t* window_start_ms) {
  return rawkeys::DecodeKey(key, series_id, window_start_ms);
}

}  // namespace rollupkeys

std::string EncodeRollupRecord(const std::vector<RollupBucket>& buckets, bool with_sketches) {
  bool any_flag = false;
  bool any_sketch = false;
  for (const RollupBucket& b : buckets) {
    any_flag = any_flag || b.agg.no_percentiles;
    any_sketch = any_sketch || (with_sketches && b.agg.sketch != nullptr);
  }
  codec::ChunkBuilder cols[4];
  for (const RollupBucket& b : buckets) {
    cols[0].Append(b.t_ms, b.agg.count);
    cols[1].Append(b.t_ms, b.agg.ReportedSum());
    cols[2].Append(b.t_ms, b.agg.min);
    cols[3].Append(b.t_ms, b.agg.max);
  }
  std::string v;
  v.push_back(1);
  v.push_back(static_cast<char>((any_sketch ? 1 : 0) | (any_flag ? 2 : 0)));
  coding::PutVarint64(&v, buckets.size());
  for (const auto& c : cols) coding::PutLengthPrefixed(&v, c.Finish());
  if (any_flag) {
    std::string bitmap((buckets.size() + 7) / 8, '\0');
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (buckets[i].agg.no_percentiles) bitmap[i / 8] |= static_cast<char>(1 << (i % 8));
    }
    v += bitmap;
  }
  if (any_sketch) {
    std::string sketch;
    for (const RollupBucket& b : buckets) {
      sketch.clear();
      if (b.agg.sketch) b.agg.sketch->EncodeTo(&sketch);
      coding::PutLengthPrefixed(&v, sketch);
    }
  }
  return v;
}

absl::Status DecodeRollupRecord(std::string_view value, bool want_sketches,
                                std::vector<RollupBucket>* out, uint8_t columns) {
  auto damaged = [](std::string_view what) {
    return absl::DataLossError(absl::StrFormat("a rollup record is damaged: %s", what));
  };
  if (value.size() < 2 || value[0] != 1) return damaged("bad version");
  const uint8_t flags = static_cast<uint8_t>(value[1]);
  value.remove_prefix(2);
  uint64_t n;
  if (!coding::GetVarint64(&value, &n) || n > (1 << 20)) return damaged("bad bucket count");
  std::vector<int64_t> t[4];
  std::vector<double> v[4];
  for (int c = 0; c < 4; ++c) {
    std::string_view bytes;
    if (!coding::GetLengthPrefixed(&value, &bytes)) return damaged("missing column");
    if (c > 0 && (columns & (1 << (c - 1))) == 0) continue;  // not needed: skip the bytes
    absl::Status s = codec::DecodeChunk(bytes, &t[c], &v[c]);
    if (!s.ok()) return damaged(std::string(s.message()));
    if (t[c].size() != n || v[c].size() != n) return damaged("column length");
  }
  for (int c = 1; c < 4; ++c) {
    if (v[c].empty()) v[c].assign(n, c == 1 ? 0.0 : c == 2 ? INFINITY : -INFINITY);
  }
  std::string_view bitmap;
  if (flags & 2) {
    size_t bytes = (n + 7) / 8;
    if (value.size() < bytes) return damaged("short bitmap");
    bitmap = value.substr(0, bytes);
    value.remove_prefix(bytes);
  }
  const size_t base = out->size();
  out->resize(base + n);
  for (size_t i = 0; i < n; ++i) {
    RollupBucket& b = (*out)[base + i];
    b.t_ms = t[0][i];
    b.agg.count = v[0][i];
    b.agg.sum = v[1][i];
    b.agg.sum_scale = Aggregate::kSumAsStored;
    b.agg.min = v[2][i];
    b.agg.max = v[3][i];
    b.agg.no_percentiles = !bitmap.empty() && (bitmap[i / 8] >> (i % 8) & 1);
  }
  if ((flags & 1) && want_sketches) {
    for (size_t i = 0; i < n; ++i) {
      std::string_view bytes;
      if (!coding::GetLengthPrefixed(&value, &bytes)) return damaged("missing sketch");
      if (bytes.empty()) continue;
      absl::StatusOr<codec::QuantileSketch> sketch = codec::QuantileSketch::Decode(bytes);
      if (!sketch.ok()) return damaged(std::string(sketch.status().message()));
      (*out)[base + i].agg.sketch = std::make_unique<codec::QuantileSketch>(std::move(*sketch));
    }
  }
  return absl::OkStatus();
}

void MergeStoredBucket(const StoredBucket& b, Aggregate* into) {
  Aggregate a;
  a.count = b.count;
  a.sum = b.sum;
  a.sum_scale = Aggregate::kSumAsStored;
  a.min = b.min;
  a.max = b.max;
  a.no_percentiles = b.no_percentiles;
  into->Merge(a);
}

absl::StatusOr<std::shared_ptr<const RollupRecordCache::Buckets>> RollupRecordCache::Get(
    Tier tier, std::string_view key, std::string_view value, uint8_t columns) {
  CacheKey k;
  const bool keyable = key.size() + 1 == k.size();
  if (keyable) {
    k[0] = static_cast<char>(tier);
    std::memcpy(k.data() + 1, key.data(), key.size());
    util::MutexLock lock(mu_);
    if (auto it = index_.find(k); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      if ((it->second->columns & columns) == columns) return it->second->buckets;
      // Decoded again with the columns kept and those asked for.
      columns |= it->second->columns;
    }
  }
  // Decoded outside the lock.
  std::vector<RollupBucket> decoded;
  TW_RETURN_IF_ERROR(DecodeRollupRecord(value, /*want_sketches=*/false, &decoded, columns));
  auto buckets = std::make_shared<Buckets>();
  buckets->reserve(decoded.size());
  for (const RollupBucket& b : decoded) {
    buckets->push_back({b.t_ms, b.agg.count, b.agg.sum, b.agg.min, b.agg.max,
                        b.agg.no_percentiles});
  }
  std::shared_ptr<const Buckets> out = std::move(buckets);
  if (!keyable) return out;
  // The buckets, the entry and about the map's and list's share of it.
  const size_t bytes = out->size() * sizeof(StoredBucket) + sizeof(Entry) + 96;
  if (bytes > max_bytes_) return out;
  util::MutexLock lock(mu_);
  if (auto it = index_.find(k); it != index_.end()) {
    // Another thread kept it meanwhile: its entry stays if it has as much.
    if ((it->second->columns & columns) == columns) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->buckets;
    }
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front({k, out, columns, bytes});
  index_.emplace(k, lru_.begin());
  bytes_ += bytes;
  while (bytes_ > max_bytes_) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return out;
}

size_t RollupRecordCache::bytes() const {
  util::MutexLock lock(mu_);
  return bytes_;
}

size_t RollupRecordCache::entries() const {
  util::MutexLock lock(mu_);
  return lru_.size();
}

RollupBuilder::RollupBuilder(const TierRetention& retention) {
  for (int t = 1; t < kTierCount; ++t) {
    sketch_[t] = retention.SketchesNeeded(static_cast<Tier>(t));
    track_ = track_ || sketch_[t];
  }
}

void RollupBuilder::Add(uint8_t lane, const Row& row) {
  const int64_t b = AlignDown(row.t_ms, kTierPeriodMs[static_cast<int>(Tier::k60)]);
  if (last_ == m1_.end() || last_->first != b) last_ = m1_.try_emplace(b).first;
  last_->second.AddRow(lane, row, track_ ? Distribution::kSketch : Distribution::kNone);
}

void RollupBuilder::Finish(const std::function<void(Tier, int64_t, std::string)>& emit) {
  // Coarser tiers from the 60 s buckets (every period divides the next).
  std::map<int64_t, Aggregate> coarse[kTierCount];
  for (int t = 2; t < kTierCount; ++t) {
    const int64_t period = kTierPeriodMs[t];
    for (const auto& [start, agg] : m1_) coarse[t][AlignDown(start, period)].Merge(agg);
  }
  for (int t = 1; t < kTierCount; ++t) {
    std::map<int64_t, Aggregate>& buckets = t == 1 ? m1_ : coarse[t];
    const int64_t window = kTierWindowMs[t];
    std::vector<RollupBucket> record;
    int64_t current = 0;
    auto flush = [&] {
      if (record.empty()) return;
      emit(static_cast<Tier>(t), current, EncodeRollupRecord(record, sketch_[t]));
      record.clear();
    };
    for (auto& [start, agg] : buckets) {
      const int64_t w = AlignDown(start, window);
      if (!record.empty() && w != current) flush();
      current = w;
      RollupBucket b;
      b.t_ms = start;
      b.agg = std::move(agg);
      record.push_back(std::move(b));
    }
    flush();
  }
  m1_.clear();
  last_ = m1_.end();
}

}  // namespace trainwatch::store
