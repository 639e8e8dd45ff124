#pragma once
// The read side of the store, as every reader sees it: the api's CloudWatch,
// Logs, SageMaker and native operations, the CLI's read commands, and (to
// come) rules, the dashboard and the report. query/ is the only reader of
// the store (DESIGN.md "one way out"); these interfaces are what it offers,
// in neutral terms: no wire format, no AWS error shapes (the api maps the
// statuses returned here to each protocol's errors).
//
// StoreReader (query/store_reader.h) implements them over store::Db; tests
// of the wire layer use api/testing/fake_backend.h. Every method may be
// called concurrently from several threads: implementations are thread-safe.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/alarm.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "query/filter_pattern.h"

namespace trainwatch::query {

// A page of log events holds at most kMaxLogPageBytes, counting each event's
// message plus kLogEventOverheadBytes (CloudWatch Logs' rule).
inline constexpr size_t kMaxLogPageBytes = 1'048'576;
using model::kLogEventOverheadBytes;

// ---------------------------------------------------------------- metrics

// A metric as ListMetrics shows it: the series key without its unit.
// Dimensions sorted by name, names unique.
struct MetricId {
  std::string ns;
  std::string metric;
  std::vector<model::Dimension> dimensions;
  friend bool operator==(const MetricId&, const MetricId&) = default;
  friend auto operator<=>(const MetricId&, const MetricId&) = default;
};

// A statistic as CloudWatch spells it (spec/aws-api.md §4.3).
struct Statistic {
  enum class Kind { kSampleCount, kAverage, kSum, kMinimum, kMaximum, kPercentile };
  Kind kind = Kind::kAverage;
  double percentile = 0;  // 0..100 for kPercentile
  std::string name;       // as requested: "Average", "p99", "p99.9"
  friend bool operator==(const Statistic&, const Statistic&) = default;
};

struct StatisticsQuery {
  MetricId metric;                  // exact match of the complete dimension set
  std::optional<std::string> unit;  // only data stored with this unit; all units if absent
  // Without `unit`: every unit's data in one bucket per period (its unit
  // empty when they differ), as GetMetricData answers; else a bucket per unit.
  bool merge_units = false;
  int64_t start_ms = 0;             // inclusive, as requested (not yet rounded)
  int64_t end_ms = 0;               // exclusive
  int64_t period_s = 60;            // 1, 5, 10, 20, 30 or a multiple of 60 (checked by the api)
  int64_t now_ms = 0;               // when the request arrived: decides tier and rounding
  std::vector<Statistic> statistics;
  // Buckets in descending time order (GetMetricData's default scan order).
  bool descending = false;
  // Pagination: only buckets strictly after (ascending) or before
  // (descending) this bucket start.
  std::optional<int64_t> resume_after_ms;
  size_t max_buckets = std::numeric_limits<size_t>::max();
};

// One period of data. Without a unit filter, data stored under several units
// gives one bucket per period and unit (TW rule, spec §4.1), unless the query
// merges units.
struct StatisticsBucket {
  int64_t t_ms = 0;  // bucket start
  std::string unit;
  // One per requested statistic, in request order; nullopt where the value is
  // not defined (a percentile over non-identical statistic sets or negative values).
  // Inline: a GetMetricData answer is thousands of one-statistic buckets.
  absl::InlinedVector<std::optional<double>, 2> values;
  friend bool operator==(const StatisticsBucket&, const StatisticsBucket&) = default;
};

struct DimensionFilter {
  std::string name;
  std::optional<std::string> value;  // any value when absent
};

struct ListMetricsQuery {
  std::optional<std::string> ns;
  std::optional<std::string> metric;
  std::vector<DimensionFilter> dimensions;  // a metric may have further dimensions
  int64_t active_since_ms = 0;              // only metrics with data at or after this time
  std::optional<MetricId> after;            // exclusive, in MetricId order
  size_t limit = 500;
};

// A series' raw samples, in time order (a weighted sample as its value, a
// statistic set as its average).
struct RawSeries {
  model::SeriesKey key;
  std::vector<model::Sample> samples;
};

// A row as it was stored (the archive's, docs/format/archive.md): a plain
// sample (value), a weighted one (value, count) or a statistic set (count,
// sum, minimum, maximum); the others are 0.
struct StoredRow {
  enum class Kind : uint8_t { kPlain, kWeighted, kStatisticSet };
  int64_t t_ms = 0;
  Kind kind = Kind::kPlain;
  bool high_resolution = false;  // StorageResolution 1 (else 60)
  double value = 0;
  double count = 0;
  double sum = 0;
  double minimum = 0;
  double maximum = 0;
  friend bool operator==(const StoredRow&, const StoredRow&) = default;
};

struct StoredSeries {
  model::SeriesKey key;
  std::vector<StoredRow> rows;  // in time order
};

struct LastSample {
  int64_t t_ms = 0;
  double value = 0;
  friend bool operator==(const LastSample&, const LastSample&) = default;
};

// A series (its key includes the unit) and its newest sample.
struct SeriesInfo {
  model::SeriesKey key;
  std::optional<LastSample> last;
  friend bool operator==(const SeriesInfo&, const SeriesInfo&) = default;
};

// ---- chart data: M4 (Jugel et al., VLDB 2014)

inline constexpr int kMaxChartWidth = 4000;

enum class ChartX {
  kTime,  // x is the sample's time (ms)
  kStep,  // x is the job's step current at the sample's time
};

struct ChartQuery {
  MetricId metric;                  // exact match of the complete dimension set
  std::optional<std::string> unit;  // only this unit; every unit merged when absent
  int64_t start_ms = 0;             // inclusive
  int64_t end_ms = 0;               // exclusive
  int width = 800;                  // pixel columns, 1..kMaxChartWidth
  ChartX x = ChartX::kTime;
  // kStep: the job whose step metric (model::JobRecord::step_metric, a
  // series of kTrainingJobsNamespace with the only dimension
  // TrainingJobName=job) numbers the steps.
  std::string job;
};

// The points to draw, so that the line through them in x order covers the
// same pixels as the line through every sample: the range [x_start, x_end)
// is cut into `width` columns (column k holds the x with
// floor((x - x_start) * width / (x_end - x_start)) == k), and each column
// keeps its first and last point in (x, t, value) order and the points of
// its smallest and largest value (the earliest of equal ones), without
// repeating a point. When the range holds at most 4 * width points, every
// point is kept.
//
// Points: a plain or weighted sample is one point (its value); a statistic
// set two, its minimum and maximum (one when equal). Where the range is older
// than the raw tier keeps, the finest rollup tier that still covers it is
// read: each of its periods gives two points, its minimum and maximum, at
// the period's start (at start_ms for a period that begins before it).
//
// kStep: each point's x is the step current at its time t (the value of the
// newest step sample at or before t, truncated to an integer); points before
// the first step are left out. [x_start, x_end) is then [smallest, largest +
// 1) of the steps current at some time of [start_ms, end_ms). The step
// samples are read from the job's creation time on, from the tiers as above
// (a rollup period gives its minimum at its start and its maximum at its
// last millisecond: exact for a step count that only grows).
struct ChartAnswer {
  ChartX x_kind = ChartX::kTime;
  int64_t x_start = 0;  // kTime: start_ms; kStep: the first step
  int64_t x_end = 0;    // exclusive
  double column = 0;    // (x_end - x_start) / width
  // The coarsest tier read: 0 for raw samples, else the rollup period (60,
  // 300, 3600).
  int64_t tier_period_s = 0;
  // Every raw sample of the range is a point (the range holds at most
  // 4 * width points, all from the raw tier).
  bool raw = false;
  // The points in (x, t, value) order.
  std::vector<int64_t> x;
  std::vector<double> y;
  std::vector<int64_t> t;
};

class MetricsReader {
 public:
  virtual ~MetricsReader() = default;
  // Buckets with data only, in time order (then unit), at most max_buckets.
  // Applies spec §4.2: start rounding, tier choice by the age of start_ms
  // (a period the tier cannot serve gives no buckets, not an error), and
  // standard-resolution data only at periods >= 60.
  virtual absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(
      const StatisticsQuery& query) = 0;
  // A reader whose GetStatistics calls all see one state of the data, for the
  // queries of one request (GetMetricData's up to 500); it lives on the
  // calling thread and only as long as the request. Null: use this reader.
  virtual absl::StatusOr<std::unique_ptr<MetricsReader>> Snapshot() { return nullptr; }
  // For a reader that Snapshot() returned: another reader of the same state,
  // for one other thread, valid while this one lives (GetMetricData spreads
  // large requests over threads). Null: not supported.
  virtual std::unique_ptr<MetricsReader> Fork() { return nullptr; }
  // Matching metrics in MetricId order, at most query.limit.
  virtual absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& query) = 0;
  // The newest sample of one series (its key includes the unit): a job's
  // final metric value. nullopt when the series does not exist or is empty.
  virtual absl::StatusOr<std::optional<LastSample>> LastValue(const model::SeriesKey& key) = 0;
  // Every series (each unit apart) of the metrics ListMetrics(query) finds,
  // with its newest sample, in key order, at most query.limit.
  // Unimplemented for a reader that cannot list series.
  virtual absl::StatusOr<std::vector<SeriesInfo>> ListSeries(const ListMetricsQuery& query) {
    (void)query;
    return absl::UnimplementedError("this reader lists no series");
  }
  // The points that draw the query's series (see ChartAnswer). InvalidArgument
  // for a bad query (an empty namespace or metric, start_ms >= end_ms, a width
  // out of range, kStep without a job or for a job without a step metric);
  // NotFound for a kStep query of an unknown job. No data is no error: an
  // answer without points. Unimplemented for a reader that draws no charts.
  virtual absl::StatusOr<ChartAnswer> Chart(const ChartQuery& query) {
    (void)query;
    return absl::UnimplementedError("this reader draws no charts");
  }
  // The raw samples, start_ms <= t < end_ms, of every series (every unit)
  // of the metrics ListMetrics(query) finds, query.limit ignored: what the
  // raw tier still holds (rules replay). When `want` is set, only the series
  // it returns true for are read (the others are not decoded).
  // Unimplemented for a reader that keeps no raw samples.
  using SeriesFilter = std::function<bool(const model::SeriesKey&)>;
  virtual absl::StatusOr<std::vector<RawSeries>> ReadRaw(const ListMetricsQuery& query,
                                                         int64_t start_ms, int64_t end_ms,
                                                         const SeriesFilter& want) {
    (void)query, (void)start_ms, (void)end_ms, (void)want;
    return absl::UnimplementedError("this reader keeps no raw samples");
  }
  // ReadRaw's series with their rows as stored (nothing averaged).
  virtual absl::StatusOr<std::vector<StoredSeries>> ReadStored(const ListMetricsQuery& query,
                                                               int64_t start_ms, int64_t end_ms) {
    (void)query, (void)start_ms, (void)end_ms;
    return absl::UnimplementedError("this reader keeps no raw samples");
  }
};

