#pragma once
// What a profiled training job produces, for the rules benchmarks: one host's
// profiler batch per tick (the series the profiler publishes, those the rules
// read and the others they skip), the job's log metrics and its output lines,
// with plausible, deterministic values (a healthy job: busy GPUs, loss going
// down), and the job record with the default rule set.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/job_events.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "profiler/metric_names.h"
#include "rules/config.h"

namespace trainwatch::bench {

inline constexpr int64_t kT0 = 1736942400000;  // 2025-01-15 12:00 UTC

// Deterministic noise in [0, 1).
class Noise {
 public:
  explicit Noise(uint64_t seed) : x_(seed * 2654435761u + 1) {}
  double Next() {
    x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x_ >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t x_;
};

inline model::SeriesKey Key(std::string_view ns, std::string_view metric,
                            std::vector<model::Dimension> dims, std::string_view unit = "None") {
  return *model::MakeSeriesKey(std::string(ns), std::string(metric), std::move(dims),
                               std::string(unit));
}

// One job's record as `trainwatch run` writes it: 20 metric definitions plus
// "step", the default rule set, profiled every `profile_ms`.
inline model::JobRecord MakeJob(const std::string& name, int64_t creation_ms, int64_t profile_ms) {
  model::JobRecord job;
  job.name = name;
  job.arn = model::TrainingJobArn(name);
  job.status = model::JobStatus::kInProgress;
  job.creation_ms = job.last_modified_ms = creation_ms;
  job.training_start_ms = creation_ms;
  job.profiling_interval_ms = profile_ms;
  job.log_stream = name + "/algo-1-" + std::to_string(creation_ms / 1000);
  for (int i = 0; i < 20; ++i) {
    job.metric_definitions.push_back({"m" + std::to_string(i), "m" + std::to_string(i) + "=(\\S+)"});
  }
  job.metric_definitions.push_back({"step", "step (\\d+)"});
  job.step_metric = "step";
  job.rule_configurations = rules::DefaultRuleConfigurations();
  return job;
}

// The series one host's profiler publishes every tick, in the profiler's
// shape: {Host, Core} x 5 per core, {Host} CPU, memory, load and process
// metrics, {Host, GPU} x 10 per GPU. The rules read 2 per core, 4 per host
// and 4 per GPU; the others they skip.
struct ProfilerSeries {
  enum Kind { kCoreCpu, kCoreIoWait, kHostCpu, kJobCpu, kJobProcs, kCores, kGpuUtil, kGpuMemUtil,
              kGpuMemUsed, kGpuMemTotal, kOther };
  model::SeriesKey key;
  Kind kind;
  int index;
};

inline std::vector<ProfilerSeries> HostSeries(const std::string& job, int cores, int gpus,
                                              bool with_skipped = true) {
  namespace pm = profiler::metric;
  const std::string ns(profiler::kProfilerNamespace);
  const std::string host = job + "/algo-1";
  std::vector<ProfilerSeries> out;
  auto host_dims = [&] { return std::vector<model::Dimension>{{"Host", host}}; };
  for (int c = 0; c < cores; ++c) {
    auto dims = [&] {
      return std::vector<model::Dimension>{{"Core", std::to_string(c)}, {"Host", host}};
    };
    out.push_back({Key(ns, pm::kHostCPUUtilization, dims(), "Percent"), ProfilerSeries::kCoreCpu, c});
    out.push_back({Key(ns, pm::kCPUIOWait, dims(), "Percent"), ProfilerSeries::kCoreIoWait, c});
    if (with_skipped) {
      for (std::string_view m : {pm::kCPUUser, pm::kCPUSystem, pm::kCPUSteal}) {
        out.push_back({Key(ns, m, dims(), "Percent"), ProfilerSeries::kOther, c});
      }
    }
  }
  out.push_back({Key(ns, pm::kHostCPUUtilization, host_dims(), "Percent"), ProfilerSeries::kHostCpu, -1});
  out.push_back({Key(ns, pm::kJobCPU, host_dims(), "Percent"), ProfilerSeries::kJobCpu, -1});
  out.push_back({Key(ns, pm::kJobProcesses, host_dims(), "Count"), ProfilerSeries::kJobProcs, -1});
  out.push_back({Key(ns, pm::kCPUCores, host_dims(), "Count"), ProfilerSeries::kCores, -1});
  if (with_skipped) {
    for (std::string_view m :
         {pm::kCPUUser, pm::kCPUSystem, pm::kCPUIOWait, pm::kCPUSteal, pm::kMemoryTotal,
          pm::kMemoryUsed, pm::kMemoryAvailable, pm::kMemoryPageCache, pm::kMemoryUsedPercent,
          pm::kSwapUsed, pm::kDiskReadBytes, pm::kDiskWriteBytes, pm::kNetRxBytes, pm::kNetTxBytes,
          pm::kLoad1, pm::kRunnableTasks, pm::kPressureCPUSome, pm::kPressureIOSome, pm::kJobRSS,
          pm::kJobThreads, pm::kJobCPUUser, pm::kJobCPUSystem}) {
      out.push_back({Key(ns, m, host_dims()), ProfilerSeries::kOther, -1});
    }
  }
  for (int g = 0; g < gpus; ++g) {
    auto dims = [&] {
      return std::vector<model::Dimension>{{"GPU", std::to_string(g)}, {"Host", host}};
    };
    out.push_back({Key(ns, pm::kGpuUtil, dims(), "Percent"), ProfilerSeries::kGpuUtil, g});
    out.push_back({Key(ns, pm::kGpuMemUtil, dims(), "Percent"), ProfilerSeries::kGpuMemUtil, g});
    out.push_back({Key(ns, pm::kGpuMemUsed, dims(), "Bytes"), ProfilerSeries::kGpuMemUsed, g});
    out.push_back({Key(ns, pm::kGpuMemTotal, dims(), "Bytes"), ProfilerSeries::kGpuMemTotal, g});
    if (with_skipped) {
      for (std::string_view m : {pm::kGpuMemCtrlUtil, pm::kGpuPower, pm::kGpuTemperature,
                                 pm::kGpuSmClock, pm::kGpuPcieTx, pm::kGpuPcieRx}) {
        out.push_back({Key(ns, m, dims()), ProfilerSeries::kOther, g});
      }
    }
  }
  return out;
}

// A healthy, busy host: cores 60-90 %, little I/O wait, GPUs 85-98 %, GPU
// memory flat at about 60 %, 4 data-loader workers. `starved`: the input
// pipeline is the bottleneck (cores 95-100 %, GPUs 5-15 %).
inline double ProfilerValue(const ProfilerSeries& s, int cores, Noise& noise,
                            bool starved = false) {
  constexpr double kGpuTotal = 80e9;
  if (starved && s.kind == ProfilerSeries::kCoreCpu) return 95 + 5 * noise.Next();
  if (starved && s.kind == ProfilerSeries::kGpuUtil) return 5 + 10 * noise.Next();
  switch (s.kind) {
    case ProfilerSeries::kCoreCpu: return 60 + 30 * noise.Next();
    case ProfilerSeries::kCoreIoWait: return 2 * noise.Next();
    case ProfilerSeries::kHostCpu: return 70 + 10 * noise.Next();
    case ProfilerSeries::kJobCpu: return cores * (60 + 10 * noise.Next());
    case ProfilerSeries::kJobProcs: return 5;
    case ProfilerSeries::kCores: return cores;
    case ProfilerSeries::kGpuUtil: return 85 + 13 * noise.Next();
    case ProfilerSeries::kGpuMemUtil: return 60 + noise.Next();
    case ProfilerSeries::kGpuMemUsed: return kGpuTotal * (0.6 + 0.01 * noise.Next());
    case ProfilerSeries::kGpuMemTotal: return kGpuTotal;
    case ProfilerSeries::kOther: return 1000 * noise.Next();
  }
  return 0;
}

// The job's log metrics: m0 a loss going down, the others noise around
// their own levels; "step" the line number.
inline std::vector<model::SeriesKey> MetricKeys(const std::string& job) {
  std::vector<model::SeriesKey> out;
  for (int i = 0; i < 20; ++i) {
    out.push_back(Key(model::kTrainingJobsNamespace, "m" + std::to_string(i),
                      {{std::string(model::kTrainingJobNameDim), job}}));
  }
  out.push_back(Key(model::kTrainingJobsNamespace, "step",
                    {{std::string(model::kTrainingJobNameDim), job}}));
  return out;
}

inline double MetricValue(size_t i, int64_t line, double elapsed_s, Noise& noise) {
  if (i == 20) return static_cast<double>(line);  // step
  if (i == 0) return 2.0 / (1.0 + elapsed_s / 600.0) + 0.01 * noise.Next();
  return static_cast<double>(i) + noise.Next();
}

}  // namespace trainwatch::bench
