#include "store/bulk_loader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::store {

absl::StatusOr<std::unique_ptr<BulkLoader>> BulkLoader::Create(Db* db, BulkLoadOptions options) {
  if (!db->writable()) {
    return absl::FailedPreconditionError("bulk loading needs the data folder's writer");
  }
  auto loader = std::unique_ptr<BulkLoader>(new BulkLoader(db, options));
  int threads = options.seal_threads;
  if (threads == 0) {
    threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                         kMaxAutoSealThreads);
  }
  if (threads > 0) {
    loader->tasks_ = std::make_unique<util::BoundedQueue<SealTask>>(static_cast<size_t>(threads) * 2);
    for (int i = 0; i < threads; ++i) {
      loader->sealers_.emplace_back([p = loader.get()] { p->SealerLoop(); });
    }
  }
  return loader;
}

BulkLoader::~BulkLoader() { (void)StopSealers(); }

void BulkLoader::SealerLoop() {
  kv::WriteBatch batch;
  absl::Status status;
  while (true) {
    std::optional<SealTask> task = tasks_->PopFor(std::chrono::milliseconds(100));
    if (!task) {
      if (tasks_->closed() && tasks_->size() == 0) break;
      continue;
    }
    if (!status.ok()) continue;  // drain after an error
    uint64_t seq = task->first_seq;
    const uint64_t end = seq + kSeqsPerSeal;
    SealChunks(task->id, task->retention, &task->head,
               [&] {
                 TW_CHECK(seq < end);  // a seal writes far fewer records
                 return seq++;
               },
               &batch);
    if (batch.ApproximateBytes() >= options_.batch_bytes) {
      status = db_->WriteUnlogged(&batch);
      batch.Clear();
    }
  }
  if (status.ok() && batch.Count() > 0) status = db_->WriteUnlogged(&batch);
  if (!status.ok()) {
    util::MutexLock lock(seal_mu_);
    if (seal_error_.ok()) seal_error_ = status;
  }
}

absl::Status BulkLoader::StopSealers() {
  if (tasks_) tasks_->Close();
  for (auto& t : sealers_) t.join();
  sealers_.clear();
  util::MutexLock lock(seal_mu_);
  return seal_error_;
}

absl::Status BulkLoader::EnsureSeqs() {
  // Reserved in blocks through the Db so keys never collide with its own. A
  // seal uses at most 2 chunks per lane plus a few rollup windows per tier.
  if (seq_end_ - seq_next_ >= kSeqsPerSeal) return absl::OkStatus();
  constexpr uint64_t kBlock = 1 << 16;
  TW_ASSIGN_OR_RETURN(uint64_t first, db_->ReserveSeqs(kBlock));
  seq_next_ = first;
  seq_end_ = first + kBlock;
  return absl::OkStatus();
}

uint64_t BulkLoader::NextSeq() {
  TW_CHECK(seq_next_ < seq_end_);  // EnsureSeqs() ran before the seal
  return seq_next_++;
}

absl::StatusOr<BulkLoader::Series*> BulkLoader::Lookup(const model::SeriesKey& key) {
  std::string canonical = key.Canonical();
  auto it = series_.find(canonical);
  if (it != series_.end()) return it->second.get();
  TW_ASSIGN_OR_RETURN(SeriesId id, db_->ResolveSeries(key));
  auto s = std::make_unique<Series>();
  s->id = id;
  s->retention = db_->RetentionOf(key.ns);
  Series* raw = s.get();
  series_.emplace(std::move(canonical), std::move(s));
  return raw;
}

absl::Status BulkLoader::SealSeries(Series* s) {
  if (s->head.empty()) return absl::OkStatus();
  open_rows_ -= std::min(open_rows_, s->head.rows());
  TW_RETURN_IF_ERROR(EnsureSeqs());
  if (tasks_) {
    // Encoding and writing happen on a sealer thread.
    SealTask task;
    task.id = s->id;
    task.retention = s->retention;
    task.head = std::move(s->head);
    s->head = SeriesHead();
    task.first_seq = seq_next_;
    seq_next_ += kSeqsPerSeal;
    if (!tasks_->Push(std::move(task))) return absl::InternalError("the sealers stopped");
    return absl::OkStatus();
  }
  SealChunks(s->id, s->retention, &s->head, [this] { return NextSeq(); }, &batch_);
  return MaybeWrite(false);
}

