#pragma once
// The api's narrow view of the rest of trainwatch: what the CloudWatch, Logs
// and SageMaker operations need. Reads are query's interfaces (query/reader.h,
// implemented over the store by query::StoreReader); writes go through ingest
// and the job runner. The composition root (app) wires these to the real
// layers; tests use api/testing/fake_backend.h.
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
#include "model/alarm.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "model/sinks.h"
#include "query/reader.h"

namespace trainwatch::api {

// ------------------------------------------------------------ reads

// Reads are query's (query/reader.h): the api decodes a request into these
// neutral queries and encodes the answer.
using query::DimensionFilter;
using query::ListMetricsQuery;
using query::LogFilterPage;
using query::LogFilterQuery;
using query::LogGroupInfo;
using query::LogPosition;
using query::LogReadQuery;
using query::LogsReader;
using query::LogStreamInfo;
using query::MetricId;
using query::MetricsReader;
using query::Statistic;
using query::StatisticsBucket;
using query::StatisticsQuery;
using query::StoredLogEvent;

// ------------------------------------------------------------------- logs

// The writes of CloudWatch Logs (reads are LogsReader's).
class LogsWriter {
 public:
  virtual ~LogsWriter() = default;
  // AlreadyExists if the group exists.
  virtual absl::Status CreateLogGroup(const std::string& group, int64_t now_ms) = 0;
  // NotFound if the group is missing; AlreadyExists if the stream exists.
  virtual absl::Status CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) = 0;
  // Appends validated events (chronological). NotFound if the group or the
  // stream is missing. Returns the stream's new upload sequence token.
  virtual absl::StatusOr<std::string> PutLogEvents(const model::LogBatch& batch,
                                                   int64_t now_ms) = 0;
  // Deletes the group, its streams and their events; NotFound
  // (kGroupNotFound) if the group is missing.
  virtual absl::Status DeleteLogGroup(const std::string& group) = 0;
  // Deletes the stream and its events; NotFound (kGroupNotFound,
  // kStreamNotFound) if the group or the stream is missing.
  virtual absl::Status DeleteLogStream(const model::LogStreamId& stream) = 0;
  // Keeps the group's events `days` days (nullopt: for ever); NotFound
  // (kGroupNotFound) if the group is missing.
  virtual absl::Status PutRetentionPolicy(const std::string& group, std::optional<int> days) = 0;
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

// ----------------------------------------------------------------- alarms

// CloudWatch alarms (model/alarm.h): the api validates and encodes; the
// backend keeps and evaluates them (app/: rules::AlarmService).
class AlarmsBackend {
 public:
  virtual ~AlarmsBackend() = default;
  // Creates or replaces the alarm. InvalidArgument for an action this
  // server cannot run.
  virtual absl::Status PutMetricAlarm(const model::AlarmDefinition& alarm) = 0;
  // NotFound naming the unknown names (then nothing is deleted).
  virtual absl::Status DeleteAlarms(const std::vector<std::string>& names) = 0;
  // NotFound for an unknown alarm.
  virtual absl::Status SetAlarmState(const std::string& name, model::AlarmState state,
                                     const std::string& reason,
                                     const std::string& reason_data) = 0;
  // Every alarm, by name.
  virtual absl::StatusOr<std::vector<model::AlarmRecord>> ListAlarms() = 0;
};

// What the api serves from. Any pointer may be null: that service's
// operations then answer 503-class "unavailable" errors.
struct Backends {
  model::SampleSink* samples = nullptr;  // PutMetricData, native ingest
  MetricsReader* metrics = nullptr;
  LogsReader* logs = nullptr;
  LogsWriter* log_writer = nullptr;  // CreateLogGroup/Stream, PutLogEvents
  JobsBackend* jobs = nullptr;
  AgentBackend* agents = nullptr;  // POST /api/v1/agent/deliver
  AlarmsBackend* alarms = nullptr;  // CloudWatch's alarm operations
};

}  // namespace trainwatch::api
