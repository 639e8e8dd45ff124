#include "profiler/sampler.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "profiler/metric_names.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::profiler {
namespace {

namespace m = metric;

uint64_t Delta(uint64_t now, uint64_t prev) { return now >= prev ? now - prev : 0; }

// How often every thread of the job is asked for its children (the leader
// thread is asked every tick). Listing a job's threads is the profiler's
// largest cost on jobs with hundreds of threads (BENCHMARKS.md).
constexpr int64_t kAllThreadsScanMs = 5000;

// readlink <proc_root>/<pid>/cwd, or "" when unknown.
std::string WorkingDirectory(const std::string& proc_root, pid_t pid) {
  std::string link = absl::StrFormat("%s/%d/cwd", proc_root, pid);
  char buf[PATH_MAX];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf));
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof(buf))) return "";
  return std::string(buf, n);
}

}  // namespace

std::string HostDimensionValue(std::string_view job_name, int host_index) {
  return absl::StrFormat("%s/algo-%d", std::string(job_name), host_index);
}

Sampler::Sampler(const ProfilerOptions& options, pid_t root_pid)
    : options_(options),
      root_pid_(root_pid),
      host_(HostDimensionValue(options.job_name, options.host_index)),
      ticks_per_s_(static_cast<double>(::sysconf(_SC_CLK_TCK))) {}

Sampler::~Sampler() = default;

absl::StatusOr<std::unique_ptr<Sampler>> Sampler::Create(const ProfilerOptions& options,
                                                         pid_t root_pid) {
  TW_RETURN_IF_ERROR(ValidateProfileInterval(options.interval_ms));
  if (options.job_name.empty()) {
    return absl::InvalidArgumentError("profiler: job name is empty; the Host dimension needs it");
  }
  if (options.host_index < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "profiler: host index %d: want 1 or more (Host = <job>/algo-<n>)", options.host_index));
  }
  if (root_pid <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("profiler: root pid %d: want the training process's pid", root_pid));
  }
  std::unique_ptr<Sampler> s(new Sampler(options, root_pid));
  s->disk_path_ =
      options.disk_path.empty() ? WorkingDirectory(options.proc_root, root_pid) : options.disk_path;
  TW_ASSIGN_OR_RETURN(s->host_sampler_, HostSampler::Create(options, s->host_, s->disk_path_,
                                                            &s->table_, &s->degraded_));
  // The leader thread's children every tick; every thread's every 5 s (a
  // child found late still has all its CPU counted; see process_tree.h).
  int full_scan_every =
      static_cast<int>(std::max<int64_t>(1, kAllThreadsScanMs / options.interval_ms));
  s->tree_ =
      std::make_unique<ProcessTree>(options.proc_root, root_pid, &s->degraded_, full_scan_every);
  s->cgroup_ =
      std::make_unique<CgroupReader>(options.proc_root, options.sys_root, root_pid, &s->degraded_);

  SeriesTable& t = s->table_;
  const std::vector<model::Dimension> host_dim = {{std::string(kHostDim), s->host_}};
  auto sm = [&](std::string_view name) {
    return t.Add(kSageMakerNamespace, name, host_dim, kPercent);
  };
  s->sm_cpu_ = sm(m::kCPUUtilization);
  s->sm_memory_ = sm(m::kMemoryUtilization);
  s->sm_gpu_ = sm(m::kGPUUtilization);
  s->sm_gpu_memory_ = sm(m::kGPUMemoryUtilization);
  s->sm_disk_ = sm(m::kDiskUtilization);
  auto tw = [&](std::string_view name, std::string_view unit) {
    return t.Add(kProfilerNamespace, name, host_dim, unit);
  };
  s->job_cpu_ = tw(m::kJobCPU, kPercent);
  s->job_user_ = tw(m::kJobCPUUser, kPercent);
  s->job_system_ = tw(m::kJobCPUSystem, kPercent);
  s->job_rss_ = tw(m::kJobRSS, kBytes);
  s->job_threads_ = tw(m::kJobThreads, kCount);
  s->job_processes_ = tw(m::kJobProcesses, kCount);
  s->job_read_ = tw(m::kJobDiskReadBytes, kBytesPerSecond);
  s->job_write_ = tw(m::kJobDiskWriteBytes, kBytesPerSecond);
  s->job_rchar_ = tw(m::kJobIOReadBytes, kBytesPerSecond);
  s->job_wchar_ = tw(m::kJobIOWriteBytes, kBytesPerSecond);
  if (s->cgroup_->active()) {
    s->cg_cpu_ = tw(m::kCgroupCPU, kPercent);
    s->cg_thr_periods_ = tw(m::kCgroupThrottledPeriods, kCount);
    s->cg_thr_percent_ = tw(m::kCgroupThrottledPercent, kPercent);
    s->cg_thr_time_ = tw(m::kCgroupThrottledTime, kMicroseconds);
    s->cg_mem_used_ = tw(m::kCgroupMemoryUsed, kBytes);
    s->cg_mem_limit_ = tw(m::kCgroupMemoryLimit, kBytes);
    s->cg_mem_util_ = tw(m::kCgroupMemoryUtilization, kPercent);
    s->cg_high_ = tw(m::kCgroupMemoryHighEvents, kCount);
    s->cg_max_ = tw(m::kCgroupMemoryMaxEvents, kCount);
    s->cg_oom_ = tw(m::kCgroupOOMEvents, kCount);
    s->cg_oom_kill_ = tw(m::kCgroupOOMKills, kCount);
  }
  return s;
}

