// ReadView: the metric reads (index, last value, aggregation, rows).
#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/head.h"
#include "store/raw_chunk.h"
#include "store/read_view.h"
#include "store/rollup.h"
#include "util/status_macros.h"

namespace trainwatch::store {
namespace {

// Floor((t - origin) / period) without overflow surprises for t < origin.
int64_t BucketIndex(int64_t t, int64_t origin, int64_t period) {
  int64_t d = t - origin;
  return d >= 0 ? d / period : -((-d + period - 1) / period);
}

}  // namespace

template <typename Fn>
absl::Status ReadView::Range(kv::Cf cf, std::string_view lower, std::string_view upper,
                             Fn fn) const {
  kv::Iterator* it = Cached(cf);
  for (it->Seek(lower); it->Valid() && it->key() < upper; it->Next()) {
    absl::Status s = fn(it->key(), it->value());
    if (!s.ok()) return s;
  }
  return it->status();
}

absl::Status ReadView::FindSeries(std::string_view ns, std::string_view metric,
                                  const std::vector<model::Dimension>& dims,
                                  const std::string* unit, std::vector<SeriesRef>* out) const {
  std::string prefix = indexkeys::ListingPrefix(ns, metric, dims);
  if (unit != nullptr) coding::PutOrderedString(&prefix, *unit);
  return Range(kv::Cf::kIndex, prefix, coding::PrefixSuccessor(prefix),
               [&](std::string_view key, std::string_view) {
                 SeriesRef ref;
                 if (!indexkeys::DecodeListing(key, &ref.key, &ref.id)) {
                   return absl::DataLossError("a series listing record is damaged");
                 }
                 out->push_back(std::move(ref));
                 return absl::OkStatus();
               });
}

absl::Status ReadView::ForEachSeries(
    std::string_view ns, std::string_view metric, std::string_view start_after,
    const std::function<bool(SeriesRef&&, std::string_view listing_key)>& fn) const {
  std::string prefix = "n";
  if (!ns.empty()) {
    prefix = metric.empty() ? indexkeys::ListingPrefix(ns) : indexkeys::ListingPrefix(ns, metric);
  }
  auto it = NewIterator(kv::Cf::kIndex, prefix, coding::PrefixSuccessor(prefix));
  if (start_after.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(std::string(start_after) + std::string(1, '\0'));
  }
  for (; it->Valid(); it->Next()) {
    SeriesRef ref;
    if (!indexkeys::DecodeListing(it->key(), &ref.key, &ref.id)) {
      return absl::DataLossError("a series listing record is damaged");
    }
    if (!fn(std::move(ref), it->key())) break;
  }
  return it->status();
}

absl::StatusOr<std::optional<model::SeriesKey>> ReadView::GetSeriesKey(SeriesId id) const {
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, Get(kv::Cf::kIndex, indexkeys::ById(id)));
  if (!v) return std::optional<model::SeriesKey>();
  model::SeriesKey key;
  if (!indexkeys::DecodeSeriesKey(*v, &key)) {
    return absl::DataLossError(absl::StrFormat("the index record of series %d is damaged", id));
  }
  return std::optional<model::SeriesKey>(std::move(key));
}

absl::StatusOr<std::optional<LastValue>> ReadView::GetLastValue(SeriesId id) const {
  std::optional<LastValue> last;
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, Get(kv::Cf::kIndex, indexkeys::Last(id)));
  if (v) {
    last.emplace();
    if (!indexkeys::DecodeLast(*v, &*last)) {
      return absl::DataLossError(
          absl::StrFormat("the last-value record of series %d is damaged", id));
    }
  }
  // The series' newest head record carries its last value since the last seal.
  kv::Iterator* it = Cached(kv::Cf::kHead);
  it->SeekForPrev(headkeys::SeriesEnd(id));
  uint64_t head_id = 0, seq = 0;
  if (it->Valid() && headkeys::DecodeKey(it->key(), &head_id, &seq) && head_id == id) {
    std::vector<LaneRows> rows;
    std::optional<LastValue> head_last;
    if (!DecodeHeadRecord(it->value(), &rows, &head_last).ok()) {
      return absl::DataLossError(absl::StrFormat("a head record of series %d is damaged", id));
    }
    if (head_last && (!last || head_last->t_ms >= last->t_ms)) last = head_last;
  }
  TW_RETURN_IF_ERROR(it->status());
  // The head log is newer still: its newest entry of the series that has one
  // (entries come in write order).
  TW_ASSIGN_OR_RETURN(const HeadLog* log, IndexedHeadLog());
  if (auto found = log->entries.find(id); found != log->entries.end()) {
    std::vector<LaneRows> rows;
    for (auto entry = found->second.rbegin(); entry != found->second.rend(); ++entry) {
      std::optional<LastValue> log_last;
      rows.clear();
      if (!DecodeHeadRecord(entry->bytes, &rows, &log_last, entry->t_base).ok()) {
        return absl::DataLossError(
            absl::StrFormat("the head log's entry of series %d is damaged", id));
      }
      if (!log_last) continue;
      if (!last || log_last->t_ms >= last->t_ms) last = log_last;
      break;
    }
  }
  return last;
}

