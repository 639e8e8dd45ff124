// Db's sample write path: checks, series resolution and appends to the head
// (sealing, the head log and replay are in db_head.cc).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/db.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::store {
namespace {

absl::Status BadSample(const model::SeriesKey& key, int64_t t_ms, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("series %s, sample at %s (t_ms=%d): %s",
                                                    key.ToString(), util::FormatIso8601Ms(t_ms),
                                                    t_ms, what));
}

bool Finite(double v) { return std::isfinite(v); }

}  // namespace

absl::Status Db::CheckSamples(const model::SampleBatch& batch) {
  for (const model::SeriesSamples& s : batch.series) {
    const model::SeriesKey& k = s.key;
    if (k.ns.empty() || k.metric.empty() || k.unit.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "series %s: namespace, metric name and unit must not be empty (build keys with "
          "model::MakeSeriesKey)",
          k.ToString()));
    }
    if (k.dimensions.size() > model::kMaxDimensions) {
      return absl::InvalidArgumentError(
          absl::StrFormat("series %s has %d dimensions; at most %d are allowed", k.ToString(),
                          k.dimensions.size(), model::kMaxDimensions));
    }
    for (size_t i = 0; i < k.dimensions.size(); ++i) {
      if (k.dimensions[i].name.empty() || k.dimensions[i].value.empty() ||
          (i > 0 && !(k.dimensions[i - 1].name < k.dimensions[i].name))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "series %s: dimensions must have names and values, sorted by name without "
            "repeats (build keys with model::MakeSeriesKey)",
            k.ToString()));
      }
    }
    if (s.storage_resolution_s != 1 && s.storage_resolution_s != 60) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "series %s: storage resolution %d; want 1 (high resolution) or 60 (standard)",
          k.ToString(), s.storage_resolution_s));
    }
    for (const model::Sample& x : s.samples) {
      if (!Finite(x.value)) {
        return BadSample(k, x.t_ms, absl::StrFormat("value %g is not a finite number", x.value));
      }
    }
    for (const model::WeightedSample& x : s.weighted) {
      if (!Finite(x.value) || !Finite(x.count) || x.count < 0) {
        return BadSample(k, x.t_ms,
                         absl::StrFormat("value %g with count %g: want a finite value and a "
                                         "finite count >= 0",
                                         x.value, x.count));
      }
    }
    for (const model::StatisticSet& x : s.statistic_sets) {
      if (!Finite(x.sample_count) || !Finite(x.sum) || !Finite(x.minimum) || !Finite(x.maximum) ||
          x.sample_count <= 0 || x.minimum > x.maximum) {
        return BadSample(k, x.t_ms,
                         absl::StrFormat("statistic set {SampleCount %g, Sum %g, Minimum %g, "
                                         "Maximum %g}: want finite numbers, SampleCount > 0 and "
                                         "Minimum <= Maximum",
                                         x.sample_count, x.sum, x.minimum, x.maximum));
      }
    }
  }
  return absl::OkStatus();
}

TierRetention Db::RetentionFor(std::string_view ns) {
  std::string key(ns);
  auto it = retention_by_ns_.find(key);
  if (it != retention_by_ns_.end()) return it->second;
  TierRetention r = retention()->For(ns);
  retention_by_ns_.emplace(std::move(key), r);
  return r;
}

void Db::PrefetchHead(const HeadEntry* entry) {
  if (entry == nullptr) return;
  // An append reads and writes the first lane's state and its main chunk's
  // builder, at the start of the entry, and the entry's last value and flags.
  const char* p = reinterpret_cast<const char*>(entry);
  for (size_t at = 0; at < std::min<size_t>(sizeof(SeriesHead), 256); at += 64) {
    __builtin_prefetch(p + at, 1);
  }
  __builtin_prefetch(&entry->last, 1);
}

Db::HeadEntry* Db::HeadFor(SeriesId id, std::string_view ns) {
  auto it = heads_.find(id);
  if (it != heads_.end()) return it->second.get();
  auto entry = std::make_unique<HeadEntry>();
  entry->retention = RetentionFor(ns);
  entry->ns.assign(ns);
  HeadEntry* raw = entry.get();
  heads_.emplace(id, std::move(entry));
  return raw;
}

