#pragma once
// Ingest: the single write path. Whatever sends data (the job runner in this
// process, the HTTP api for PutMetricData and PutLogEvents, an agent) hands
// it to an Ingest, which validates it with CloudWatch's rules, stores it
// durably in the Db and then passes accepted samples to the subscribers
// (rules, live streams).
//
//   store::Db db = ...;                       // a writer
//   ingest::Ingest ingest(&db);
//   model::TelemetrySink* sink = &ingest;     // what the runner writes to
//   ingest.Subscribe(&live_stream);           // sees every accepted batch
//
// Durability: Put/PutLogs/CreateJob/UpdateJob return once the data is in
// the store's write-ahead log (store/db.h: survives kill -9 at any moment;
// power loss can lose up to DbOptions::wal_sync_interval_ms unless
// sync_writes). Concurrent calls are committed together (group commit), so
// the runner's one-datapoint-per-line writes stay cheap.
//
// Validation (all of a batch or nothing): values finite with |v| <= 2^360;
// timestamps not more than 14 days old nor more than 2 hours ahead of the
// clock (CloudWatch's window; bulk history goes through store::BulkLoader);
// keys canonical (model::MakeSeriesKey) with at most 30 dimensions; statistic
// sets with SampleCount > 0, Minimum <= Maximum; Values/Counts counts finite
// and >= 0. Errors are InvalidArgument naming the series, the sample and
// what is expected.
//
// Log events longer than model::kMaxLogEventBytes are split into several
// events (on UTF-8 character boundaries where possible).
//
// Thread safety: all methods are thread-safe.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "model/sinks.h"
#include "store/db.h"
#include "util/clock.h"
#include "util/mutex.h"
#include "util/prom_text.h"

namespace trainwatch::ingest {

struct IngestOptions {
  // CloudWatch's accepted window relative to now.
  int64_t max_age_ms = 14 * 86'400'000LL;
  int64_t max_ahead_ms = 2 * 3'600'000LL;
  // Clock for that window; default the Db's.
  util::Clock* clock = nullptr;
};

// Checks a batch against the rules above at `now_ms`.
absl::Status ValidateSamples(const model::SampleBatch& batch, int64_t now_ms,
                             const IngestOptions& options = {});

// Splits messages longer than `max_bytes` (UTF-8 aware); other events are
// copied unchanged.
std::vector<model::LogEvent> SplitLongEvents(const std::vector<model::LogEvent>& events,
                                             size_t max_bytes = model::kMaxLogEventBytes);

class Ingest final : public model::TelemetrySink {
 public:
  // `db` must be a writer and outlive the Ingest.
  explicit Ingest(store::Db* db, IngestOptions options = {});

  absl::Status Put(const model::SampleBatch& batch) override;
  absl::Status PutLogs(const model::LogBatch& batch) override;
  absl::Status CreateJob(const model::JobRecord& job) override;
  absl::Status UpdateJob(const model::JobRecord& job) override;
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name) override;
  // store::Db::UpdateJobIfUnchanged; the observers see `job` when it is written.
  absl::Status UpdateJobIfUnchanged(const model::JobRecord& job, const model::JobRecord& as_read);

  // Exactly once, for senders that retry (store::Delivery): true when
  // written now, false when the batch had been delivered before.
  absl::StatusOr<bool> Put(const model::SampleBatch& batch, const store::Delivery& delivery);
  absl::StatusOr<bool> PutLogs(const model::LogBatch& batch, const store::Delivery& delivery);
  absl::StatusOr<bool> CreateJob(const model::JobRecord& job, const store::Delivery& delivery);
  absl::StatusOr<bool> UpdateJob(const model::JobRecord& job, const store::Delivery& delivery);

  // The rule engine's results for one host's record (store::Db::SetRuleStatuses);
  // once stored, passed to the subscribers' OnRuleStatuses.
  absl::Status SetRuleStatuses(const std::string& name, int host_index,
                               const std::vector<model::RuleStatus>& statuses);

  // CloudWatch alarms' records (rules/alarms.h keeps them; store::Db::PutAlarm).
  absl::Status PutAlarm(const model::AlarmRecord& alarm);
  absl::Status DeleteAlarm(const std::string& name);

  // Every sample batch, log batch, job record and rule-status update this Ingest accepts is
  // passed to `observer` after it is durable, in the calling thread (a
  // delivery seen before is not passed again); an observer must be quick and
  // must not call back into this Ingest. `observer` must outlive the Ingest or
  // be unsubscribed.
  void Subscribe(model::IngestObserver* observer);
  void Unsubscribe(model::IngestObserver* observer);

  // Runs `fn` at a point in the order of writes where every sample and log
  // batch stored before it has been passed to the observers and none is
  // stored until `fn` returns: what `fn` reads from the store is exactly
  // what the observers have seen (the archive's pass pins its read of the
  // store and starts watching for late data there; archive/late_journal.h).
  // Writes wait while `fn` runs; keep it short. An observer that wrote back
  // into this Ingest from its callback would wait for ever.
  void AtQuietPoint(const std::function<void()>& fn);

  // What went through, since this Ingest was made (for /metrics).
  struct Stats {
    std::atomic<uint64_t> samples{0};        // stored
    std::atomic<uint64_t> sample_batches{0};  // stored
    std::atomic<uint64_t> sample_batches_rejected{0};  // invalid: nothing stored
    std::atomic<uint64_t> log_events{0};     // stored (after splitting long ones)
    std::atomic<uint64_t> log_batches_rejected{0};
    std::atomic<uint64_t> duplicate_deliveries{0};  // a resent batch, not stored again
    std::atomic<uint64_t> write_errors{0};   // the store refused a write
    util::Histogram write_seconds;           // samples and logs: the store's write
  };
  const Stats& stats() const { return stats_; }

 private:
  absl::StatusOr<bool> PutSamples(const model::SampleBatch& batch, const store::Delivery* delivery);
  absl::StatusOr<bool> PutLogEvents(const model::LogBatch& batch, const store::Delivery* delivery);
  absl::StatusOr<bool> CreateJobRecord(const model::JobRecord& job,
                                       const store::Delivery* delivery);

  // Writes of samples and logs hold a pass from before their store write to
  // after their observers; AtQuietPoint closes the gate and waits for the
  // passes out. Writer-preferring: a closed gate stops new writes at once.
  class WritePass;
  util::Mutex gate_mu_;
  std::condition_variable gate_cv_;
  std::atomic<bool> gate_closed_{false};
  std::atomic<int64_t> writes_in_flight_{0};

  store::Db* db_;
  IngestOptions options_;
  util::Clock* clock_;
  using ObserverList = std::vector<model::IngestObserver*>;
  // The observers now (copy-on-write: writers call out without holding mu_).
  std::shared_ptr<const ObserverList> Observers() const;
  mutable util::Mutex mu_;
  std::shared_ptr<const ObserverList> subscribers_ ABSL_GUARDED_BY(mu_);
  Stats stats_;
};

}  // namespace trainwatch::ingest
