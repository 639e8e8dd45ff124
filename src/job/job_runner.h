#pragma once
// JobRunner: one training job run as a local process, through SageMaker's life cycle
// (spec/aws-api.md §7.1), with its output kept as log events and its metric lines
// turned into datapoints as they are printed. What `trainwatch run` and
// CreateTrainingJob do; docs/running.md is the user's view.
//
//   RunSpec spec;
//   spec.command = {"python3", "train.py"};
//   spec.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
//   auto runner = JobRunner::Create(spec, &store);      // invalid spec: error, nothing done
//   if (!runner.ok()) { print(runner.status()); return 2; }
//   auto result = (*runner)->Run();                     // job exists / cannot start: error
//   if (!result.ok()) { print(result.status()); return 2; }
//   return result->exit_code;                           // the command's own status
//
// What Run writes, through the TelemetrySink:
// - the JobRecord at every transition (CreateJob, then UpdateJob), RunnerIdentity
//   filled: InProgress/Starting ("Starting the training job.", then "Preparing the
//   instances for training."), Training when the process has started, then
//   Uploading → Completed on exit code 0; Failed with "AlgorithmError: ..." (the exit
//   code or signal and the last stderr lines) otherwise; Stopping → Stopped for a stop
//   request (RequestStop, SIGTERM/SIGHUP to the runner, Ctrl-C) or, with secondary
//   status MaxRuntimeExceeded, when MaxRuntimeInSeconds (counted from the process
//   start) runs out. Stopping sends SIGTERM to the process group and SIGKILL after
//   stop_grace_ms; Ctrl-C sends SIGINT (a second one SIGKILL) and no SIGTERM. The
//   terminal record carries FinalMetricDataList and is written after every log
//   event and datapoint is stored.
// - every line as a log event in stream "<job>/algo-1-<epoch seconds>" of group
//   /aws/sagemaker/TrainingJobs, at the time it was read;
// - every extracted value as a datapoint (see JobMetrics), at that same time.
// Lines and datapoints are written by TelemetryWriter as they come: they are
// queryable while the job runs.
//
// Threads: Run executes on the caller's thread, which must stay alive until Run
// returns (capture/training_process.h); the capture threads and the telemetry writer
// thread live only during Run. RequestStop and Snapshot are thread-safe.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/exit_status.h"
#include "capture/output_pump.h"
#include "capture/training_process.h"
#include "job/failure_reason.h"
#include "job/job_metrics.h"
#include "job/telemetry_writer.h"
#include "model/job_record.h"
#include "model/sinks.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::job {

// AWS's limits (spec/aws-api.md Appendix B).
inline constexpr int64_t kDefaultMaxRuntimeS = 86400;
inline constexpr int64_t kMaxMaxRuntimeS = 2419200;
inline constexpr int64_t kDefaultStopGraceMs = 120000;

struct RunSpec {
  // Empty: GenerateJobName(command, now) (a number is appended if that name exists).
  std::string name;
  // argv of the training command; argv[0] is looked up on PATH.
  std::vector<std::string> command;
  std::vector<model::MetricDefinition> metric_definitions;
  // Match definitions against CloudWatch's #011-escaped text (spec/extraction.md).
  bool sagemaker_escaped = false;
  int64_t max_runtime_s = kDefaultMaxRuntimeS;  // 1 .. 2,419,200
  // Between SIGTERM and SIGKILL when stopping (AWS: 120 s).
  int64_t stop_grace_ms = kDefaultStopGraceMs;
  std::string working_dir;                       // empty: ours
  std::map<std::string, std::string> environment;  // added to the process environment
  // Also added to the process environment, but not recorded in the job (the
  // runner's own contacts, e.g. where the Python client sends its metrics:
  // docs/python.md). The runner always adds TRAINWATCH_JOB and
  // TRAINWATCH_HOST_INDEX, and TRAINWATCH_STEP_METRIC when there is one.
  std::map<std::string, std::string> runner_environment;
  // Recorded in the JobRecord (the profiler reads them from there).
  std::map<std::string, std::string> hyperparameters;
  int64_t profiling_interval_ms = 1000;
  int host_index = 1;
  std::string request_json;  // the CreateTrainingJob request, when there is one
  // Recorded in the JobRecord, where the rule engine reads them (rules/engine.h).
  std::vector<model::RuleConfiguration> rule_configurations;
  std::string rules_profile;
  std::string step_metric;

  // How the process meets the terminal (capture/training_process.h).
  capture::OutputMode output_mode = capture::OutputMode::kAuto;
  int stdout_fd = 1;  // passthrough; -1: none
  int stderr_fd = 2;
  int stdin_fd = 0;  // -1: /dev/null
  // Ctrl-C, SIGTERM, SIGHUP and SIGWINCH handled by this job while it runs. Only one
  // job per process can (signals are process-wide): turn it off for jobs run by a
  // server.
  bool handle_signals = true;
  // After the process exits, how long output from processes it left behind is still
  // read (capture::TrainingProcessOptions::drain_after_exit_ms).
  int64_t drain_after_exit_ms = 1000;
};

// Hooks for whoever follows the job (the profiler): called on Run's thread, in this
// order; they must return quickly.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // The training process started; `pid` is also its process group id. `job` is the
  // record as just written (Training).
  virtual void OnTrainingStarted(const model::JobRecord& /*job*/, pid_t /*pid*/) {}
  // The training process exited (before its last output is drained and the terminal
  // status is written).
  virtual void OnTrainingExited(const model::JobRecord& /*job*/,
                                const capture::ExitStatus& /*status*/) {}
  // After every write of the record (the first one included).
  virtual void OnJobWritten(const model::JobRecord& /*job*/) {}
};