// ------------------------------------------------------------------- logs

struct LogGroupInfo {
  std::string name;
  int64_t creation_ms = 0;
  std::optional<int> retention_days;
  int64_t stored_bytes = 0;
};

struct LogStreamInfo {
  std::string name;
  int64_t creation_ms = 0;
  std::optional<int64_t> first_event_ms;  // absent while the stream is empty
  std::optional<int64_t> last_event_ms;
  std::optional<int64_t> last_ingestion_ms;
};

// Where an event sits in a group: events are ordered by (t_ms, seq), seq
// being the group's arrival counter (so also by ingestion time).
struct LogPosition {
  int64_t t_ms = 0;
  int64_t seq = 0;
  friend bool operator==(const LogPosition&, const LogPosition&) = default;
  friend auto operator<=>(const LogPosition&, const LogPosition&) = default;
};

struct StoredLogEvent {
  std::string stream;  // stream name (filled by FilterLogEvents)
  LogPosition position;
  int64_t ingestion_ms = 0;
  std::string message;
};

struct LogReadQuery {
  model::LogStreamId stream;
  std::optional<int64_t> start_ms;  // inclusive
  std::optional<int64_t> end_ms;    // exclusive
  // Forward: the first events at or after `from` (the stream's start when
  // absent). Backward: the last events before `from` (the stream's end when
  // absent). Either way returned in ascending order.
  bool forward = true;
  std::optional<LogPosition> from;
  size_t limit = 10000;
  // Stop once messages + kLogEventOverheadBytes per event would exceed this
  // (at least one event).
  size_t max_bytes = kMaxLogPageBytes;
};

