#pragma once
// Sampler: one synchronous reading of everything the profiler watches (host,
// the job's process tree and cgroup, GPUs), as one SampleBatch. The Profiler
// drives it from its thread; tests drive it directly with fixture /proc and
// /sys trees and chosen times, without threads.
//
// The first SampleOnce publishes what a single reading can tell (memory,
// load, RSS, threads, GPU utilisation and memory, filesystem fullness); rates
// (CPU %, bytes/s, ops/s, pressure %) need two readings and start at the
// second. Series and their meaning: docs/profiler.md.
// Thread safety: none; one thread at a time.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/series.h"
#include "profiler/cgroup.h"
#include "profiler/host_sampler.h"
#include "profiler/nvml.h"
#include "profiler/process_tree.h"
#include "profiler/profiler_options.h"
#include "profiler/series_table.h"

namespace trainwatch::profiler {

class Sampler {
 public:
  // Validates options (interval, job name, host index) and opens the host
  // files. root_pid is the training process; it may already have exited (then
  // the job series stay at zero). FailedPrecondition when proc_root is not a
  // Linux /proc.
  static absl::StatusOr<std::unique_ptr<Sampler>> Create(const ProfilerOptions& options,
                                                         pid_t root_pid);
  ~Sampler();

  // Loads NVML from options.nvml_library (nothing when empty). When it cannot
  // be loaded or initialised: one notice, degraded().nvml_unavailable, and no
  // GPU series. Separate from Create so that the first tick need not wait
  // for the driver (nvmlInit can take a second without persistence mode).
  void InitGpu();

  // Reads everything at wall time t_ms (the samples' timestamp) and monotonic
  // time mono_ns (rates use the monotonic interval since the previous call;
  // a call whose mono_ns does not advance publishes no rates). The batch is
  // valid until the next call.
  const model::SampleBatch& SampleOnce(int64_t t_ms, int64_t mono_ns);

  const DegradedCounters& degraded() const { return degraded_; }
  int gpu_count() const { return gpu_ != nullptr ? gpu_->gpu_count() : 0; }
  const std::string& host() const { return host_; }
  const std::string& disk_path() const { return disk_path_; }
  const ProcessTree& process_tree() const { return *tree_; }
  const SeriesTable& series() const { return table_; }

 private:
  Sampler(const ProfilerOptions& options, pid_t root_pid);
  struct JobResult {
    bool has_cpu = false;
    double cpu_percent = 0;
    bool has_cgroup_memory_limit = false;
    double cgroup_memory_percent = 0;
  };
  void SampleJob(const TickContext& ctx, JobResult* out);

  ProfilerOptions options_;
  pid_t root_pid_;
  std::string host_;
  std::string disk_path_;
  double ticks_per_s_;
  DegradedCounters degraded_;
  SeriesTable table_;
  std::unique_ptr<HostSampler> host_sampler_;
  std::unique_ptr<ProcessTree> tree_;
  std::unique_ptr<CgroupReader> cgroup_;
  std::unique_ptr<GpuSampler> gpu_;
  bool gpu_initialised_ = false;
  int64_t last_mono_ns_ = 0;
  bool have_last_ = false;
  CgroupSnapshot cgroup_prev_;
  bool cgroup_have_prev_ = false;
  // SageMaker series.
  Slot sm_cpu_, sm_memory_, sm_gpu_, sm_gpu_memory_, sm_disk_;
  // Job series.
  Slot job_cpu_, job_user_, job_system_, job_rss_, job_threads_, job_processes_, job_read_,
      job_write_, job_rchar_, job_wchar_;
  Slot cg_cpu_, cg_thr_periods_, cg_thr_percent_, cg_thr_time_, cg_mem_used_, cg_mem_limit_,
      cg_mem_util_, cg_high_, cg_max_, cg_oom_, cg_oom_kill_;
};

}  // namespace trainwatch::profiler
