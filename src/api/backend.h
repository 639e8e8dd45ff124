#pragma once
// The api's narrow view of the rest of trainwatch: what the CloudWatch, Logs
// and SageMaker operations need from the store (through ingest and query) and
// from the job runner. The composition root (app) implements these over the
// real layers; tests use api/testing/fake_backend.h.
//
// The api owns the wire (decoding, validation, limits, tokens, encoding); the
// backends own the data. Every method is called concurrently from the
// server's threads: implementations are thread-safe.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/native/agent_wire.h"
#include "job/training_job_spec.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "model/sinks.h"

namespace trainwatch::api {

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
// gives one bucket per period and unit (TW rule, spec §4.1).
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
  // Stop once messages + 26 bytes per event would exceed this (at least one event).
  size_t max_bytes = 1048576;
};

// A parsed FilterLogEvents pattern (spec §6.3); matching is the backend's.
// An event matches when it contains every `all_of` term, at least one
// `any_of` term (if any), none of `none_of`, and matches `regex` (RE2 syntax
// subset) if set. Terms are case-sensitive substrings.
struct LogFilter {
  std::vector<std::string> all_of;
  std::vector<std::string> any_of;
  std::vector<std::string> none_of;
  std::optional<std::string> regex;
  bool MatchesEverything() const {
    return all_of.empty() && any_of.empty() && none_of.empty() && !regex;
  }
};

struct LogFilterQuery {
  std::string group;
  std::vector<std::string> stream_names;   // empty: every stream (or the prefix)
  std::optional<std::string> stream_prefix;
  std::optional<int64_t> start_ms;  // inclusive
  std::optional<int64_t> end_ms;    // inclusive (unlike GetLogEvents)
  LogFilter filter;
  std::optional<LogPosition> after;  // exclusive resume point
  size_t limit = 10000;
  size_t max_bytes = 1048576;
  // Events examined before the page is returned early (with `next`).
  size_t scan_budget = 100000;
};

struct LogFilterPage {
  std::vector<StoredLogEvent> events;  // ascending position, across streams
  // Set when more matching events may exist: resume after this position.
  std::optional<LogPosition> next;
};

class LogsBackend {
 public:
  virtual ~LogsBackend() = default;
  // AlreadyExists if the group exists.
  virtual absl::Status CreateLogGroup(const std::string& group, int64_t now_ms) = 0;
  // NotFound if the group is missing; AlreadyExists if the stream exists.
  virtual absl::Status CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) = 0;
  // Groups whose name starts with `prefix`, sorted by name.
  virtual absl::StatusOr<std::vector<LogGroupInfo>> ListLogGroups(const std::string& prefix) = 0;
  // Streams of `group` whose name starts with `prefix`, sorted by name;
  // NotFound if the group is missing.
  virtual absl::StatusOr<std::vector<LogStreamInfo>> ListLogStreams(const std::string& group,
                                                                    const std::string& prefix) = 0;
  // Appends validated events (chronological). NotFound if the group or the
  // stream is missing. Returns the stream's new upload sequence token.
  virtual absl::StatusOr<std::string> PutLogEvents(const model::LogBatch& batch,
                                                   int64_t now_ms) = 0;
  // NotFound if the group or stream is missing.
  virtual absl::StatusOr<std::vector<StoredLogEvent>> ReadLogStream(const LogReadQuery& query) = 0;
  // NotFound if the group is missing; InvalidArgument if the regex is rejected.
  virtual absl::StatusOr<LogFilterPage> FilterLogEvents(const LogFilterQuery& query) = 0;
};

// ---------------------------------------------------------- training jobs

using TrainingJobSpec = job::TrainingJobSpec;

class JobsBackend {
 public:
  virtual ~JobsBackend() = default;
  // Starts the job; returns its record. AlreadyExists when a job of that name
  // (case-insensitively) exists; InvalidArgument/FailedPrecondition when this
  // trainwatch cannot run it (e.g. no ContainerEntrypoint and no container runtime).
  virtual absl::StatusOr<model::JobRecord> CreateTrainingJob(const TrainingJobSpec& spec) = 0;
  virtual absl::StatusOr<std::optional<model::JobRecord>> GetJob(const std::string& name) = 0;
  // Every job (the api filters, sorts and pages).
  virtual absl::StatusOr<std::vector<model::JobRecord>> ListJobs() = 0;
  // Moves an InProgress job to Stopping. NotFound if unknown;
  // FailedPrecondition if it is not InProgress.
  virtual absl::Status StopJob(const std::string& name) = 0;
};

// ----------------------------------------------------------------- agents

class AgentBackend {
 public:
  virtual ~AgentBackend() = default;
  // True when a stop was asked of that host of the job (stop_requested_ms).
  // NotFound when the job has no such host; FailedPrecondition when the host's
  // record names another runner.
  virtual absl::StatusOr<bool> Heartbeat(const AgentHeartbeat& heartbeat) = 0;
  // True when written now, false when this agent delivered that seq before.
  // Errors as the sinks' (model/sinks.h): InvalidArgument, AlreadyExists for
  // a job name taken, NotFound for an update of an unknown job.
  virtual absl::StatusOr<bool> Deliver(const AgentBatch& batch) = 0;
};

// What the api serves from. Any pointer may be null: that service's
// operations then answer 503-class "unavailable" errors.
struct Backends {
  model::SampleSink* samples = nullptr;  // PutMetricData, native ingest
  MetricsReader* metrics = nullptr;
  LogsBackend* logs = nullptr;
  JobsBackend* jobs = nullptr;
  AgentBackend* agents = nullptr;  // POST /api/v1/agent/deliver
};

}  // namespace trainwatch::api