absl::StatusOr<const ReadView::HeadLog*> ReadView::IndexedHeadLog() const {
  if (head_log_) return head_log_.get();
  auto log = std::make_shared<HeadLog>();
  TW_RETURN_IF_ERROR(Range(kv::Cf::kHead, headkeys::LogPrefix(), headkeys::LogEnd(),
                           [&](std::string_view, std::string_view value) {
                             const std::string& record = log->records.emplace_back(value);
                             return ForEachHeadLogEntry(
                                 record, [&](uint64_t id, std::string_view entry, int64_t base) {
                                   log->entries[id].push_back({entry, base});
                                 });
                           }));
  head_log_ = std::move(log);
  return head_log_.get();
}

absl::Status ReadView::ScanHeadRows(SeriesId id, int64_t start_ms, int64_t end_ms,
                                    const std::function<void(uint8_t, const Row&)>& fn) const {
  auto visit = [&](const std::vector<LaneRows>& lanes) {
    for (const LaneRows& l : lanes) {
      for (const Row& r : l.rows) {
        if (r.t_ms >= start_ms && r.t_ms < end_ms) fn(l.lane, r);
      }
    }
  };
  std::vector<LaneRows> lanes;
  TW_RETURN_IF_ERROR(Range(kv::Cf::kHead, headkeys::SeriesPrefix(id), headkeys::SeriesEnd(id),
                           [&](std::string_view, std::string_view value) {
                             lanes.clear();
                             TW_RETURN_IF_ERROR(DecodeHeadRecord(value, &lanes));
                             visit(lanes);
                             return absl::OkStatus();
                           }));
  TW_ASSIGN_OR_RETURN(const HeadLog* log, IndexedHeadLog());
  if (auto found = log->entries.find(id); found != log->entries.end()) {
    for (const HeadLog::Entry& entry : found->second) {
      lanes.clear();
      if (!DecodeHeadRecord(entry.bytes, &lanes, nullptr, entry.t_base).ok()) {
        return absl::DataLossError(
            absl::StrFormat("the head log's entry of series %d is damaged", id));
      }
      visit(lanes);
    }
  }
  return absl::OkStatus();
}

template <typename Fn>
absl::Status ReadView::ScanChunkRows(SeriesId id, int64_t start_ms, int64_t end_ms,
                                     Fn fn) const {
  if (end_ms <= start_ms) return absl::OkStatus();
  const int64_t lower_t =
      start_ms > INT64_MIN + kMaxChunkSpanMs ? start_ms - kMaxChunkSpanMs : INT64_MIN;
  return Range(
      kv::Cf::kRaw, rawkeys::Key(id, lower_t, 0), rawkeys::Key(id, end_ms, 0),
      [&](std::string_view key, std::string_view value) -> absl::Status {
        uint64_t sid;
        int64_t first;
        RawChunkHeader header;
        if (!rawkeys::DecodeKey(key, &sid, &first) || !DecodeRawHeader(value, &header)) {
          return absl::DataLossError(absl::StrFormat("a raw chunk of series %d is damaged", id));
        }
        if (first + header.span_ms < start_ms) return absl::OkStatus();
        TW_ASSIGN_OR_RETURN(RawChunkReader reader, RawChunkReader::Open(value));
        const int places = reader.value_places();
        Row row;
        while (reader.Next(&row)) {
          if (row.t_ms >= end_ms) break;
          if (row.t_ms >= start_ms) fn(header.lane, row, places);
        }
        return reader.status();
      });
}