void Db::AppendRows(SeriesId id, HeadEntry* entry, std::vector<LaneRows>* lanes,
                    kv::WriteBatch* batch, int64_t now_ms) {
  // The rows appended since the last seal in this call: they go into this
  // write's head record.
  std::vector<LaneRows>& open = appended_lanes_;
  open.resize(lanes->size());
  for (size_t i = 0; i < lanes->size(); ++i) {
    open[i].lane = (*lanes)[i].lane;
    open[i].rows.clear();
  }
  for (size_t i = 0; i < lanes->size(); ++i) {
    const uint8_t lane = (*lanes)[i].lane;
    for (const Row& row : (*lanes)[i].rows) {
      if (!entry->head.TryAppend(lane, row, options_.head)) {
        // Off the commit path, this call's rows so far go to the sealed
        // head's records: Seal checkpoints listed series before it detaches.
        if (async_seal_) ListUnckpt(id, entry);
        Seal(id, entry, batch);
        for (LaneRows& o : open) o.rows.clear();
        const bool appended = entry->head.TryAppend(lane, row, options_.head);
        TW_CHECK(appended);  // an empty head takes any row
      }
      if (entry->head.opened_ms == 0) entry->head.opened_ms = now_ms;
      open[i].rows.push_back(row);
    }
  }
  entry->head.last_append_ms = now_ms;
  bool any = false;
  for (const LaneRows& o : open) any = any || !o.rows.empty();
  if (!any) return;
  AppendHeadLogEntry(id, open, entry->last.t_ms == INT64_MIN ? nullptr : &entry->last,
                     &head_log_record_);
  ListUnckpt(id, entry);
}

const std::vector<std::string>* Db::CanonicalKeys(const model::SampleBatch& samples,
                                                  std::vector<std::string>* made) {
  if (samples.canonical_keys.size() == samples.series.size()) {
#ifndef NDEBUG
    // A wrong one would file the samples (and, for a new series, its index
    // records) under another series. The producers build each from its key
    // (their fuzzers check the pairs); release builds trust them: checking
    // every series of every write was 5% of remote-write ingest.
    for (size_t i = 0; i < samples.series.size(); ++i) {
      TW_CHECK(samples.series[i].key.HasCanonical(samples.canonical_keys[i]));
    }
#endif
    return &samples.canonical_keys;
  }
  made->clear();
  made->reserve(samples.series.size());
  for (const model::SeriesSamples& s : samples.series) made->push_back(s.key.Canonical());
  return made;
}

// With thousands of series in a write, each series' registry entry, head and
// next row's memory are cache misses of their own, which depend on each
// other only within a series: looking every series up first, with the
// lookups kPrefetchAhead series ahead prefetched, and then prefetching each
// head and its next row's place ahead of its append, overlaps them.
void Db::ResolveBatch(const model::SampleBatch& samples,
                      const std::vector<std::string>& canonical_keys, kv::WriteBatch* batch,
                      std::vector<ResolvedSeries>* out) {
  const size_t count = samples.series.size();
  std::vector<ResolvedSeries>& resolved = *out;
  resolved.assign(count, ResolvedSeries{});
  size_t created_up_to = 0;  // entries looked up before the last creation may have moved
  for (size_t i = 0; i < std::min(kPrefetchAhead, count); ++i) {
    registry_->Prefetch(canonical_keys[i]);
  }
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) registry_->Prefetch(canonical_keys[i + kPrefetchAhead]);
    const model::SeriesSamples& s = samples.series[i];
    if (s.size() == 0) continue;
    bool created = false;
    SeriesRegistry::Entry* entry = registry_->Resolve(s.key, canonical_keys[i], batch, &created);
    if (created) {
      created_up_to = i;
      TierRetention r = RetentionFor(s.key.ns);
      util::MutexLock lock(drop_mu_);
      retention_by_id_[entry->id] = r;
    }
    resolved[i].entry = entry;
    resolved[i].id = entry->id;
  }
  // A series created above may have moved the entries looked up before it.
  for (size_t i = 0; i < created_up_to; ++i) {
    if (resolved[i].entry != nullptr) resolved[i].entry = registry_->Find(canonical_keys[i]);
  }
  auto prefetch_head_slot = [&](size_t i) {
    if (resolved[i].entry != nullptr) heads_.prefetch(resolved[i].id);
  };
  for (size_t i = 0; i < std::min(kPrefetchAhead, count); ++i) prefetch_head_slot(i);
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) prefetch_head_slot(i + kPrefetchAhead);
    if (resolved[i].entry != nullptr) {
      resolved[i].head = HeadFor(resolved[i].id, samples.series[i].key.ns);
    }
  }
}