struct LogFilterQuery {
  std::string group;
  std::vector<std::string> stream_names;   // empty: every stream (or the prefix)
  std::optional<std::string> stream_prefix;
  std::optional<int64_t> start_ms;  // inclusive
  std::optional<int64_t> end_ms;    // inclusive (unlike GetLogEvents)
  // Parsed once, by whoever decodes the request (FilterPattern::Parse);
  // null matches every event.
  std::shared_ptr<const FilterPattern> pattern;
  std::optional<LogPosition> after;  // exclusive resume point
  size_t limit = 10000;
  size_t max_bytes = kMaxLogPageBytes;
  // Events examined before the page is returned early (with `next`).
  size_t scan_budget = 100000;
};

struct LogFilterPage {
  std::vector<StoredLogEvent> events;  // ascending position, across streams
  // Set when more matching events may exist: resume after this position.
  std::optional<LogPosition> next;
};

class LogsReader {
 public:
  virtual ~LogsReader() = default;
  // Groups whose name starts with `prefix`, sorted by name.
  virtual absl::StatusOr<std::vector<LogGroupInfo>> ListLogGroups(const std::string& prefix) = 0;
  // The group's retention in days (nullopt: kept for ever); NotFound
  // (kGroupNotFound) if the group is missing.
  virtual absl::StatusOr<std::optional<int>> LogGroupRetention(const std::string& group) = 0;
  // Streams of `group` whose name starts with `prefix`, sorted by name;
  // NotFound (kGroupNotFound) if the group is missing.
  virtual absl::StatusOr<std::vector<LogStreamInfo>> ListLogStreams(const std::string& group,
                                                                    const std::string& prefix) = 0;
  // NotFound (kGroupNotFound, kStreamNotFound) if the group or stream is missing.
  virtual absl::StatusOr<std::vector<StoredLogEvent>> ReadLogStream(const LogReadQuery& query) = 0;
  // NotFound (kGroupNotFound) if the group is missing.
  virtual absl::StatusOr<LogFilterPage> FilterLogEvents(const LogFilterQuery& query) = 0;
};

// The NotFound messages of the log reads, in CloudWatch Logs' words.
inline constexpr char kGroupNotFound[] = "The specified log group does not exist.";
inline constexpr char kStreamNotFound[] = "The specified log stream does not exist.";

// ---------------------------------------------------------------- jobs

class JobsReader {
 public:
  virtual ~JobsReader() = default;
  // The job whose name equals `name` ignoring case, as stored (not
  // reconciled with its runner: that is the job layer's), or nullopt.
  virtual absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) = 0;
  // Every job, in lower-cased name order.
  virtual absl::StatusOr<std::vector<model::JobRecord>> ListJobs() = 0;
};

// ---------------------------------------------------------------- alarms

class AlarmsReader {
 public:
  virtual ~AlarmsReader() = default;
  // Every CloudWatch alarm as stored, in byte order of its name.
  virtual absl::StatusOr<std::vector<model::AlarmRecord>> ListAlarms() = 0;
};

}  // namespace trainwatch::query
