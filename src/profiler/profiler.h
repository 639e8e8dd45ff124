#pragma once
// Profiler: samples the machine and the training job's process tree on a
// fixed grid (ProfilerOptions::interval_ms) and writes each tick as one
// SampleBatch to a model::SampleSink. The job runner starts it right after
// spawning the training process and stops it when the process exits.
//
//   TW_ASSIGN_OR_RETURN(auto profiler, profiler::Profiler::Start(options, pid, sink, &clock));
//   ... waitid(P_PID, pid, &info, WEXITED | WNOWAIT);   // exited, not yet reaped
//   profiler->Stop();                                    // final sample sees the job's last CPU
//   waitpid(pid, &status, 0);
//
// Threads: one sampling thread, "tw-profiler", started by Start and joined by
// Stop (or the destructor). It takes the first sample at once, loads NVML
// after it, then samples at origin + k * interval (an absolute monotonic grid:
// no drift). A tick that overruns its slot makes the next slots it covered be
// skipped and counted (late_ticks), never bunched; Stop takes a final sample.
// The thread blocks only on its own reads and on sink->Put; it never signals
// or stops the training process.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "absl/status/statusor.h"
#include "model/sinks.h"
#include "profiler/profiler_options.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::profiler {

class Sampler;

// The scheduling rule: ticks run at origin + slot * interval. After the tick
// of `slot` finished at now_ns, the next slot is the first one still ahead;
// the slots passed over are `skipped` (counted as late ticks, not run).
struct GridStep {
  int64_t next_slot;
  int64_t skipped;
};
GridStep NextGridSlot(int64_t origin_ns, int64_t interval_ns, int64_t slot, int64_t now_ns);

class Profiler {
 public:
  // Validates the options, opens the host files and starts the thread.
  // InvalidArgument for a bad interval (0, "off", is the caller's business:
  // do not start a profiler), an empty job name, a host index < 1 or a null
  // sink/clock; FailedPrecondition when proc_root is not a Linux /proc.
  // `sink` and `clock` must outlive the Profiler. Timestamps are
  // clock->NowMs() at each reading; the grid runs on clock->MonotonicNs().
  static absl::StatusOr<std::unique_ptr<Profiler>> Start(ProfilerOptions options, pid_t root_pid,
                                                         model::SampleSink* sink,
                                                         const util::Clock* clock);
  // Stops (see Stop).
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Takes the final sample, writes it, and joins the thread. Idempotent.
  void Stop();

  // A consistent copy, updated after every tick. Thread-safe.
  ProfilerStats stats() const;

 private:
  Profiler(ProfilerOptions options, std::unique_ptr<Sampler> sampler, model::SampleSink* sink,
           const util::Clock* clock);
  void Run(std::stop_token stop);
  // Samples, writes and accounts one tick.
  void Tick();
  // Waits until monotonic time `deadline_ns` or Stop; false when stopping.
  bool WaitUntil(const std::stop_token& stop, int64_t deadline_ns);

  const ProfilerOptions options_;
  std::unique_ptr<Sampler> sampler_;
  model::SampleSink* sink_;
  const util::Clock* clock_;

  mutable util::Mutex mu_;
  ProfilerStats stats_ ABSL_GUARDED_BY(mu_);
  util::Mutex stop_mu_;  // serialises Stop callers
  // Last: destroyed before what Run uses. Stop asks it to stop (its token)
  // and joins; Run takes the final sample on its way out.
  std::jthread thread_;
};

}  // namespace trainwatch::profiler
