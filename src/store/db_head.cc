// Db's head upkeep: sealing (on and off the commit path, with the sealer
// thread), the head log's checkpoints, the maintenance that bounds the head,
// and head replay after a restart.
#include <pthread.h>

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "store/db.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "util/mutex.h"

namespace trainwatch::store {

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
      util::MutexLock lock(seal_mu_);
      seal_unencoded_bytes_ += job->bytes;
      seal_jobs_.push_back(std::move(job));
    }
    seal_cv_.notify_all();
  }
  entry->head = SeriesHead();
}

bool Db::EncodeOneSealJob() {
  if (seal_taken_ == seal_jobs_.size()) return false;
  SealJob* job = seal_jobs_[seal_taken_].get();  // stays: only encoded jobs leave
  ++seal_taken_;
  ++seal_encoding_;
  seal_mu_.unlock();
  SealedRecords sealed = EncodeSeal(job->retention, job->head);
  job->head.Clear();
  seal_mu_.lock();
  job->sealed = std::move(sealed);
  job->encoded = true;
  --seal_encoding_;
  seal_unencoded_bytes_ -= job->bytes;
  seal_cv_.notify_all();
  return true;
}

void Db::HelpSeal() {
  util::MutexLock lock(seal_mu_);
  while (seal_unencoded_bytes_ > options_.head.max_sealing_bytes && EncodeOneSealJob()) {
  }
}

void Db::CommitSealJobs(bool all, kv::WriteBatch* batch) {
  std::vector<std::unique_ptr<SealJob>> ready;
  {
    util::MutexLock lock(seal_mu_);
    if (all) {
      while (EncodeOneSealJob()) {
      }
      lock.Wait(seal_cv_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(seal_mu_) { return seal_encoding_ == 0; });
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

void Db::SealerLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-store-seal");
  util::MutexLock lock(seal_mu_);
  // Stopping wins over work: the close has written every job it could, and
  // after a failed write the jobs' rows wait in head records for the next
  // writer anyway.
  while (!stop.stop_requested()) {
    if (!EncodeOneSealJob()) {
      lock.Wait(seal_cv_, stop, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(seal_mu_) {
        return seal_taken_ != seal_jobs_.size();  // a job no thread has taken
      });
    }
  }
}

void Db::StopSealer() {
  seal_thread_.request_stop();
  if (seal_thread_.joinable()) seal_thread_.join();
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
