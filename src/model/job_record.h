#pragma once
// JobRecord: one training job in SageMaker's shape (spec/aws-api.md §7). The
// job layer writes it through a JobSink as the job moves through its
// lifecycle; the store keeps it; the api and CLI render it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/rule_result.h"
#include "model/series.h"

namespace trainwatch::model {

// Hosts of one job: `trainwatch run --host 1..kMaxJobHosts`.
inline constexpr int kMaxJobHosts = 1024;

enum class JobStatus { kInProgress, kCompleted, kFailed, kStopping, kStopped };

enum class SecondaryStatus {
  kStarting,
  kDownloading,
  kTraining,
  kUploading,
  kStopping,
  kStopped,
  kMaxRuntimeExceeded,
  kCompleted,
  kFailed,
  kInterrupted,
};

// AWS spellings ("InProgress", "MaxRuntimeExceeded").
std::string_view JobStatusName(JobStatus status);
std::string_view SecondaryStatusName(SecondaryStatus status);
// nullopt for a spelling that is not one of the above.
std::optional<JobStatus> ParseJobStatus(std::string_view name);
std::optional<SecondaryStatus> ParseSecondaryStatus(std::string_view name);
bool IsTerminal(JobStatus status);

struct StatusTransition {
  SecondaryStatus status;
  int64_t start_ms;
  std::optional<int64_t> end_ms;  // set when the status is left; terminal: = start_ms
  std::string message;
  friend bool operator==(const StatusTransition&, const StatusTransition&) = default;
};

// A SageMaker MetricDefinition: a name and an RE2 pattern with one capture group.
struct MetricDefinition {
  std::string name;
  std::string regex;
  friend bool operator==(const MetricDefinition&, const MetricDefinition&) = default;
};

struct FinalMetric {
  std::string name;
  double value;
  int64_t t_ms;
  friend bool operator==(const FinalMetric&, const FinalMetric&) = default;
};

// Who runs the job, so that a reader can tell a live runner from one that died
// (kill -9, reboot) and record the job as Failed instead of InProgress forever.
struct RunnerIdentity {
  std::string hostname;
  std::string boot_id;       // /proc/sys/kernel/random/boot_id
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // field 22 of /proc/<pid>/stat: tells a reused pid apart
  friend bool operator==(const RunnerIdentity&, const RunnerIdentity&) = default;
};

struct JobRecord {
  std::string name;
  std::string arn;
  JobStatus status = JobStatus::kInProgress;
  SecondaryStatus secondary_status = SecondaryStatus::kStarting;
  std::string failure_reason;  // "AlgorithmError: ..." etc.; empty when none
  int64_t creation_ms = 0;
  std::optional<int64_t> training_start_ms;
  std::optional<int64_t> training_end_ms;
  int64_t last_modified_ms = 0;
  std::vector<StatusTransition> transitions;
  // Filled when the job reaches a terminal status (spec/aws-api.md §5.4).
  std::vector<FinalMetric> final_metrics;

  std::vector<MetricDefinition> metric_definitions;
  int64_t max_runtime_s = 86400;
  std::vector<std::string> command;  // argv of the training process
  std::string working_dir;
  std::map<std::string, std::string> hyperparameters;
  std::map<std::string, std::string> environment;  // added to the process environment
  // Profiler sampling interval; 0 = profiling off.
  int64_t profiling_interval_ms = 1000;
  // Instance (host) number: the Host dimension is "<name>/algo-<n>".
  int host_index = 1;
  // Log stream "<name>/algo-<n>-<epoch seconds>" in group /aws/sagemaker/TrainingJobs.
  std::string log_stream;
  std::optional<int> exit_code;    // set when the process exited normally
  std::optional<int> exit_signal;  // set when the process was killed by a signal
  RunnerIdentity runner;
  // The CreateTrainingJob request as received (JSON), for the fields that
  // DescribeTrainingJob echoes back; empty for jobs started with `trainwatch run`.
  std::string request_json;
  // When a stop was asked for that the server could not deliver by signal (the
  // runner is on another host): the runner's heartbeat brings it and it stops.
  // A runner's own updates keep it (store::Db::UpdateJob).
  std::optional<int64_t> stop_requested_ms;
  // The rules that watch the job (empty: none, e.g. `run --no-rules`), the
  // parameter profile they run with ("" = default, "sagemaker_compat"), and
  // the metric whose value is the step number ("" = none), for rules that
  // need step boundaries. Set when the job is created.
  std::vector<RuleConfiguration> rule_configurations;
  std::string rules_profile;
  std::string step_metric;
  // Written by the rule engine only (store::Db::SetRuleStatuses); a runner's
  // updates keep what is stored.
  std::vector<RuleStatus> rule_statuses;
  // A job spread over several hosts (`trainwatch run --host N` on each): every
  // host's own record, by host index, and the fields above are the job's, merged
  // by MergeHostRecords. Empty for a job on one host. Filled by readers, never
  // written: each runner writes its own host's record.
  std::vector<JobRecord> hosts;

  std::string HostName() const;  // "<name>/algo-<host_index>"
  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// One host of a training job, as its series name it.
struct JobHost {
  std::string job;
  int host_index = 1;
  friend bool operator==(const JobHost&, const JobHost&) = default;
};
// "<name>/algo-<n>" (HostName's form, n in 1..kMaxJobHosts) -> {name, n};
// nullopt for any other value.
std::optional<JobHost> ParseHostName(std::string_view host);
// The job and host a series belongs to: its TrainingJobName dimension (host 1:
// the job's own metrics), else its Host dimension (a host's profiler and step
// series); nullopt for a series of no job.
std::optional<JobHost> JobOfSeries(const SeriesKey& key);

// The records of one job's hosts (any order, at least one) as one job:
// - status: InProgress while any host is not terminal (Stopping when a stop was
//   asked for); then Failed if any host failed, else Stopped if any was stopped,
//   else Completed. A host with stop_requested_ms that is still InProgress counts
//   as Stopping.
// - status, secondary status, transitions, failure reason, exit status: those of
//   the host that decides the status (the first host not terminal, or the first
//   with the job's terminal status);
// - creation and training start: the earliest; training end and last modified:
//   the latest (training end only once every host ended);
// - final metrics: per definition, the latest value any host produced.
// One record comes back as it is (hosts stays empty), except for the stop request.
JobRecord MergeHostRecords(std::vector<JobRecord> records);
// The record of host `host_index` of `job` (merged or not); nullptr when the job
// has no such host.
const JobRecord* FindHost(const JobRecord& job, int host_index);
// Every host's record: job.hosts, or {job} for a job on one host.
std::vector<JobRecord> HostRecords(const JobRecord& job);

// "arn:aws:sagemaker:us-east-1:000000000000:training-job/<lower-cased name>"
std::string TrainingJobArn(std::string_view name);

// SageMaker's job-name rule: 1-63 characters, ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}.
bool IsValidJobName(std::string_view name);

}  // namespace trainwatch::model