absl::Status ReadView::ScanRows(SeriesId id, int64_t start_ms, int64_t end_ms,
                                const std::function<void(uint8_t, const Row&)>& fn) const {
  TW_RETURN_IF_ERROR(ScanChunkRows(id, start_ms, end_ms,
                                   [&](uint8_t lane, const Row& row, int) { fn(lane, row); }));
  return ScanHeadRows(id, start_ms, end_ms, fn);
}

absl::Status ReadView::ScanRollupBuckets(
    SeriesId id, Tier tier, int64_t start_ms, int64_t end_ms, uint8_t columns,
    const std::function<void(int64_t, const Aggregate&)>& fn) const {
  if (tier == Tier::kRaw) return absl::InvalidArgumentError("the raw tier has no rollup buckets");
  if (end_ms <= start_ms) return absl::OkStatus();
  const int64_t window = kTierWindowMs[static_cast<int>(tier)];
  std::vector<RollupBucket> record;
  return Range(TierCf(tier), rollupkeys::Key(id, AlignDown(start_ms, window), 0),
               rollupkeys::Key(id, end_ms, 0), [&](std::string_view, std::string_view value) {
                 record.clear();
                 TW_RETURN_IF_ERROR(DecodeRollupRecord(value, false, &record, columns));
                 for (const RollupBucket& b : record) {
                   if (b.t_ms >= start_ms && b.t_ms < end_ms) fn(b.t_ms, b.agg);
                 }
                 return absl::OkStatus();
               });
}

absl::Status ReadView::AggregateSeries(SeriesId id, const AggregateRequest& req,
                                       std::vector<Aggregate>* buckets) const {
  if (req.period_ms <= 0) return absl::InvalidArgumentError("aggregation period must be > 0");
  const int64_t n = static_cast<int64_t>(buckets->size());
  // Tier buckets bring sketches: rows added to them must be sketched too.
  const Distribution distribution =
      req.source != Tier::kRaw && req.distribution == Distribution::kExact ? Distribution::kSketch
                                                                           : req.distribution;
  auto add_chunk_row = [&](uint8_t lane, const Row& row, int value_places) {
    if (req.high_resolution_only && LaneIsStandardResolution(lane)) return;
    int64_t k = BucketIndex(row.t_ms, req.origin_ms, req.period_ms);
    if (k < 0 || k >= n) return;
    (*buckets)[k].AddRow(lane, row, distribution, value_places);
  };
  auto add_row = [&](uint8_t lane, const Row& row) { add_chunk_row(lane, row, -1); };
  if (req.source == Tier::kRaw) {
    TW_RETURN_IF_ERROR(ScanChunkRows(id, req.start_ms, req.end_ms, add_chunk_row));
    return ScanHeadRows(id, req.start_ms, req.end_ms, add_row);
  }

  const int64_t window = kTierWindowMs[static_cast<int>(req.source)];
  std::vector<RollupBucket> record;
  // Sketches are not kept decoded: queries for percentiles decode them.
  RollupRecordCache* cache = req.distribution == Distribution::kNone ? rollup_cache_ : nullptr;
  TW_RETURN_IF_ERROR(Range(
      TierCf(req.source), rollupkeys::Key(id, AlignDown(req.start_ms, window), 0),
      rollupkeys::Key(id, req.end_ms, 0), [&](std::string_view key, std::string_view value) {
        if (cache != nullptr) {
          TW_ASSIGN_OR_RETURN(std::shared_ptr<const RollupRecordCache::Buckets> stored,
                              cache->Get(req.source, key, value, req.columns));
          for (const StoredBucket& b : *stored) {
            if (b.t_ms < req.start_ms || b.t_ms >= req.end_ms) continue;
            int64_t k = BucketIndex(b.t_ms, req.origin_ms, req.period_ms);
            if (k < 0 || k >= n) continue;
            MergeStoredBucket(b, &(*buckets)[k]);
          }
          return absl::OkStatus();
        }
        record.clear();
        TW_RETURN_IF_ERROR(DecodeRollupRecord(value, req.distribution != Distribution::kNone,
                                              &record, req.columns));
        for (const RollupBucket& b : record) {
          if (b.t_ms < req.start_ms || b.t_ms >= req.end_ms) continue;
          int64_t k = BucketIndex(b.t_ms, req.origin_ms, req.period_ms);
          if (k < 0 || k >= n) continue;
          (*buckets)[k].Merge(b.agg);
        }
        return absl::OkStatus();
      }));
  return ScanHeadRows(id, req.start_ms, req.end_ms, add_row);
}

}  // namespace trainwatch::store
