#include "job/training_run.h"

#include <utility>

namespace trainwatch::job {

absl::StatusOr<std::unique_ptr<TrainingRun>> TrainingRun::Create(RunSpec spec,
                                                                 model::TelemetrySink* sink,
                                                                 JobRunnerOptions options) {
  const int64_t interval_ms = spec.profiling_interval_ms;
  const util::Clock* clock = options.clock;
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Create(std::move(spec), sink, options);
  if (!runner.ok()) return runner.status();
  std::unique_ptr<TrainingRun> run(new TrainingRun());
  run->runner_ = *std::move(runner);
  if (interval_ms > 0) {
    run->profiler_ = std::make_unique<ProfilerObserver>(interval_ms, sink, clock);
    run->runner_->AddObserver(run->profiler_.get());
  }
  return run;
}

}  // namespace trainwatch::job