absl::Status Db::PrepareSamples(const model::SampleBatch& samples,
                                const std::vector<std::string>& canonical_keys,
                                kv::WriteBatch* batch, int64_t now_ms) {
  TW_CHECK(canonical_keys.size() == samples.series.size());
  const size_t count = samples.series.size();
  std::vector<ResolvedSeries>& resolved = resolved_scratch_;
  ResolveBatch(samples, canonical_keys, batch, &resolved);
  // Two steps ahead (see ResolveBatch): a head, then, once it is in the
  // cache, where its next row goes.
  for (size_t i = 0; i < std::min(kPrefetchAhead, count); ++i) PrefetchHead(resolved[i].head);
  for (size_t i = 0; i < std::min(kPrefetchAhead / 2, count); ++i) {
    if (resolved[i].head != nullptr) resolved[i].head->head.PrefetchNextAppend();
  }
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) PrefetchHead(resolved[i + kPrefetchAhead].head);
    if (i + kPrefetchAhead / 2 < count && resolved[i + kPrefetchAhead / 2].head != nullptr) {
      resolved[i + kPrefetchAhead / 2].head->head.PrefetchNextAppend();
    }
    const model::SeriesSamples& s = samples.series[i];
    if (s.size() == 0) continue;
    SeriesRegistry::Entry* entry = resolved[i].entry;
    const SeriesId id = entry->id;
    HeadEntry* head = resolved[i].head;
    const bool standard = s.storage_resolution_s == 60;

    std::vector<LaneRows>& lanes = series_lanes_;
    size_t used = 0;
    auto next_lane = [&](SampleKind kind, size_t rows) -> std::vector<Row>& {
      if (used == lanes.size()) lanes.emplace_back();
      LaneRows& l = lanes[used++];
      l.lane = MakeLane(kind, standard);
      l.rows.clear();
      l.rows.reserve(rows);
      return l.rows;
    };
    if (!s.samples.empty()) {
      std::vector<Row>& rows = next_lane(SampleKind::kPlain, s.samples.size());
      for (const model::Sample& x : s.samples) {
        Row& r = rows.emplace_back();
        r.t_ms = x.t_ms;
        r.c[0] = x.value;
      }
    }
    if (!s.weighted.empty()) {
      std::vector<Row>& rows = next_lane(SampleKind::kWeighted, s.weighted.size());
      for (const model::WeightedSample& x : s.weighted) {
        Row& r = rows.emplace_back();
        r.t_ms = x.t_ms;
        r.c[0] = x.value;
        r.c[1] = x.count;
      }
    }
    if (!s.statistic_sets.empty()) {
      std::vector<Row>& rows = next_lane(SampleKind::kStatSet, s.statistic_sets.size());
      for (const model::StatisticSet& x : s.statistic_sets) {
        Row& r = rows.emplace_back();
        r.t_ms = x.t_ms;
        r.c[0] = x.sample_count;
        r.c[1] = x.sum;
        r.c[2] = x.minimum;
        r.c[3] = x.maximum;
      }
    }
    lanes.resize(used);

    // The newest row is the series' last value (ties: the later one).
    bool have_last = false;
    LastValue last;
    for (LaneRows& l : lanes) {
      auto by_time = [](const Row& a, const Row& b) { return a.t_ms < b.t_ms; };
      // Senders mostly send in time order; stable_sort would allocate anyway.
      if (!std::is_sorted(l.rows.begin(), l.rows.end(), by_time)) {
        std::stable_sort(l.rows.begin(), l.rows.end(), by_time);
      }
      const Row& r = l.rows.back();
      if (!have_last || r.t_ms >= last.t_ms) {
        have_last = true;
        last.t_ms = r.t_ms;
        last.value = LaneKind(l.lane) == SampleKind::kStatSet ? r.c[1] / r.c[0] : r.c[0];
      }
    }
    // No "l" record per write: the head record carries the last value (see
    // head.h); putting both made the index memtable the write path's cost.
    if (have_last && last.t_ms >= entry->last.t_ms) {
      entry->last = last;
      head->last_unindexed = true;
    }
    head->last = entry->last;
    AppendRows(id, head, &lanes, batch, now_ms);
  }
  // A rare series of many rows should not keep its buffers for good.
  constexpr size_t kKeptScratchRows = 4096;
  for (std::vector<LaneRows>* scratch : {&series_lanes_, &appended_lanes_}) {
    for (LaneRows& l : *scratch) {
      if (l.rows.capacity() > kKeptScratchRows) std::vector<Row>().swap(l.rows);
    }
  }
  constexpr size_t kKeptScratchSeries = 4096;
  if (resolved.capacity() > kKeptScratchSeries) std::vector<ResolvedSeries>().swap(resolved);
  return absl::OkStatus();
}

}  // namespace trainwatch::store
