#pragma once
// TrainingRun: a training job wired up. The JobRunner (the process, its lines
// as log events, the metrics extracted from them, the job's life cycle) and
// the profiler following the process tree, all writing to one TelemetrySink.
// This is the one place where a job is wired: `trainwatch run`
// (cli/run_command.cc) and CreateTrainingJob (job/local_jobs.h) both run their
// jobs through it, so they record, extract and profile alike.
//
//   auto run = TrainingRun::Create(spec, sink);  // invalid spec: error, nothing done
//   if (!run.ok()) ...
//   auto result = (*run)->Run();                 // as JobRunner::Run
//
// The profiler samples every spec.profiling_interval_ms (0: off) from the
// process start to its exit (ProfilerObserver); when it cannot start, the job
// runs on without system metrics, saying so once.
//
// Threads: as JobRunner's. Run executes on the caller's thread; RequestStop
// and Snapshot are thread-safe.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "job/job_runner.h"
#include "job/profiler_observer.h"
#include "model/job_record.h"
#include "model/sinks.h"

namespace trainwatch::job {

class TrainingRun {
 public:
  // JobRunner::Create's checks and errors. `sink` and options.clock (the
  // profiler's clock too) must outlive the run.
  static absl::StatusOr<std::unique_ptr<TrainingRun>> Create(RunSpec spec,
                                                             model::TelemetrySink* sink,
                                                             JobRunnerOptions options = {});

  const std::string& name() const { return runner_->name(); }
  // Another observer of the job (before Run; it must outlive Run). The
  // profiler is the first.
  void AddObserver(JobObserver* observer) { runner_->AddObserver(observer); }
  // JobRunner::Run, RequestStop and Snapshot.
  absl::StatusOr<RunResult> Run() { return runner_->Run(); }
  void RequestStop(std::string message = "") { runner_->RequestStop(std::move(message)); }
  model::JobRecord Snapshot() const { return runner_->Snapshot(); }
  absl::Status Signal(int signo) { return runner_->Signal(signo); }
  // JobRunner::NoteSentMetrics.
  void NoteSentMetrics(const model::SampleBatch& batch) { runner_->NoteSentMetrics(batch); }

  // Null when profiling is off.
  const ProfilerObserver* profiler() const { return profiler_.get(); }

 private:
  TrainingRun() = default;

  // Declared first: the runner holds a pointer to it until it is destroyed.
  std::unique_ptr<ProfilerObserver> profiler_;
  std::unique_ptr<JobRunner> runner_;
};

}  // namespace trainwatch::job
