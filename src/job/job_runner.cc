#include "job/job_runner.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "job/job_name.h"
#include "job/lifecycle.h"
#include "job/runner_identity.h"
#include "util/check.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::job {
namespace {

constexpr int kRecordWriteAttempts = 4;
constexpr size_t kMaxJobNameChars = 63;

}  // namespace

absl::StatusOr<std::unique_ptr<JobRunner>> JobRunner::Create(RunSpec spec,
                                                             model::TelemetrySink* sink,
                                                             JobRunnerOptions options) {
  TW_CHECK(sink != nullptr);
  if (spec.command.empty() || spec.command[0].empty()) {
    return absl::InvalidArgumentError(
        "no command to run: give the training command after --, e.g. trainwatch run -- "
        "python3 train.py");
  }
  const bool generated = spec.name.empty();
  if (generated) {
    spec.name = GenerateJobName(spec.command, options.clock->NowMs());
  } else if (!model::IsValidJobName(spec.name)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "job name \"%s\" is not valid: use 1 to 63 letters, digits and hyphens, starting and "
        "ending with a letter or digit (SageMaker's rule), e.g. mnist-run-7",
        spec.name));
  }
  if (spec.host_index < 1 || spec.host_index > model::kMaxJobHosts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host number %d is out of range: want 1 to %d (the Host dimension is <job>/algo-<n>)",
        spec.host_index, model::kMaxJobHosts));
  }
  if (generated && spec.host_index != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host %d of a job needs the job's name: give every host the same --name", spec.host_index));
  }
  if (spec.max_runtime_s < 1 || spec.max_runtime_s > kMaxMaxRuntimeS) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max runtime %d s is out of range: want 1 to %d seconds (28 days)", spec.max_runtime_s,
        kMaxMaxRuntimeS));
  }
  if (spec.stop_grace_ms < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "stop grace period %d ms is negative: want 0 or more milliseconds", spec.stop_grace_ms));
  }
  for (const auto& [key, value] : spec.environment) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "environment variable name \"%s\" is not valid: want a non-empty name without '='",
          key));
    }
  }
  TW_ASSIGN_OR_RETURN(std::unique_ptr<JobMetrics> metrics,
                      JobMetrics::Create(spec.name, spec.metric_definitions,
                                         spec.sagemaker_escaped, spec.host_index,
                                         spec.step_metric));
  std::unique_ptr<JobRunner> runner(
      new JobRunner(std::move(spec), sink, options, std::move(metrics)));
  runner->name_generated_ = generated;
  return runner;
}

JobRunner::JobRunner(RunSpec spec, model::TelemetrySink* sink, JobRunnerOptions options,
                     std::unique_ptr<JobMetrics> metrics)
    : spec_(std::move(spec)), sink_(sink), options_(options), metrics_(std::move(metrics)) {
  snapshot_.name = spec_.name;
}

JobRunner::~JobRunner() = default;

model::JobRecord JobRunner::Snapshot() const {
  util::MutexLock lock(mu_);
  return snapshot_;
}

void JobRunner::NoteSentMetrics(const model::SampleBatch& batch) {
  util::MutexLock lock(mu_);
  for (const model::SeriesSamples& series : batch.series) {
    const model::SeriesKey& key = series.key;
    if (key.ns != model::kTrainingJobsNamespace || key.dimensions.size() != 1 ||
        key.dimensions[0].name != "TrainingJobName" || key.dimensions[0].value != spec_.name) {
      continue;
    }
    // The client's own instruments (step time, data-loader wait, drops) are
    // charted, not final results.
    if (key.metric.rfind("trainwatch:", 0) == 0) continue;
    for (const model::Sample& s : series.samples) {
      auto [it, inserted] = sent_final_.try_emplace(key.metric, model::FinalMetric{key.metric, s.value, s.t_ms});
      if (!inserted && s.t_ms >= it->second.t_ms) it->second = {key.metric, s.value, s.t_ms};
    }
  }
}

void JobRunner::RequestStop(std::string message) {
  util::MutexLock lock(mu_);
  if (!stop_requested_ && !message.empty()) stop_message_ = std::move(message);
  stop_requested_ = true;
  if (process_) process_->RequestStop();
}

