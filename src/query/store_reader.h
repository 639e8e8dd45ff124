#pragma once
// StoreReader: the readers of query/reader.h over the embedded store. The
// one place where a read of metrics, logs or jobs meets store::ReadView;
// everything that answers a user (api/, cli/, and what comes: rules, the
// dashboard, the report) reads through it.
//
// Each call takes a fresh read view (a consistent state of the store);
// Snapshot() gives a reader whose calls all see one view, for the many
// queries of one request; Pinned() one for every kind of read. Thread-safe (store::Db is).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "query/reader.h"

namespace trainwatch::store {
class Db;
class ReadView;
}

namespace trainwatch::query {

class StoreReader final : public MetricsReader,
                          public LogsReader,
                          public JobsReader,
                          public AlarmsReader {
 public:
  // `db` must outlive the reader.
  explicit StoreReader(store::Db& db) : db_(db) {}
  ~StoreReader() override;

  // A reader whose every read sees the state of the store as it is now
  // (metrics, logs and jobs alike), for work that must read one state
  // across many calls (the archive's pass). Use it on one thread, and drop
  // it soon: it keeps what it sees from being compacted away.
  absl::StatusOr<std::unique_ptr<StoreReader>> Pinned();

  // ---- MetricsReader
  // Through GetMetricStatistics (tier choice, rounding, percentiles); a
  // query over more than kMaxStatisticsDatapoints periods with one
  // statistic goes through GetMetricData (its units aggregated together).
  absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(const StatisticsQuery& query) override;
  // A reader over one read view of the store.
  absl::StatusOr<std::unique_ptr<MetricsReader>> Snapshot() override;
  // Series of the namespace (and metric) from the index, filtered, without
  // units, in MetricId order. O(series in the namespace) a page.
  absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& query) override;
  absl::StatusOr<std::vector<RawSeries>> ReadRaw(const ListMetricsQuery& query, int64_t start_ms,
                                                 int64_t end_ms, const SeriesFilter& want) override;
  absl::StatusOr<std::vector<StoredSeries>> ReadStored(const ListMetricsQuery& query,
                                                       int64_t start_ms, int64_t end_ms) override;
  // Like ListMetrics, each unit apart, with the series' last-value records.
  absl::StatusOr<std::vector<SeriesInfo>> ListSeries(const ListMetricsQuery& query) override;
  // query/chart.h: one pass over the chunks, rollup periods, head rows and
  // (x=step) step samples of the range.
  absl::StatusOr<ChartAnswer> Chart(const ChartQuery& query) override;
  // In O(1): the series' last-value record.
  absl::StatusOr<std::optional<LastSample>> LastValue(const model::SeriesKey& key) override;

  // ---- LogsReader
  absl::StatusOr<std::vector<LogGroupInfo>> ListLogGroups(const std::string& prefix) override;
  absl::StatusOr<std::optional<int>> LogGroupRetention(const std::string& group) override;
  absl::StatusOr<std::vector<LogStreamInfo>> ListLogStreams(const std::string& group,
                                                            const std::string& prefix) override;
  absl::StatusOr<std::vector<StoredLogEvent>> ReadLogStream(const LogReadQuery& query) override;
  // One cursor per stream, merged by position.
  absl::StatusOr<LogFilterPage> FilterLogEvents(const LogFilterQuery& query) override;

  // ---- JobsReader
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) override;
  absl::StatusOr<std::vector<model::JobRecord>> ListJobs() override;

  // ---- AlarmsReader
  absl::StatusOr<std::vector<model::AlarmRecord>> ListAlarms() override;

 private:
  // A fresh view, or (pinned) another view of the pinned state.
  absl::StatusOr<store::ReadView> TakeView();

  store::Db& db_;
  std::unique_ptr<store::ReadView> pinned_;  // null: each call reads a fresh view
};

}  // namespace trainwatch::query