struct JobRunnerOptions {
  // Times of the record and of lines. Must outlive the runner.
  const util::Clock* clock = &util::SystemClock::Get();
  TelemetryWriter::Options writer;
  // Bounded wait between checks of the max-runtime and grace deadlines.
  int64_t poll_ms = 50;
};

struct RunResult {
  model::JobRecord job;  // as finally written (terminal status)
  // What `trainwatch run` exits with: the command's exit code, 128 + signal when a
  // signal ended it.
  int exit_code = 0;
  capture::ExitStatus process_exit;
  capture::CaptureStats capture;
  TelemetryWriter::Stats telemetry;
  std::vector<DefinitionStats> metrics;  // per definition, in definition order
  // Record writes that failed even after retries (the job went on).
  uint64_t record_write_failures = 0;
};

class JobRunner {
 public:
  // Checks the spec: job name (model::IsValidJobName), command, metric definitions
  // (spec/extraction.md), max runtime, grace period, environment names.
  // InvalidArgument with a one-line message naming what is wrong; nothing is started
  // or written. `sink` must outlive the runner.
  static absl::StatusOr<std::unique_ptr<JobRunner>> Create(RunSpec spec,
                                                           model::TelemetrySink* sink,
                                                           JobRunnerOptions options = {});
  ~JobRunner();

  const std::string& name() const { return spec_.name; }
  // Before Run. The observer must outlive Run.
  void AddObserver(JobObserver* observer) { observers_.push_back(observer); }

  // Runs the job to a terminal status. Errors mean no record was written and the
  // command did not run: AlreadyExists (a job with this name exists), the start errors
  // of capture::Spawn (NotFound, PermissionDenied, FailedPrecondition: "cannot start
  // ..."), FailedPrecondition when another job of this process handles signals,
  // Cancelled when Ctrl-C or SIGTERM arrived before the command started; or the
  // sink's error from CreateJob, in which case the command, just started, was killed
  // at once (its first lines may be in the log stream). Call once.
  absl::StatusOr<RunResult> Run();

  // Stops the job as StopTrainingJob does (Stopping, SIGTERM, SIGKILL after the grace
  // period, Stopped). Any time, any thread; before the start, the job stops as soon
  // as it starts; after the end, nothing. `message`, when not empty, is the Stopped
  // status's message (a rule's StopTraining action says which rule and why); the
  // first request's message counts.
  void RequestStop(std::string message = "");
  // Sends `signo` to the training process group (a rule's signal action: the
  // script checkpoints, then stops). FailedPrecondition when the process is
  // not running.
  absl::Status Signal(int signo);

  // The record as last written (name and status only before Run). Thread-safe.
  model::JobRecord Snapshot() const;

  // Samples the job sent itself (the Python client, through the runner's
  // endpoint), once stored: the last value of each of the job's algorithm
  // metrics in `batch` (namespace /aws/sagemaker/TrainingJobs, dimension
  // TrainingJobName = this job) joins FinalMetricDataList, as a metric
  // definition's last match does; the client's own "trainwatch:*" metrics do
  // not. Thread-safe.
  void NoteSentMetrics(const model::SampleBatch& batch);

 private:
  enum class StopReason { kNone, kUser, kInterrupt, kMaxRuntime };

  JobRunner(RunSpec spec, model::TelemetrySink* sink, JobRunnerOptions options,
            std::unique_ptr<JobMetrics> metrics);
  absl::Status ReserveName();
  void OnLine(const model::LogLine& line);
  // Writes record_ (CreateJob when create), publishes the snapshot, tells observers.
  absl::Status WriteRecord(bool create);
  void Transition(model::JobStatus status, model::SecondaryStatus secondary,
                  std::string_view message, int64_t now_ms);
  void BeginStop(StopReason reason, bool send_sigterm);

  RunSpec spec_;
  bool name_generated_ = false;
  model::TelemetrySink* const sink_;
  const JobRunnerOptions options_;
  std::unique_ptr<JobMetrics> metrics_;
  std::vector<JobObserver*> observers_;

  // Run's state (Run's thread, and OnLine on the line thread where noted).
  model::JobRecord record_;
  std::unique_ptr<TelemetryWriter> writer_;
  std::unique_ptr<capture::TrainingProcess> process_;
  OutputTail tail_;                                  // line thread until the process ends
  std::vector<std::pair<size_t, double>> values_;   // line thread scratch
  TelemetryWriter::Batch batch_;                     // line thread: lines of this read
  StopReason stop_reason_ = StopReason::kNone;
  bool sigterm_sent_ = false;
  bool sigkill_sent_ = false;
  int64_t kill_deadline_ns_ = 0;  // monotonic; 0: none
  uint64_t record_write_failures_ = 0;
  bool ran_ = false;

  mutable util::Mutex mu_;  // guards snapshot_, process_ pointer use from RequestStop
  model::JobRecord snapshot_ ABSL_GUARDED_BY(mu_);
  std::string stop_message_ ABSL_GUARDED_BY(mu_);
  // NoteSentMetrics: the newest value of each metric the job sent, by name.
  std::map<std::string, model::FinalMetric> sent_final_ ABSL_GUARDED_BY(mu_);
  bool process_finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish may reap the leader
  std::atomic<bool> stop_requested_{false};
};

}  // namespace trainwatch::job
