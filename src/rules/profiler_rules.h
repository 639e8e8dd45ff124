#pragma once
// Rules over the profiler's system metrics (spec/rules.md §6, with the fixes of
// §9.6/§10.3). Each is a Params/State pair and its OnInput/OnEnd (rules/rule.h);
// ProfilerRuleInfos() (rules/catalog.h) lists them with their parameters.
//
// Default profile: windows and patience are seconds of data time, statistics
// are over sliding windows and robust; each subject (a host, a GPU, a pair of
// GPUs) is decided at most once per second of data time. A finding is
// reported when its condition starts; the rule reports it again only after
// the condition has cleared. Params::compat (the sagemaker_compat profile)
// reproduces what SageMaker shipped: window and patience counted in samples,
// cumulative ratios, mean + k·σ step outliers, a 49-bin LoadBalancing
// histogram and GPUMemoryIncrease's overlapping means.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rules/params.h"
#include "rules/profiler_common.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// (host, GPU or core index)
using DeviceKey = std::pair<int, int>;

// CPUBottleneck (§6.1) and IOBottleneck (§6.2): the GPUs idle while the CPU
// (I/O wait) is high, in more than `threshold` % of the snapshots. A snapshot
// is one host's samples of one sample time; it is low-GPU when any GPU is
// below gpu_threshold, and busy when the mean over the cores (the host CPU
// when reported) is at least busy_threshold or at least min_busy_cores cores
// (all of them on a smaller host) are above it.
struct BottleneckParams {
  bool io = false;  // IOBottleneck
  bool compat = false;  // busy = any core > threshold; ratio since the start
  double threshold = 50;
  double gpu_threshold = 10;
  double busy_threshold = 90;  // cpu_threshold, or io_threshold
  int64_t min_busy_cores = 4;
  prof::Span span{false, 250, 500};
};
struct BottleneckState {
  struct Host {
    prof::SnapshotAssembler snapshots;
    std::deque<std::pair<int64_t, bool>> window;  // (t, bottleneck) in the window
    int64_t window_bottlenecks = 0;
    int64_t count = 0;        // snapshots since the start
    int64_t bottlenecks = 0;  // bottlenecks since the start
    int64_t first_ms = 0;
    int64_t last_eval = INT64_MIN;
    bool firing = false;
  };
  std::map<int, Host> hosts;
  bool saw_gpu = false;
  bool saw_busy = false;
};
BottleneckParams MakeBottleneckParams(const ParamValues& values, bool io);
Verdict OnInput(const BottleneckParams& p, BottleneckState& s, const Input& in);
Verdict OnEnd(const BottleneckParams& p, BottleneckState& s, int64_t end_ms);

// LowGPUUtilization (§6.3): per GPU over the window: "unused" when its
// maximum is 0, "underutilized" when p95 < threshold_p95, "fluctuating" when
// p95 > threshold_p95 and p5 < threshold_p5.
struct LowGpuParams {
  bool compat = false;
  double threshold_p95 = 70;
  double threshold_p5 = 10;
  prof::Span span{false, 250, 500};
};
struct LowGpuState {
  struct Gpu {
    prof::Series util;
    int64_t last_eval = INT64_MIN;
    std::string firing;  // the reason reported and not cleared since
  };
  std::map<DeviceKey, Gpu> gpus;
};
LowGpuParams MakeLowGpuParams(const ParamValues& values);
Verdict OnInput(const LowGpuParams& p, LowGpuState& s, const Input& in);
Verdict OnEnd(const LowGpuParams& p, LowGpuState& s, int64_t end_ms);