absl::Status BulkLoader::MaybeWrite(bool force) {
  if (batch_.Count() == 0) return absl::OkStatus();
  if (!force && batch_.ApproximateBytes() < options_.batch_bytes) return absl::OkStatus();
  TW_RETURN_IF_ERROR(db_->WriteUnlogged(&batch_));
  batch_.Clear();
  return absl::OkStatus();
}

absl::Status BulkLoader::Add(const model::SeriesKey& key, const std::vector<int64_t>& t_ms,
                             const std::vector<double>& values) {
  if (finished_) return absl::FailedPreconditionError("BulkLoader::Add after Finish");
  if (t_ms.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "series %s: %d timestamps but %d values", key.ToString(), t_ms.size(), values.size()));
  }
  if (t_ms.empty()) return absl::OkStatus();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "series %s, sample at %s (t_ms=%d): value %g is not a finite number", key.ToString(),
          util::FormatIso8601Ms(t_ms[i]), t_ms[i], values[i]));
    }
  }
  TW_ASSIGN_OR_RETURN(Series * s, Lookup(key));
  const uint8_t lane = MakeLane(SampleKind::kPlain, false);
  auto append = [&](const Row& r) -> absl::Status {
    if (!s->head.TryAppend(lane, r, options_.chunks)) {
      TW_RETURN_IF_ERROR(SealSeries(s));
      const bool appended = s->head.TryAppend(lane, r, options_.chunks);
      TW_CHECK(appended);  // an empty head takes any row
    }
    ++open_rows_;
    return absl::OkStatus();
  };
  const bool sorted = std::is_sorted(t_ms.begin(), t_ms.end());
  Row row;
  if (sorted) {  // the usual case: no copy
    for (size_t i = 0; i < t_ms.size(); ++i) {
      row.t_ms = t_ms[i];
      row.c[0] = values[i];
      TW_RETURN_IF_ERROR(append(row));
    }
    row.t_ms = t_ms.back();
    row.c[0] = values.back();
  } else {
    rows_.resize(t_ms.size());
    for (size_t i = 0; i < t_ms.size(); ++i) {
      rows_[i].t_ms = t_ms[i];
      rows_[i].c[0] = values[i];
    }
    std::stable_sort(rows_.begin(), rows_.end(),
                     [](const Row& a, const Row& b) { return a.t_ms < b.t_ms; });
    for (const Row& r : rows_) TW_RETURN_IF_ERROR(append(r));
    row = rows_.back();
  }
  s->last_add = ++adds_;
  TW_RETURN_IF_ERROR(BoundOpenChunks());
  if (!s->has_last || row.t_ms >= s->last.t_ms) {
    s->has_last = true;
    s->last = {row.t_ms, row.c[0]};
  }
  samples_ += t_ms.size();
  return absl::OkStatus();
}

absl::Status BulkLoader::BoundOpenChunks() {
  constexpr size_t kBytesPerRow = 2 * sizeof(int64_t);  // t and value, unencoded
  if (open_rows_ * kBytesPerRow <= options_.max_open_bytes) return absl::OkStatus();
  std::vector<std::pair<uint64_t, Series*>> lru;
  for (auto& [canonical, s] : series_) {
    if (!s->head.empty()) lru.emplace_back(s->last_add, s.get());
  }
  std::sort(lru.begin(), lru.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [tick, s] : lru) {
    if (open_rows_ * kBytesPerRow <= options_.max_open_bytes / 4 * 3) break;
    TW_RETURN_IF_ERROR(SealSeries(s));
  }
  return absl::OkStatus();
}

absl::Status BulkLoader::Finish() {
  if (finished_) return absl::OkStatus();
  std::vector<std::pair<SeriesId, LastValue>> last;
  for (auto& [canonical, s] : series_) {
    TW_RETURN_IF_ERROR(SealSeries(s.get()));
    if (s->has_last) last.emplace_back(s->id, s->last);
  }
  TW_RETURN_IF_ERROR(StopSealers());
  TW_RETURN_IF_ERROR(MaybeWrite(true));
  TW_RETURN_IF_ERROR(db_->UpdateLastValues(last));
  TW_RETURN_IF_ERROR(db_->Flush());
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace trainwatch::store
