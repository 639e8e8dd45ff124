#pragma once
// LiveHub: what the dashboard's live stream (GET /api/v1/live, live_stream.h)
// reads. Subscribed to an ingest (model::IngestObserver), it keeps per job a
// bounded recent history of what ingest accepted: the samples of the job's
// series (dimension TrainingJobName=JOB, or Host=JOB/algo-N), the events of
// its log streams (group /aws/sagemaker/TrainingJobs, stream JOB/...: its
// hosts' output and its "JOB/rules" stream) and a mark for each change of its
// record (created, updated, new rule statuses or findings). Every entry gets
// the next number of one hub-wide sequence, so a reader's position (a
// Cursor) is one number: it reads the entries after it, in order, and
// resumes after the last one it was given, with nothing missed and nothing
// twice, for as long as the history still holds what follows its position.
// When it does not (evicted, or the reader is further behind than it may
// be), the read says reset: the reader refetches through the chart and log
// APIs and goes on from the newest entry.
//
//   LiveHub hub;
//   ingest.Subscribe(&hub);
//   LiveHub::Filter filter{.jobs = {"mnist-7"}};
//   uint64_t waiter = hub.AddWaiter(filter, [] { /* data may be ready */ });
//   LiveHub::Read read = hub.ReadAfter(filter, hub.head(), 64 * 1024, 1 << 20);
//
// Bounds: history_bytes_per_job per job and history_bytes_total in all
// (oldest entries go first), job_changes_held marks for the all-jobs view.
// Observers run on ingest's thread: they copy the job's part of a batch and
// call the waiters' wake functions (which must be quick), nothing else; job
// records are read later by the stream (LiveStream), on the server's thread.
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/sinks.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::api::live {

struct LiveOptions {
  size_t history_bytes_per_job = 8 * 1048576;
  size_t history_bytes_total = 64 * 1048576;
  // Job-change marks kept for readers of every job's changes.
  size_t job_changes_held = 4096;
  // How far (in held bytes) one reader may fall behind before it is reset.
  size_t reader_backlog_bytes = 4 * 1048576;
  // The log events' ingestion time; default the system clock.
  util::Clock* clock = nullptr;
};

// One thing ingest accepted, for one job. Immutable once in the hub.
struct LiveEntry {
  enum class Kind { kSamples, kLogs, kJob };
  uint64_t seq = 0;
  Kind kind = Kind::kSamples;
  std::string job;             // the job's name as the data spells it
  size_t bytes = 0;            // counted size (payload, roughly as rendered)
  model::SampleBatch samples;  // kSamples: only the job's series
  model::LogBatch logs;        // kLogs
  int64_t ingestion_ms = 0;    // kLogs: when the hub saw them
};

// The job a log stream belongs to (group /aws/sagemaker/TrainingJobs, stream
// "JOB/..."), or "".
std::string JobOfLogStream(const model::LogStreamId& stream);

class LiveHub final : public model::IngestObserver {
 public:
  explicit LiveHub(LiveOptions options = {});

  void OnSamples(const model::SampleBatch& batch) override;
  void OnLogs(const model::LogBatch& batch) override;
  void OnJob(const model::JobRecord& job) override;
  void OnRuleStatuses(const std::string& job, int host_index,
                      const std::vector<model::RuleStatus>& statuses) override;

  // What a reader follows: the samples, logs and changes of these jobs
  // (names compare case-insensitively), or, when empty, the changes of every
  // job (and nothing else).
  struct Filter {
    std::vector<std::string> jobs;
  };

  // The hub's identity: cursors of another hub (another process) are unknown here.
  const std::string& epoch() const { return epoch_; }
  // The sequence number of the newest entry (0 before the first).
  uint64_t head() const;

  struct Read {
    // The reader must refetch: `reason` says why; `head` is where it goes on.
    bool reset = false;
    std::string reason;
    uint64_t head = 0;
    // Entries after the position, in sequence order, about max_bytes of
    // them (at least one when there is any).
    std::vector<std::shared_ptr<const LiveEntry>> entries;
    // The position after these entries: the last one's seq, or `head` when
    // nothing of the filter is newer.
    uint64_t next = 0;
  };
  // Entries of `filter` after position `after`. Reset when something after
  // `after` is no longer held, when `after` is newer than head() (a cursor of
  // another hub), or when the entries held after it exceed `backlog_bytes`.
  Read ReadAfter(const Filter& filter, uint64_t after, size_t max_bytes,
                 size_t backlog_bytes) const;

  // `wake` is called (on ingest's thread, with the hub's lock held: it must
  // only note that data is ready, never call into the hub) after each entry
  // `filter` reads, until RemoveWaiter returns.
  uint64_t AddWaiter(const Filter& filter, std::function<void()> wake);
  void RemoveWaiter(uint64_t id);

  // Holds the samples and logs of `job` from now on. The hub holds those of
  // the jobs it has seen a record of (OnJob, OnRuleStatuses) and of the jobs
  // a reader follows or followed; the server names its jobs in progress at
  // start. Other data is nobody's to stream (a new stream starts at the
  // head), and copying all of it was a tenth of a server's ingest CPU.
  void KnowJob(const std::string& job);

  const LiveOptions& options() const { return options_; }
  // Bytes held now (for tests and /metrics).
  size_t HeldBytes() const;
  // Entries the bounds evicted, and reads answered "reset" (a reader that
  // fell behind or asked for what is gone refetches), since the hub was made.
  uint64_t entries_evicted() const { return entries_evicted_.load(std::memory_order_relaxed); }
  uint64_t readers_reset() const { return readers_reset_.load(std::memory_order_relaxed); }

 private:
  struct Held {
    std::shared_ptr<const LiveEntry> entry;
    uint64_t cumulative;  // the job's appended bytes through this entry
  };
  struct JobHistory {
    std::deque<Held> entries;
    size_t bytes = 0;             // held
    uint64_t appended_bytes = 0;  // appended ever
    // The newest seq no longer held (0: nothing evicted).
    uint64_t dropped_through = 0;
  };
  struct JobChange {
    uint64_t seq;
    std::shared_ptr<const LiveEntry> entry;
  };
  struct Waiter {
    std::set<std::string> jobs;  // lower-cased; empty: every job's changes
    std::function<void()> wake;
  };

  void Append(const std::string& key, std::shared_ptr<LiveEntry> entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the oldest entry of jobs_[key]; the history itself once empty.
  void EvictOldest(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkJobChanged(const std::string& job);
  // The jobs whose data is held (lower-cased; see KnowJob). Replaced, never
  // changed, so that ingest reads it without taking mu_.
  std::shared_ptr<const std::set<std::string>> HeldJobs() const;
  void HoldJob(const std::string& lower_job);
  mutable util::Mutex held_jobs_mu_;
  std::shared_ptr<const std::set<std::string>> held_jobs_ ABSL_GUARDED_BY(held_jobs_mu_) =
      std::make_shared<const std::set<std::string>>();

  const LiveOptions options_;
  util::Clock* const clock_;
  const std::string epoch_;
  mutable util::Mutex mu_;
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  size_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, JobHistory> jobs_ ABSL_GUARDED_BY(mu_);  // by lower-cased name
  // Histories evicted whole: their dropped_through, by lower-cased name;
  // past kMaxForgotten names only the highest is remembered (forgotten_floor_).
  std::map<std::string, uint64_t> forgotten_ ABSL_GUARDED_BY(mu_);
  uint64_t forgotten_floor_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<JobChange> changes_ ABSL_GUARDED_BY(mu_);
  uint64_t changes_dropped_through_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_waiter_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<uint64_t> entries_evicted_{0};
  mutable std::atomic<uint64_t> readers_reset_{0};  // ReadAfter is const
  std::map<uint64_t, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainwatch::api::live
