#pragma once
// FakeBackend: an in-memory implementation of every api backend (samples,
// metric queries, logs, training jobs) for tests and the test server. It
// follows the backend contracts (spec §4.2 rounding and tiers, exact
// nearest-rank percentiles, log positions, job statuses) simply and
// slowly; it is not a store. Thread-safe.


#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/backend.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::api::testing {

class FakeBackend final : public model::SampleSink,
                          public MetricsReader,
                          public LogsReader,
                          public LogsWriter,
                          public JobsBackend {
 public:
  // `clock` (for ingestion times and job transitions) must outlive the fake.
  explicit FakeBackend(const util::Clock& clock) : clock_(clock) {}

  Backends backends() {
    return Backends{.samples = this, .metrics = this, .logs = this, .log_writer = this,
                    .jobs = this};
  }

  // Test hooks.
  // Put fails with `status` for any batch holding a metric named `metric`.
  void RejectMetric(const std::string& metric, absl::Status status);
  // Inserts or replaces a job record as is.
  void SetJob(const model::JobRecord& job);
  // Puts one series' samples (a canonical key from these parts); the status
  // of Put.
  absl::Status PutSeries(const std::string& ns, const std::string& metric,
                         std::vector<model::Dimension> dims, std::vector<model::Sample> samples,
                         const std::string& unit = "None");
  // Every sample stored so far for the series, as (t_ms, value, count).
  struct Observation {
    int64_t t_ms;
    double value;
    double count;
    bool operator==(const Observation&) const = default;
  };
  std::vector<Observation> ObservationsForTest(const model::SeriesKey& key) const;
  size_t PutCallsForTest() const;

  // model::SampleSink
  absl::Status Put(const model::SampleBatch& batch) override;

  // MetricsReader
  absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(const StatisticsQuery& query) override;
  absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& query) override;
  absl::StatusOr<std::optional<query::LastSample>> LastValue(const model::SeriesKey& key) override;
  absl::StatusOr<std::vector<query::SeriesInfo>> ListSeries(const ListMetricsQuery& query) override;
  // Every point from the raw tier (the fake keeps everything), through
  // query::M4; x=step from the job's step series as stored.
  absl::StatusOr<query::ChartAnswer> Chart(const query::ChartQuery& query) override;
  absl::StatusOr<std::vector<query::RawSeries>> ReadRaw(const ListMetricsQuery& query,
                                                        int64_t start_ms, int64_t end_ms,
                                                        const SeriesFilter& want) override;

  // LogsReader, LogsWriter
  absl::Status CreateLogGroup(const std::string& group, int64_t now_ms) override;
  absl::Status CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) override;
  absl::StatusOr<std::vector<LogGroupInfo>> ListLogGroups(const std::string& prefix) override;
  absl::StatusOr<std::optional<int>> LogGroupRetention(const std::string& group) override;
  absl::Status DeleteLogGroup(const std::string& group) override;
  absl::Status DeleteLogStream(const model::LogStreamId& stream) override;
  absl::Status PutRetentionPolicy(const std::string& group, std::optional<int> days) override;
  absl::StatusOr<std::vector<LogStreamInfo>> ListLogStreams(const std::string& group,
                                                            const std::string& prefix) override;
  absl::StatusOr<std::string> PutLogEvents(const model::LogBatch& batch, int64_t now_ms) override;
  absl::StatusOr<std::vector<StoredLogEvent>> ReadLogStream(const LogReadQuery& query) override;
  absl::StatusOr<LogFilterPage> FilterLogEvents(const LogFilterQuery& query) override;

  // JobsBackend
  absl::StatusOr<model::JobRecord> CreateTrainingJob(const TrainingJobSpec& spec) override;
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) override;
  absl::StatusOr<std::vector<model::JobRecord>> ListJobs() override;
  absl::Status StopJob(const std::string& name) override;

 private:
  struct Point {
    int64_t t_ms;
    double count;
    double sum;
    double min;
    double max;
    bool exact;  // a value (or identical values): usable for percentiles
    int resolution_s;
  };
  struct Series {
    std::vector<Point> points;
  };
  struct Stream {
    int64_t creation_ms = 0;
    std::vector<StoredLogEvent> events;  // sorted by position
  };
  struct Group {
    int64_t creation_ms = 0;
    std::optional<int> retention_days;
    int64_t next_seq = 1;
    std::map<std::string, Stream> streams;
  };

  const util::Clock& clock_;
  mutable util::Mutex mu_;
  std::map<model::SeriesKey, Series> series_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> rejected_metrics_ ABSL_GUARDED_BY(mu_);
  size_t put_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Group> groups_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, model::JobRecord> jobs_ ABSL_GUARDED_BY(mu_);  // by lower-cased name
};

}  // namespace trainwatch::api::testing
