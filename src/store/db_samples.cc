// Db's sample write path: series resolution, head appends, sealing, head
// replay after a restart, and the maintenance that bounds the head.
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/db.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

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

void Db::Seal(SeriesId id, HeadEntry* entry, kv::WriteBatch* batch) {
  // Replay takes every log row as open, so none may be sealed: they move to
  // head records first (with this call's rows so far: AppendRows listed the
  // series), which the range delete then covers for `id`: below the job's
  // boundary, or here.
  if (!unckpt_series_.empty() || head_log_written_) CheckpointHeadLog(batch);
  if (async_seal_) {
    DetachForSeal(id, entry, batch);
  } else {
    if (!entry->head.empty()) {
      SealChunks(
          id, entry->retention, &entry->head, [&] { return chunk_seq_->Next(batch); }, batch);
    }
    batch->DeleteRange(kv::Cf::kHead, headkeys::SeriesPrefix(id), headkeys::SeriesEnd(id));
    entry->head.Clear();
  }
  // The head records that carry the last value go (now, or when the job is
  // written): the "l" record takes it over in this batch.
  if (entry->last_unindexed) {
    batch->Put(kv::Cf::kIndex, indexkeys::Last(id), indexkeys::EncodeLast(entry->last));
    entry->last_unindexed = false;
  }
}

void Db::DetachForSeal(SeriesId id, HeadEntry* entry, kv::WriteBatch* batch) {
  if (!entry->head.empty()) {
    auto job = std::make_unique<SealJob>();
    job->id = id;
    job->boundary = chunk_seq_->Next(batch);  // above every record of the head's rows
    uint64_t& sealed_below = head_sealed_below_[id];
    job->delete_from = sealed_below;
    sealed_below = job->boundary;
    job->retention = entry->retention;
    job->bytes = entry->head.MemoryBytes();
    job->head = std::move(entry->head);
    {
      std::lock_guard<std::mutex> lock(seal_mu_);
      seal_unencoded_bytes_ += job->bytes;
      seal_jobs_.push_back(std::move(job));
    }
    seal_cv_.notify_all();
  }
  entry->head = SeriesHead();
}

bool Db::EncodeOneSealJob(std::unique_lock<std::mutex>& lock) {
  if (seal_taken_ == seal_jobs_.size()) return false;
  SealJob* job = seal_jobs_[seal_taken_].get();  // stays: only encoded jobs leave
  ++seal_taken_;
  ++seal_encoding_;
  lock.unlock();
  SealedRecords sealed = EncodeSeal(job->retention, job->head);
  job->head.Clear();
  lock.lock();
  job->sealed = std::move(sealed);
  job->encoded = true;
  --seal_encoding_;
  seal_unencoded_bytes_ -= job->bytes;
  seal_cv_.notify_all();
  return true;
}

void Db::HelpSeal() {
  std::unique_lock<std::mutex> lock(seal_mu_);
  while (seal_unencoded_bytes_ > options_.head.max_sealing_bytes && EncodeOneSealJob(lock)) {
  }
}

void Db::CommitSealJobs(bool all, kv::WriteBatch* batch) {
  std::vector<std::unique_ptr<SealJob>> ready;
  {
    std::unique_lock<std::mutex> lock(seal_mu_);
    if (all) {
      while (EncodeOneSealJob(lock)) {
      }
      seal_cv_.wait(lock, [this] { return seal_encoding_ == 0; });
    }
    while (!seal_jobs_.empty() && seal_jobs_.front()->encoded) {
      ready.push_back(std::move(seal_jobs_.front()));
      seal_jobs_.pop_front();
      --seal_taken_;
    }
  }
  for (std::unique_ptr<SealJob>& job : ready) {
    PutSealed(
        job->id, std::move(job->sealed), [&] { return chunk_seq_->Next(batch); }, batch);
    batch->DeleteRange(kv::Cf::kHead,
                       job->delete_from == 0 ? headkeys::SeriesPrefix(job->id)
                                             : headkeys::RangeStart(job->id, job->delete_from),
                       headkeys::Key(job->id, job->boundary));
  }
}