void Sampler::InitGpu() {
  if (gpu_initialised_) return;
  gpu_initialised_ = true;
  if (options_.nvml_library.empty()) return;
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Load(options_.nvml_library);
  if (!lib.ok()) {
    ++degraded_.nvml_unavailable;
    util::LogOnce("profiler.nvml-unavailable",
                  absl::StrFormat("profiler: no GPU metrics: %s", lib.status().message()));
    return;
  }
  gpu_ = std::make_unique<GpuSampler>(*std::move(lib), &table_, host_, options_, &degraded_);
}

void Sampler::SampleJob(const TickContext& ctx, JobResult* out) {
  const int64_t t = ctx.t_ms;
  JobSnapshot job;
  tree_->Refresh(&job);
  table_.Emit(job_processes_, t, job.processes);
  table_.Emit(job_threads_, t, static_cast<double>(job.threads));
  table_.Emit(job_rss_, t, static_cast<double>(job.rss_bytes));
  if (ctx.has_rates()) {
    double k = 100.0 / (ticks_per_s_ * ctx.dt_s);  // ticks -> % of one core
    double user = static_cast<double>(job.delta.user_ticks) * k;
    double system = static_cast<double>(job.delta.system_ticks) * k;
    out->has_cpu = true;
    out->cpu_percent = user + system;
    table_.Emit(job_cpu_, t, user + system);
    table_.Emit(job_user_, t, user);
    table_.Emit(job_system_, t, system);
    table_.Emit(job_read_, t, static_cast<double>(job.delta.read_bytes) / ctx.dt_s);
    table_.Emit(job_write_, t, static_cast<double>(job.delta.write_bytes) / ctx.dt_s);
    table_.Emit(job_rchar_, t, static_cast<double>(job.delta.rchar) / ctx.dt_s);
    table_.Emit(job_wchar_, t, static_cast<double>(job.delta.wchar) / ctx.dt_s);
  }

  if (!cgroup_->active()) return;
  CgroupSnapshot cg;
  cgroup_->Read(&cg);
  if (cg.has_memory) {
    table_.Emit(cg_mem_used_, t, static_cast<double>(cg.memory_current_bytes));
    if (cg.memory_max_bytes != UINT64_MAX && cg.memory_max_bytes > 0) {
      // As docker stats: inactive file pages are reclaimable, not "used".
      double used = static_cast<double>(Delta(cg.memory_current_bytes, cg.inactive_file_bytes));
      out->has_cgroup_memory_limit = true;
      out->cgroup_memory_percent = 100.0 * used / static_cast<double>(cg.memory_max_bytes);
      table_.Emit(cg_mem_limit_, t, static_cast<double>(cg.memory_max_bytes));
      table_.Emit(cg_mem_util_, t, out->cgroup_memory_percent);
    }
  }
  if (ctx.has_rates() && cgroup_have_prev_) {
    const CgroupSnapshot& p = cgroup_prev_;
    if (cg.has_cpu && p.has_cpu) {
      table_.Emit(cg_cpu_, t,
                  Delta(cg.cpu.usage_usec, p.cpu.usage_usec) * 100.0 / (ctx.dt_s * 1e6));
      if (cg.cpu.has_throttling && p.cpu.has_throttling) {
        uint64_t periods = Delta(cg.cpu.nr_periods, p.cpu.nr_periods);
        uint64_t throttled = Delta(cg.cpu.nr_throttled, p.cpu.nr_throttled);
        table_.Emit(cg_thr_periods_, t, static_cast<double>(throttled));
        table_.Emit(cg_thr_percent_, t,
                    periods > 0 ? 100.0 * static_cast<double>(throttled) / periods : 0.0);
        table_.Emit(cg_thr_time_, t,
                    static_cast<double>(Delta(cg.cpu.throttled_usec, p.cpu.throttled_usec)));
      }
    }
    if (cg.has_events && p.has_events) {
      table_.Emit(cg_high_, t, static_cast<double>(Delta(cg.events.high, p.events.high)));
      table_.Emit(cg_max_, t, static_cast<double>(Delta(cg.events.max, p.events.max)));
      table_.Emit(cg_oom_, t, static_cast<double>(Delta(cg.events.oom, p.events.oom)));
      table_.Emit(cg_oom_kill_, t,
                  static_cast<double>(Delta(cg.events.oom_kill, p.events.oom_kill)));
    }
  }
  cgroup_prev_ = cg;
  cgroup_have_prev_ = true;
}

