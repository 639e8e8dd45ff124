#pragma once
// Reading jobs back from an archive (docs/format/archive.md), and a
// query::MetricsReader that adds them to the data folder's: once a job is
// archived complete, its raw reads (ReadRaw, ReadStored: trainwatch.Trial,
// rule replays, the native API) and its charts come with every sample the
// archive holds, whatever the data folder's retention has dropped since.
//
//   archive::ArchiveReader archived(store.get());
//   archive::ArchiveBackedMetricsReader metrics(&store_reader, &archived);
//   backends.metrics = &metrics;
//
// A job counts as archived once its job.json says complete (a running job's
// data is in the data folder anyway). Samples found in both are given once:
// per series, each (time, value) as many times as the larger side has it.
// Statistics (GetMetricStatistics, GetMetricData) and listings stay the data
// folder's, as CloudWatch answers them from its own retention.

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/object_store.h"
#include "query/reader.h"
#include "util/mutex.h"

namespace trainwatch::archive {

struct ArchivedJob {
  model::JobRecord record;
  bool complete = false;
  std::vector<query::StoredSeries> series;  // in key order, rows in time order
  std::vector<std::string> late;            // the late segments read (CompleteLateSegments)
};

// A job's archived log events: each stream's in time order (then as
// archived). Positions are the archive's own: (time, the event's index in
// its stream minus the stream's count), so they sort as the events do and
// before any the data folder numbers (its sequence numbers are positive).
struct ArchivedLogs {
  std::string job;
  std::map<std::string, std::vector<query::StoredLogEvent>> streams;
  std::vector<std::string> late;  // the late segments read
};

// Thread-safe; keeps the last few complete jobs it read in memory, and
// reads one again when a late segment came for it (looked for at most once
// a minute).
class ArchiveReader {
 public:
  explicit ArchiveReader(model::ObjectStore* store, size_t cached_jobs = 4)
      : store_(store), cached_jobs_(cached_jobs) {}
  // The job as archived; nullptr when the archive has no such job. DataLoss
  // naming the object for a file that is not of this format.
  absl::StatusOr<std::shared_ptr<const ArchivedJob>> Load(const std::string& job);
  // The job's log events (every complete segment's logs.jsonl.gz); an
  // empty set when the archive has no such job. The last job read is kept.
  absl::StatusOr<std::shared_ptr<const ArchivedLogs>> LoadLogs(const std::string& job);
  // Whether the archive holds `job` complete (job.json only; a "no", or an
  // error reading it, is remembered for a minute, a "yes" for good), and
  // then, in `creation_ms` when given, the creation time of the job it holds.
  absl::StatusOr<bool> HoldsComplete(const std::string& job, int64_t* creation_ms = nullptr);
  // Whether reads of `job` should include the archive's: the data folder
  // (`jobs`, may be null) does not know it as running, nor as another job of
  // that name (created at another time), and the archive holds it complete.
  // An error reading the archive is logged once and is a no.
  bool ServesJob(query::JobsReader* jobs, const std::string& job);

 private:
  static constexpr int64_t kLateCheckMs = 60'000;
  struct CachedJob {
    std::shared_ptr<const ArchivedJob> job;
    int64_t checked_ms = 0;  // steady clock: when its late segments were listed
  };
  // Whether the job's complete late segments are still `late` (a List).
  bool LateUnchanged(const std::string& job, const std::vector<std::string>& late);

  model::ObjectStore* const store_;
  const size_t cached_jobs_;
  util::Mutex mu_;
  std::list<CachedJob> cache_ ABSL_GUARDED_BY(mu_);  // newest first
  struct CachedLogs {
    std::shared_ptr<const ArchivedLogs> logs;
    int64_t checked_ms = 0;  // as CachedJob's
  };
  CachedLogs logs_cache_ ABSL_GUARDED_BY(mu_);
  // Jobs found not complete (or unreadable), and when (steady clock, ms);
  // jobs found complete.
  std::map<std::string, int64_t> not_complete_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> complete_ ABSL_GUARDED_BY(mu_);  // job -> its creation_ms
};

class ArchiveBackedMetricsReader final : public query::MetricsReader {
 public:
  // All must outlive this. `jobs` (the data folder's records): a job that
  // has not ended is not looked for in the archive. Errors reading the
  // archive are logged once and the data folder's answer is given.
  ArchiveBackedMetricsReader(query::MetricsReader* local, query::JobsReader* jobs,
                             ArchiveReader* archive)
      : local_(local), jobs_(jobs), archive_(archive) {}

  absl::StatusOr<std::vector<query::StatisticsBucket>> GetStatistics(
      const query::StatisticsQuery& query) override {
    return local_->GetStatistics(query);
  }
  // Statistics read one state of the data folder (GetMetricData).
  absl::StatusOr<std::unique_ptr<query::MetricsReader>> Snapshot() override {
    return local_->Snapshot();
  }
  std::unique_ptr<query::MetricsReader> Fork() override { return local_->Fork(); }
  absl::StatusOr<std::vector<query::MetricId>> ListMetrics(
      const query::ListMetricsQuery& query) override {
    return local_->ListMetrics(query);
  }
  absl::StatusOr<std::optional<query::LastSample>> LastValue(const model::SeriesKey& key) override {
    return local_->LastValue(key);
  }
  absl::StatusOr<std::vector<query::SeriesInfo>> ListSeries(
      const query::ListMetricsQuery& query) override {
    return local_->ListSeries(query);
  }
  absl::StatusOr<query::ChartAnswer> Chart(const query::ChartQuery& query) override;
  absl::StatusOr<std::vector<query::RawSeries>> ReadRaw(const query::ListMetricsQuery& query,
                                                        int64_t start_ms, int64_t end_ms,
                                                        const SeriesFilter& want) override;
  absl::StatusOr<std::vector<query::StoredSeries>> ReadStored(const query::ListMetricsQuery& query,
                                                              int64_t start_ms,
                                                              int64_t end_ms) override;

 private:
  // The archived job a query's dimensions name (TrainingJobName=NAME or
  // Host=NAME/algo-N), when the archive holds it complete; else null.
  std::shared_ptr<const ArchivedJob> ArchivedJobOf(
      const std::vector<model::Dimension>& dimensions);

  query::MetricsReader* const local_;
  query::JobsReader* const jobs_;
  ArchiveReader* const archive_;
};

}  // namespace trainwatch::archive