void Db::SealerLoop() {
  ::pthread_setname_np(::pthread_self(), "tw-store-seal");
  std::unique_lock<std::mutex> lock(seal_mu_);
  // Stopping wins over work: the close has written every job it could, and
  // after a failed write the jobs' rows wait in head records for the next
  // writer anyway.
  while (!seal_stopping_) {
    if (!EncodeOneSealJob(lock)) seal_cv_.wait(lock);
  }
}

void Db::StopSealer() {
  {
    std::lock_guard<std::mutex> lock(seal_mu_);
    seal_stopping_ = true;
  }
  seal_cv_.notify_all();
  if (seal_thread_.joinable()) seal_thread_.join();
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

void Db::ListUnckpt(SeriesId id, HeadEntry* entry) {
  if (!entry->listed_unckpt) {
    entry->listed_unckpt = true;
    unckpt_series_.push_back(id);
  }
}

void Db::CheckpointHeadLog(kv::WriteBatch* batch) {
  for (SeriesId id : unckpt_series_) {
    auto it = heads_.find(id);
    // A listed series is open: sealing one checkpoints first, and only
    // sealed (empty) heads are dropped.
    TW_CHECK(it != heads_.end());
    HeadEntry* e = it->second.get();
    e->listed_unckpt = false;
    std::string& record = checkpoint_record_;
    record.clear();
    e->head.TakeRowsSinceCheckpoint(&record);
    if (record.empty()) continue;
    if (e->last.t_ms != INT64_MIN) AppendHeadRecordLast(e->last, &record);
    batch->Put(kv::Cf::kHead, headkeys::Key(id, chunk_seq_->Next(batch)), record);
  }
  unckpt_series_.clear();
  if (head_log_written_) {
    // The first checkpoint since the store opened deletes the whole log
    // (records replayed from before included); later ones go on from where
    // the last one ended, as ranges that must not nest (see SealJob).
    if (head_log_deleted_below_ == 0) {
      batch->DeleteRange(kv::Cf::kHead, headkeys::LogPrefix(), headkeys::LogEnd());
    } else {
      batch->DeleteRange(kv::Cf::kHead,
                         headkeys::RangeStart(headkeys::kLogSeries, head_log_deleted_below_),
                         headkeys::LogKey(head_log_last_seq_ + 1));
    }
    head_log_deleted_below_ = head_log_last_seq_ + 1;
    head_log_written_ = false;
  }
  head_log_record_.clear();
  head_log_bytes_ = 0;
}

void Db::FinishHeadLog(kv::WriteBatch* batch) {
  if (head_log_record_.empty()) return;
  head_log_bytes_ += head_log_record_.size();
  if (head_log_bytes_ > options_.head.log_checkpoint_bytes) {
    CheckpointHeadLog(batch);
    return;
  }
  head_log_last_seq_ = chunk_seq_->Next(batch);
  batch->Put(kv::Cf::kHead, headkeys::LogKey(head_log_last_seq_), head_log_record_);
  head_log_written_ = true;
  head_log_record_.clear();
}

absl::StatusOr<const std::vector<std::string>*> Db::CanonicalKeys(const model::SampleBatch& samples,
                                                                  std::vector<std::string>* made) {
  if (samples.canonical_keys.size() == samples.series.size()) {
    // Cheaper than building them, and a wrong one would file the samples
    // (and, for a new series, its index records) under another series.
    for (size_t i = 0; i < samples.series.size(); ++i) {
      if (!samples.series[i].key.HasCanonical(samples.canonical_keys[i])) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "series %s: the batch's canonical key %s is not this series' (canonical_keys "
            "must follow series)",
            samples.series[i].key.ToString(), samples.canonical_keys[i].substr(0, 300)));
      }
    }
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
      std::lock_guard<std::mutex> lock(drop_mu_);
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