const model::SampleBatch& Sampler::SampleOnce(int64_t t_ms, int64_t mono_ns) {
  TickContext ctx;
  ctx.t_ms = t_ms;
  ctx.mono_ns = mono_ns;
  if (have_last_ && mono_ns > last_mono_ns_) ctx.dt_s = (mono_ns - last_mono_ns_) / 1e9;
  last_mono_ns_ = mono_ns;
  have_last_ = true;

  table_.Begin();
  HostResult host;
  host_sampler_->Sample(ctx, &host);
  JobResult job;
  SampleJob(ctx, &job);
  GpuTotals gpus;
  if (gpu_ != nullptr) gpu_->Sample(ctx, tree_->pids(), &gpus);

  // SageMaker's instance metrics (spec/aws-api.md §5.1).
  if (job.has_cpu) table_.Emit(sm_cpu_, t_ms, job.cpu_percent);
  if (job.has_cgroup_memory_limit) {
    table_.Emit(sm_memory_, t_ms, job.cgroup_memory_percent);
  } else if (host.has_memory) {
    table_.Emit(sm_memory_, t_ms, host.memory_used_percent);
  }
  if (gpus.has_utilization) table_.Emit(sm_gpu_, t_ms, gpus.utilization_sum);
  if (gpus.has_memory) table_.Emit(sm_gpu_memory_, t_ms, gpus.memory_utilization_sum);
  if (host.has_filesystem) table_.Emit(sm_disk_, t_ms, host.filesystem_used_percent);

  degraded_.nonfinite_dropped = table_.nonfinite_dropped();
  return table_.Finish();
}

}  // namespace trainwatch::profiler