absl::Status JobRunner::Signal(int signo) {
  util::MutexLock lock(mu_);
  if (!process_ || process_finishing_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("job %s has no running training process to signal", spec_.name));
  }
  // Not SignalGroup (Run's thread only): the group leader is reaped only in
  // Finish, which starts after process_finishing_ is set, so the id is ours.
  if (::kill(-process_->pid(), signo) != 0) {
    return absl::InternalError(absl::StrFormat("cannot signal job %s: %s", spec_.name,
                                               std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status JobRunner::ReserveName() {
  const std::string base = spec_.name;
  for (int attempt = 0; attempt < 100; ++attempt) {
    TW_ASSIGN_OR_RETURN(std::optional<model::JobRecord> existing, sink_->GetJob(spec_.name));
    if (!existing) break;
    if (!name_generated_) {
      // Another host of a job spread over several joins it.
      const model::JobRecord* host = model::FindHost(*existing, spec_.host_index);
      if (host == nullptr) break;
      if (spec_.host_index != 1 || !existing->hosts.empty()) {
        return absl::AlreadyExistsError(absl::StrFormat(
            "host algo-%d of training job \"%s\" already ran (%s, created %s): give each host "
            "its own --host number, or choose another --name",
            spec_.host_index, existing->name, model::JobStatusName(host->status),
            util::FormatIso8601Ms(host->creation_ms)));
      }
      return absl::AlreadyExistsError(absl::StrFormat(
          "a training job named \"%s\" already exists (%s, created %s): choose another --name, "
          "or leave --name out to get a new generated one",
          existing->name, model::JobStatusName(existing->status),
          util::FormatIso8601Ms(existing->creation_ms)));
    }
    std::string suffix = absl::StrFormat("-%d", attempt + 2);
    spec_.name = base.substr(0, kMaxJobNameChars - suffix.size()) + suffix;
  }
  if (spec_.name != base) {
    // The series carry the job name: rebuild them for the new one.
    TW_ASSIGN_OR_RETURN(metrics_, JobMetrics::Create(spec_.name, spec_.metric_definitions,
                                                     spec_.sagemaker_escaped, spec_.host_index,
                                                     spec_.step_metric));
    util::MutexLock lock(mu_);
    snapshot_.name = spec_.name;
  }
  return absl::OkStatus();
}

absl::Status JobRunner::WriteRecord(bool create) {
  absl::Status status;
  if (create) {
    status = sink_->CreateJob(record_);
  } else {
    int64_t backoff_ms = 10;
    for (int attempt = 1; attempt <= kRecordWriteAttempts; ++attempt) {
      status = sink_->UpdateJob(record_);
      if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) break;
      if (attempt < kRecordWriteAttempts) {
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        backoff_ms *= 2;
      }
    }
    if (!status.ok()) {
      ++record_write_failures_;
      util::LogWarning(absl::StrFormat(
          "cannot record status %s of training job \"%s\": %s (the job goes on)",
          model::SecondaryStatusName(record_.secondary_status), record_.name, status.ToString()));
    }
  }
  if (!status.ok()) return status;
  {
    util::MutexLock lock(mu_);
    snapshot_ = record_;
  }
  for (JobObserver* observer : observers_) observer->OnJobWritten(record_);
  return absl::OkStatus();
}

void JobRunner::Transition(model::JobStatus status, model::SecondaryStatus secondary,
                           std::string_view message, int64_t now_ms) {
  EnterStatus(&record_, status, secondary, message, now_ms);
  WriteRecord(/*create=*/false).IgnoreError();  // counted and logged by WriteRecord
}

void JobRunner::BeginStop(StopReason reason, bool send_sigterm) {
  if (stop_reason_ == StopReason::kNone) {
    stop_reason_ = reason;
    if (reason == StopReason::kMaxRuntime) {
      Transition(model::JobStatus::kStopping, model::SecondaryStatus::kMaxRuntimeExceeded,
                 kMessageMaxRuntime, options_.clock->NowMs());
    } else {
      Transition(model::JobStatus::kStopping, model::SecondaryStatus::kStopping,
                 kMessageStopping, options_.clock->NowMs());
    }
  }
  if (send_sigterm && !sigterm_sent_) {
    process_->SignalGroup(SIGTERM);
    sigterm_sent_ = true;
    kill_deadline_ns_ = options_.clock->MonotonicNs() + spec_.stop_grace_ms * 1000000;
  }
}

void JobRunner::OnLine(const model::LogLine& line) {
  values_.clear();
  metrics_->Extract(line.t_ms, line.text, &values_);
  batch_.AddLine(line.t_ms, line.text, values_);
  tail_.Add(line.stream, line.text);
}

absl::StatusOr<RunResult> JobRunner::Run() {
  TW_CHECK(!ran_);
  ran_ = true;
  const util::Clock& clock = *options_.clock;
  std::unique_ptr<capture::SignalCatcher> signals;
  if (spec_.handle_signals) {
    TW_ASSIGN_OR_RETURN(signals, capture::SignalCatcher::Create());
  }
  TW_RETURN_IF_ERROR(ReserveName());
  if (signals) {
    for (int sig : signals->TakePending()) {
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        return absl::CancelledError(absl::StrFormat(
            "interrupted (%s) before the training command started; nothing was run",
            capture::SignalName(sig)));
      }
    }
  }

  record_.name = spec_.name;
  record_.arn = model::TrainingJobArn(spec_.name);
  record_.metric_definitions = spec_.metric_definitions;
  record_.max_runtime_s = spec_.max_runtime_s;
  record_.command = spec_.command;
  record_.working_dir = spec_.working_dir;
  record_.hyperparameters = spec_.hyperparameters;
  record_.environment = spec_.environment;
  record_.profiling_interval_ms = spec_.profiling_interval_ms;
  record_.host_index = spec_.host_index;
  record_.runner = CurrentRunnerIdentity();
  record_.request_json = spec_.request_json;
  record_.rule_configurations = spec_.rule_configurations;
  record_.rules_profile = spec_.rules_profile;
  record_.step_metric = spec_.step_metric;
  const int64_t created_ms = clock.NowMs();
  BeginJob(&record_, created_ms);
  record_.log_stream =
      absl::StrFormat("%s/algo-%d-%d", spec_.name, spec_.host_index, created_ms / 1000);
  TelemetryWriter::Options writer_options = options_.writer;
  writer_options.start_held = true;  // until the job's record is written
  writer_ = std::make_unique<TelemetryWriter>(
      sink_, sink_,
      model::LogStreamId{std::string(model::kTrainingJobsLogGroup), record_.log_stream},
      metrics_->series(), writer_options);

  capture::TrainingProcessOptions process_options;
  process_options.argv = spec_.command;
  process_options.working_dir = spec_.working_dir;
  for (const auto& entry : spec_.environment) process_options.env.push_back(entry);
  // Who the process is, for the Python client (docs/python.md).
  process_options.env.emplace_back("TRAINWATCH_JOB", spec_.name);
  process_options.env.emplace_back("TRAINWATCH_HOST_INDEX", std::to_string(spec_.host_index));
  if (!spec_.step_metric.empty()) {
    process_options.env.emplace_back("TRAINWATCH_STEP_METRIC", spec_.step_metric);
  }
  for (const auto& entry : spec_.runner_environment) process_options.env.push_back(entry);
  process_options.output_mode = spec_.output_mode;
  process_options.passthrough_stdout_fd = spec_.stdout_fd;
  process_options.passthrough_stderr_fd = spec_.stderr_fd;
  process_options.stdin_fd = spec_.stdin_fd;
  process_options.signals = signals.get();
  process_options.drain_after_exit_ms = spec_.drain_after_exit_ms;
  process_options.clock = options_.clock;
  process_options.on_chunk_done = [this] { writer_->Add(&batch_); };
  auto started = capture::TrainingProcess::Start(
      std::move(process_options), [this](const model::LogLine& line) { OnLine(line); });
  if (!started.ok()) {
    writer_->Stop();
    return started.status();
  }
  {
    util::MutexLock lock(mu_);
    process_ = *std::move(started);
  }
  if (absl::Status created = WriteRecord(/*create=*/true); !created.ok()) {
    // First: its lines (of no job) are dropped, and an output pump waiting for
    // room in the held writer goes on.
    writer_->Stop();
    std::unique_ptr<capture::TrainingProcess> process;
    {
      util::MutexLock lock(mu_);
      process = std::move(process_);
    }
    process.reset();  // SIGKILLs the group, reaps, drains
    return absl::Status(created.code(),
                        absl::StrCat(created.message(),
                                     "; the command was stopped, and nothing of it is kept"));
  }
  // The rules know the job now: its first lines reach them too.
  writer_->Release();
  Transition(model::JobStatus::kInProgress, model::SecondaryStatus::kStarting, kMessagePreparing,
             created_ms);
  Transition(model::JobStatus::kInProgress, model::SecondaryStatus::kTraining, kMessageTraining,
             process_->start_ms());
  for (JobObserver* observer : observers_) {
    observer->OnTrainingStarted(record_, process_->pid());
  }
  if (stop_requested_) BeginStop(StopReason::kUser, /*send_sigterm=*/true);

  const int64_t runtime_deadline_ns =
      clock.MonotonicNs() + spec_.max_runtime_s * int64_t{1000000000};
  for (bool exited = false; !exited;) {
    const int64_t now_ns = clock.MonotonicNs();
    if (stop_reason_ == StopReason::kNone && now_ns >= runtime_deadline_ns) {
      BeginStop(StopReason::kMaxRuntime, /*send_sigterm=*/true);
    }
    if (kill_deadline_ns_ != 0 && !sigkill_sent_ && now_ns >= kill_deadline_ns_) {
      process_->SignalGroup(SIGKILL);
      sigkill_sent_ = true;
    }
    int64_t timeout_ms = options_.poll_ms;
    for (int64_t deadline : {runtime_deadline_ns, kill_deadline_ns_}) {
      if (deadline > now_ns) {
        timeout_ms = std::min(timeout_ms, (deadline - now_ns + 999999) / 1000000);
      }
    }
    switch (process_->Wait(timeout_ms)) {
      case capture::TrainingProcess::Event::kExited:
        exited = true;
        break;
      case capture::TrainingProcess::Event::kInterrupted:
        BeginStop(StopReason::kInterrupt, /*send_sigterm=*/false);
        break;
      case capture::TrainingProcess::Event::kKilled:
        BeginStop(StopReason::kInterrupt, /*send_sigterm=*/false);
        sigkill_sent_ = true;
        break;
      case capture::TrainingProcess::Event::kStopRequested:
        BeginStop(StopReason::kUser, /*send_sigterm=*/true);
        break;
      case capture::TrainingProcess::Event::kTimeout:
        break;
    }
  }

  const int64_t exited_ms = clock.NowMs();
  const capture::ExitStatus exit_status = *process_->exit_status();
  for (JobObserver* observer : observers_) observer->OnTrainingExited(record_, exit_status);
  if (sigterm_sent_ && !sigkill_sent_) {
    // Stopping stops the whole group: what the leader left behind goes now.
    process_->SignalGroup(SIGKILL);
  }
  const bool completed = stop_reason_ == StopReason::kNone && exit_status.success();
  if (completed) {
    Transition(model::JobStatus::kInProgress, model::SecondaryStatus::kUploading,
               kMessageUploading, exited_ms);
  }
  {
    util::MutexLock lock(mu_);
    process_finishing_ = true;
  }
  process_->Finish();  // every line is delivered after this
  writer_->Flush();    // ... and stored after this

  record_.exit_code = exit_status.exit_code;
  record_.exit_signal = exit_status.signal;
  record_.final_metrics = metrics_->FinalMetrics();
  {
    // What the job sent itself joins what its lines said; the newer value
    // of a metric both gave wins.
    util::MutexLock lock(mu_);
    for (const auto& entry : sent_final_) {
      const model::FinalMetric& sent = entry.second;
      auto same = std::find_if(record_.final_metrics.begin(), record_.final_metrics.end(),
                               [&sent](const model::FinalMetric& m) { return m.name == sent.name; });
      if (same == record_.final_metrics.end()) {
        record_.final_metrics.push_back(sent);
      } else if (sent.t_ms > same->t_ms) {
        *same = sent;
      }
    }
  }
  const int64_t end_ms = clock.NowMs();
  switch (stop_reason_) {
    case StopReason::kMaxRuntime:
      Transition(model::JobStatus::kStopped, model::SecondaryStatus::kMaxRuntimeExceeded,
                 kMessageMaxRuntime, end_ms);
      break;
    case StopReason::kUser:
    case StopReason::kInterrupt: {
      std::string message;
      {
        util::MutexLock lock(mu_);
        message = stop_message_;
      }
      Transition(model::JobStatus::kStopped, model::SecondaryStatus::kStopped,
                 message.empty() ? std::string(kMessageStopped) : message, end_ms);
      break;
    }
    case StopReason::kNone:
      if (completed) {
        Transition(model::JobStatus::kCompleted, model::SecondaryStatus::kCompleted,
                   kMessageCompleted, end_ms);
      } else {
        Transition(model::JobStatus::kFailed, model::SecondaryStatus::kFailed,
                   AlgorithmFailureReason(exit_status, tail_.Lines(model::OutputStream::kStderr),
                                          tail_.Lines(model::OutputStream::kStdout)),
                   end_ms);
      }
      break;
  }
  writer_->Stop();

  RunResult result;
  result.job = record_;
  result.exit_code = exit_status.ShellCode();
  result.process_exit = exit_status;
  result.capture = process_->stats();
  result.telemetry = writer_->stats();
  result.metrics = metrics_->Stats();
  result.record_write_failures = record_write_failures_;
  {
    util::MutexLock lock(mu_);
    process_.reset();
  }
  return result;
}

}  // namespace trainwatch::job