void Db::PrepareMaintenance(bool seal_all, kv::WriteBatch* batch, int64_t now_ms) {
  const HeadOptions& o = options_.head;
  // Bounds what readers decode from the log to about a tick's writes.
  if (!unckpt_series_.empty() || head_log_written_) CheckpointHeadLog(batch);
  size_t total = 0;
  std::vector<std::pair<size_t, SeriesId>> sizes;
  for (auto it = heads_.begin(); it != heads_.end();) {
    HeadEntry* e = it->second.get();
    const SeriesId id = it->first;
    if (e->head.empty()) {
      heads_.erase(it++);
      continue;
    }
    if (seal_all || now_ms - e->head.opened_ms >= o.max_open_ms ||
        now_ms - e->head.last_append_ms >= o.idle_ms) {
      Seal(id, e, batch);
      heads_.erase(it++);
      continue;
    }
    const size_t bytes = e->head.MemoryBytes();
    total += bytes;
    sizes.emplace_back(bytes, id);
    ++it;
  }
  if (total > o.max_head_bytes) {
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    for (const auto& [bytes, id] : sizes) {
      if (total <= o.max_head_bytes / 4 * 3) break;
      auto it = heads_.find(id);
      Seal(id, it->second.get(), batch);
      heads_.erase(it);
      total -= bytes;
    }
  }
  head_bytes_ = total;
}

absl::Status Db::ReplayHead() {
  std::map<SeriesId, std::vector<LaneRows>> by_series;
  // The newest record's last value per series (records come in write order,
  // the head log's after every head record).
  std::map<SeriesId, LastValue> head_last;
  {
    kv::ReadOptions ro;
    ro.fill_cache = false;
    auto it = kv_->NewIterator(kv::Cf::kHead, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      uint64_t id, seq;
      if (!headkeys::DecodeKey(it->key(), &id, &seq)) {
        return absl::DataLossError("a head record has a damaged key");
      }
      if (id == headkeys::kLogSeries) {
        // The log sorts last, in write order: its values are the newest.
        head_log_written_ = true;
        TW_RETURN_IF_ERROR(DecodeHeadLogRecord(
            it->value(),
            [&](uint64_t sid, std::vector<LaneRows>&& lanes, std::optional<LastValue> last) {
              std::vector<LaneRows>& rows = by_series[sid];
              for (LaneRows& l : lanes) rows.push_back(std::move(l));
              if (last) head_last[sid] = *last;
            }));
        continue;
      }
      std::optional<LastValue> last;
      TW_RETURN_IF_ERROR(DecodeHeadRecord(it->value(), &by_series[id], &last));
      if (last) head_last[id] = *last;
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  if (by_series.empty() && !head_log_written_) return absl::OkStatus();
  kv::WriteBatch batch;
  const int64_t now_ms = clock_->NowMs();
  for (auto& [id, records] : by_series) {
    TW_ASSIGN_OR_RETURN(std::optional<std::string> key_bytes,
                        kv_->Get(kv::Cf::kIndex, indexkeys::ById(id)));
    model::SeriesKey key;
    if (!key_bytes || !indexkeys::DecodeSeriesKey(*key_bytes, &key)) {
      return absl::DataLossError(
          absl::StrFormat("head records of series %d have no readable index record", id));
    }
    // One list per lane, in time order (the record order is the write order).
    std::vector<LaneRows> lanes;
    for (LaneRows& r : records) {
      auto it = std::find_if(lanes.begin(), lanes.end(),
                             [&](const LaneRows& l) { return l.lane == r.lane; });
      if (it == lanes.end()) {
        lanes.push_back(std::move(r));
      } else {
        it->rows.insert(it->rows.end(), r.rows.begin(), r.rows.end());
      }
    }
    for (LaneRows& l : lanes) {
      std::stable_sort(l.rows.begin(), l.rows.end(),
                       [](const Row& a, const Row& b) { return a.t_ms < b.t_ms; });
    }
    batch.DeleteRange(kv::Cf::kHead, headkeys::SeriesPrefix(id), headkeys::SeriesEnd(id));
    HeadEntry* head = HeadFor(id, key.ns);
    if (SeriesRegistry::Entry* entry = registry_->Find(key.Canonical())) {
      // The registry loaded the "l" record; the head's last value is newer
      // unless the series was bulk-loaded later (ties: the head's is the later
      // write).
      auto found = head_last.find(id);
      if (found != head_last.end() && found->second.t_ms >= entry->last.t_ms) {
        entry->last = found->second;
        head->last_unindexed = true;
      }
      head->last = entry->last;
    }
    AppendRows(id, head, &lanes, &batch, now_ms);
  }
  // One head record per open series; the log is gone.
  CheckpointHeadLog(&batch);
  kv::WriteOptions wo;
  wo.sync = options_.sync_writes;
  return kv_->Write(&batch, wo);
}

}  // namespace trainwatch::store
