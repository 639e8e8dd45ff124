#pragma once
// The sink interfaces: how producers (capture/extract, the profiler, the job
// runner, the api) hand data to whoever stores it, without knowing whether the
// store is in this process (ingest) or across the network (the HTTP client).
//
// Contract for every Put*: it returns OK only once the data is durable (or,
// for a remote sink, accepted by a durable spool); on error nothing of the
// call is visible to readers, so the caller may retry the whole call.
// Implementations are thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"

namespace trainwatch::model {

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // InvalidArgument (naming the series and sample) for NaN/±Inf values,
  // timestamps outside the accepted window, or invalid keys; then nothing of
  // the batch is written.
  virtual absl::Status Put(const SampleBatch& batch) = 0;
};

class LogSink {
 public:
  virtual ~LogSink() = default;
  // Appends events to the stream, creating group and stream as needed.
  virtual absl::Status PutLogs(const LogBatch& batch) = 0;
};

class JobSink {
 public:
  virtual ~JobSink() = default;
  // Creates the record; AlreadyExists when a job with that name exists
  // (names compare case-insensitively, as SageMaker ARNs are lower-cased).
  virtual absl::Status CreateJob(const JobRecord& job) = 0;
  // Replaces the stored record of job.name; NotFound when there is none.
  virtual absl::Status UpdateJob(const JobRecord& job) = 0;
  // The stored record, or nullopt.
  virtual absl::StatusOr<std::optional<JobRecord>> GetJob(std::string_view name) = 0;
};

// Sees what an ingest path accepted, after it is durable (ingest::Ingest's
// subscribers: the rule engine, live streams). Called on the writer's thread:
// an observer must be quick, must not block and must not write back into the
// ingest that calls it.
class IngestObserver {
 public:
  virtual ~IngestObserver() = default;
  virtual void OnSamples(const SampleBatch& batch) { (void)batch; }
  // The events as stored (long ones split).
  virtual void OnLogs(const LogBatch& batch) { (void)batch; }
  // A job record as created or updated.
  virtual void OnJob(const JobRecord& job) { (void)job; }
  // The rule engine's statuses and findings for one host's record of `job`,
  // as stored (they replace that host's previous ones).
  virtual void OnRuleStatuses(const std::string& job, int host_index,
                              const std::vector<RuleStatus>& statuses) {
    (void)job, (void)host_index, (void)statuses;
  }
};

// What a job runner writes to: all three.
class TelemetrySink : public SampleSink, public LogSink, public JobSink {};

}  // namespace trainwatch::model
