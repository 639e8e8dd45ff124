#pragma once
// ProfilerObserver: attaches the profiler to a job run. It starts sampling the
// training process tree as soon as the process starts, and takes the last
// sample when it exits (issue: "the first sample is taken at start, the last
// at exit").

#include <memory>

#include "job/job_runner.h"
#include "model/sinks.h"
#include "profiler/profiler.h"
#include "util/clock.h"

namespace trainwatch::job {

class ProfilerObserver final : public JobObserver {
 public:
  // `interval_ms` one of the profiler's intervals; `sink` and `clock` must
  // outlive the observer.
  ProfilerObserver(int64_t interval_ms, model::SampleSink* sink, const util::Clock* clock)
      : interval_ms_(interval_ms), sink_(sink), clock_(clock) {}
  ~ProfilerObserver() override;

  void OnTrainingStarted(const model::JobRecord& job, pid_t pid) override;
  void OnTrainingExited(const model::JobRecord& job, const capture::ExitStatus& status) override;

  // Ticks taken and degraded modes met (after the run).
  profiler::ProfilerStats stats() const { return stats_; }
  bool started() const { return started_; }

 private:
  const int64_t interval_ms_;
  model::SampleSink* const sink_;
  const util::Clock* const clock_;
  std::unique_ptr<profiler::Profiler> profiler_;
  profiler::ProfilerStats stats_;
  bool started_ = false;
};

}  // namespace trainwatch::job