// BatchSize (§6.4): the host CPU's p95 is below cpu_threshold_p95 and a GPU's
// utilisation and memory p95 are below theirs: the batch could be bigger.
struct BatchSizeParams {
  bool compat = false;
  double cpu_threshold_p95 = 70;
  double gpu_threshold_p95 = 70;
  double gpu_memory_threshold_p95 = 70;
  prof::Span span{false, 250, 500};
};
struct BatchSizeState {
  struct Host {
    prof::SnapshotAssembler snapshots;
    prof::Series cpu;  // host CPU per snapshot
    int64_t last_eval = INT64_MIN;
  };
  struct Gpu {
    prof::Series util;
    prof::Series memory;
    bool firing = false;
  };
  std::map<int, Host> hosts;
  std::map<DeviceKey, Gpu> gpus;
};
BatchSizeParams MakeBatchSizeParams(const ParamValues& values);
Verdict OnInput(const BatchSizeParams& p, BatchSizeState& s, const Input& in);
Verdict OnEnd(const BatchSizeParams& p, BatchSizeState& s, int64_t end_ms);

// GPUMemoryIncrease (§6.5, §10.3): the Theil–Sen slope of a GPU's memory over
// the window, in percentage points per 10 minutes, above `increase`. The
// window is cut into 60 buckets (at least 1 s each) and the slope is taken
// over the bucket means, so one evaluation costs at most 1770 pair slopes.
struct GpuMemoryParams {
  bool compat = false;  // SageMaker's overlapping means over samples
  double increase = 5;
  prof::Span span{false, 600, 500};
};
struct GpuMemoryState {
  struct Bucket {
    int64_t id = 0;
    double t_sum = 0, pct_sum = 0, bytes_t_sum = 0, bytes_sum = 0;
    int pct_n = 0, bytes_n = 0;
  };
  struct Gpu {
    std::deque<Bucket> buckets;
    int64_t first_ms = 0;
    int64_t count = 0;
    int64_t last_eval = INT64_MIN;
    bool saw_percent = false;
    double last_pct = 0, last_used = 0, total = 0;
    std::deque<double> recent;  // compat: the last window + 1 values
    bool firing = false;
  };
  std::map<DeviceKey, Gpu> gpus;
};
GpuMemoryParams MakeGpuMemoryParams(const ParamValues& values);
Verdict OnInput(const GpuMemoryParams& p, GpuMemoryState& s, const Input& in);
Verdict OnEnd(const GpuMemoryParams& p, GpuMemoryState& s, int64_t end_ms);

// LoadBalancing (§6.6): the Jensen–Shannon distance between two GPUs' (of one
// host) utilisation histograms since the start is above `threshold`. 50 bins
// of 2 points over 0–100 inclusive (100 % lands in the last bin); compat: 49
// bins over 0–98, values above 98 dropped, as SageMaker.
struct LoadBalancingParams {
  bool compat = false;
  double threshold = 0.5;
  prof::Span span{false, 0, 500};
};
struct LoadBalancingState {
  struct Gpu {
    std::array<int64_t, 50> bins{};
    int64_t count = 0;
    double sum = 0;
    int64_t first_ms = 0, last_ms = 0;
  };
  struct Host {
    std::map<int, Gpu> gpus;
    int64_t last_eval = INT64_MIN;
    std::set<std::pair<int, int>> firing;
  };
  std::map<int, Host> hosts;
};
LoadBalancingParams MakeLoadBalancingParams(const ParamValues& values);
Verdict OnInput(const LoadBalancingParams& p, LoadBalancingState& s, const Input& in);
Verdict OnEnd(const LoadBalancingParams& p, LoadBalancingState& s, int64_t end_ms);

// Dataloader (§6.7) without framework events: the data-loader workers are the
// job's processes minus the main one (kJobProcesses − 1); their median over
// the window against the host's cores (kCpuCores).
struct DataloaderParams {
  bool compat = false;  // median since the start; patience in samples
  double min_threshold = 70;
  double max_threshold = 200;
  prof::Span span{false, 300, 10};
};
struct DataloaderState {
  struct Host {
    prof::Series workers;
    double cores = 0;
    int64_t last_eval = INT64_MIN;
    std::string firing;
  };
  std::map<int, Host> hosts;
  bool saw_processes = false;
  bool saw_cores = false;
  bool saw_workers = false;  // more than one process in the job's tree, once
};
DataloaderParams MakeDataloaderParams(const ParamValues& values);
Verdict OnInput(const DataloaderParams& p, DataloaderState& s, const Input& in);
Verdict OnEnd(const DataloaderParams& p, DataloaderState& s, int64_t end_ms);

// MaxInitializationTime (§6.8): no step within `threshold` of the job's first
// data. Decided on kTick as well, so a start that hangs is caught without
// further data.
struct MaxInitParams {
  double threshold_s = 1200;
};
struct MaxInitState {
  bool started = false;
  int64_t first_ms = 0;
  bool saw_step = false;
  bool fired = false;
};
MaxInitParams MakeMaxInitParams(const ParamValues& values);
Verdict OnInput(const MaxInitParams& p, MaxInitState& s, const Input& in);
Verdict OnEnd(const MaxInitParams& p, MaxInitState& s, int64_t end_ms);

// StepOutlier (§6.9): step durations from consecutive kStep inputs (the time
// between two steps divided by the steps between them), warm-up excluded;
// outliers are beyond median ± stddev·1.4826·MAD (the spread is at least 1 %
// of the median, so identical durations do not make every change an
// outlier): "slow_steps" and "fast_steps" when more than n_outliers.
// compat: mean + stddev·σ over all durations, slow tail only. Both keep the
// last kMaxStepDurations durations.
inline constexpr size_t kMaxStepDurations = 20000;
struct StepOutlierParams {
  bool compat = false;
  double stddev = 3;
  int64_t n_outliers = 10;
  int64_t warmup_steps = 10;
  int64_t min_steps = 100;
};
struct StepOutlierState {
  struct Host {
    int64_t first_step = -1;
    int64_t last_step = -1;
    int64_t last_ms = 0;
    std::deque<std::pair<int64_t, double>> durations;  // (step, seconds), the most recent
    prof::OrderStatistics sorted;  // the durations, seq = first_seq + index in durations
    uint64_t first_seq = 0;
    int64_t last_eval = INT64_MIN;
    bool firing_slow = false, firing_fast = false;
  };
  std::map<int, Host> hosts;
  bool saw_step = false;
};
StepOutlierParams MakeStepOutlierParams(const ParamValues& values);
Verdict OnInput(const StepOutlierParams& p, StepOutlierState& s, const Input& in);
Verdict OnEnd(const StepOutlierParams& p, StepOutlierState& s, int64_t end_ms);

// Straggler (beyond Debugger): in a job on several hosts, one host advances
// through its steps much slower than the others (its own step metric values,
// kHostStep). Every second of data time, each host's rate is its steps over
// the last `window_s` (a host that made none while the others advanced has
// rate 0); a host whose rate is more than `threshold` percent below the
// median of the other hosts' is a straggler. Needs steps from two hosts; a
// job on one host passes without a word.
struct StragglerParams {
  double threshold = 20;   // percent below the other hosts' median rate
  double window_s = 120;
};
struct StragglerState {
  struct Host {
    std::deque<std::pair<int64_t, double>> steps;  // (t_ms, step) over the window
    int64_t first_ms = 0;
    bool firing = false;
  };
  std::map<int, Host> hosts;
  int64_t last_eval = INT64_MIN;
};
StragglerParams MakeStragglerParams(const ParamValues& values);
Verdict OnInput(const StragglerParams& p, StragglerState& s, const Input& in);
Verdict OnEnd(const StragglerParams& p, StragglerState& s, int64_t end_ms);

// NoProgress (beyond Debugger): the job's processes use less than
// cpu_threshold CPU and every GPU is below gpu_threshold for `threshold`
// seconds while the job runs. Decided on kTick as well.
struct NoProgressParams {
  double threshold_s = 600;
  double cpu_threshold = 1;
  double gpu_threshold = 1;
};
struct NoProgressState {
  struct Host {
    int64_t idle_since = INT64_MIN;  // INT64_MIN: active, or not known to be idle
    bool fired = false;
  };
  std::map<int, Host> hosts;
  bool saw_job_cpu = false;
};
NoProgressParams MakeNoProgressParams(const ParamValues& values);
Verdict OnInput(const NoProgressParams& p, NoProgressState& s, const Input& in);
Verdict OnEnd(const NoProgressParams& p, NoProgressState& s, int64_t end_ms);

}  // namespace trainwatch::rules
