// The profiler rules' parameters and catalog entries (spec/rules.md §6, §7.2).
// The rules themselves: profiler_rules_cpu.cc, _gpu.cc and _steps.cc.
//
// In the sagemaker_compat profile the numbers mean what they meant to
// SageMaker: `window` and `patience` count samples, and
// MaxInitializationTime's `threshold` is in minutes. A bare number is read
// as seconds otherwise.

#include "rules/profiler_rules.h"

#include "rules/catalog.h"

namespace trainwatch::rules {

namespace {

bool Compat(const ParamValues& v) { return v.profile() == Profile::kSageMakerCompat; }

prof::Span SpanOf(const ParamValues& v) {
  return {Compat(v), v.Seconds("window"), v.Seconds("patience")};
}

constexpr double kDay = 86400;
constexpr double kMaxPatience = 1e7;  // seconds, or samples in sagemaker_compat

constexpr ParamSpec Percent(std::string_view name, std::string_view def, std::string_view help) {
  return {name, ParamType::kNumber, def, "", 0, 100, help};
}
constexpr ParamSpec Patience(std::string_view def, std::string_view compat) {
  return {"patience", ParamType::kSeconds, def, compat, 0, kMaxPatience,
          "warm-up: no decision before this much data (seconds; samples in sagemaker_compat)"};
}
constexpr ParamSpec Window(std::string_view def, std::string_view compat, double min = 1,
                           std::string_view help = "the sliding window the statistics are over "
                                                   "(seconds; samples in sagemaker_compat)") {
  return {"window", ParamType::kSeconds, def, compat, min, kDay, help};
}
constexpr std::string_view kSinceStartInCompat =
    "the sliding window the ratio is over (seconds; sagemaker_compat takes it since the start, "
    "as SageMaker)";

template <class P, class S>
std::function<std::unique_ptr<Rule>(const ParamValues&)> Maker(P (*make)(const ParamValues&)) {
  return [make](const ParamValues& v) -> std::unique_ptr<Rule> {
    return std::make_unique<PureRule<P, S>>(make(v));
  };
}

BottleneckParams MakeCpuBottleneckParams(const ParamValues& v) {
  return MakeBottleneckParams(v, false);
}
BottleneckParams MakeIoBottleneckParams(const ParamValues& v) {
  return MakeBottleneckParams(v, true);
}

}  // namespace

BottleneckParams MakeBottleneckParams(const ParamValues& v, bool io) {
  BottleneckParams p;
  p.io = io;
  p.compat = Compat(v);
  p.threshold = v.Number("threshold");
  p.gpu_threshold = v.Number("gpu_threshold");
  p.busy_threshold = v.Number(io ? "io_threshold" : "cpu_threshold");
  p.min_busy_cores = v.Integer("min_saturated_cores");
  p.span = SpanOf(v);
  return p;
}

LowGpuParams MakeLowGpuParams(const ParamValues& v) {
  return {Compat(v), v.Number("threshold_p95"), v.Number("threshold_p5"), SpanOf(v)};
}

BatchSizeParams MakeBatchSizeParams(const ParamValues& v) {
  return {Compat(v), v.Number("cpu_threshold_p95"), v.Number("gpu_threshold_p95"),
          v.Number("gpu_memory_threshold_p95"), SpanOf(v)};
}

GpuMemoryParams MakeGpuMemoryParams(const ParamValues& v) {
  return {Compat(v), v.Number("increase"), SpanOf(v)};
}

LoadBalancingParams MakeLoadBalancingParams(const ParamValues& v) {
  return {Compat(v), v.Number("threshold"), {Compat(v), 0, v.Seconds("patience")}};
}

DataloaderParams MakeDataloaderParams(const ParamValues& v) {
  DataloaderParams p{Compat(v), v.Number("min_threshold"), v.Number("max_threshold"), SpanOf(v)};
  // SageMaker takes the median of every count since the start (it resets
  // its buffers at 10^6 points).
  if (p.compat) p.span.window = 1e6;
  return p;
}

MaxInitParams MakeMaxInitParams(const ParamValues& v) {
  return {v.Seconds("threshold") * (Compat(v) ? 60 : 1)};
}

StepOutlierParams MakeStepOutlierParams(const ParamValues& v) {
  return {Compat(v), v.Number("stddev"), v.Integer("n_outliers"), v.Integer("warmup_steps"),
          v.Integer("min_steps")};
}

NoProgressParams MakeNoProgressParams(const ParamValues& v) {
  return {v.Seconds("threshold"), v.Number("cpu_threshold"), v.Number("gpu_threshold")};
}

std::vector<RuleInfo> ProfilerRuleInfos() {
  std::vector<RuleInfo> out;
  const auto add = [&](RuleInfo info) { out.push_back(std::move(info)); };
  const ParamSpec kMinSaturated = {
      "min_saturated_cores", ParamType::kInteger, "4", "1", 1, 4096,
      "a sample is busy when at least this many cores (all of them on a smaller host) are at "
      "the threshold or above, even if the mean is below it (sagemaker_compat: 1, any core)"};
  add({.name = "CPUBottleneck",
       .family = RuleFamily::kProfiler,
       .summary = "the GPUs idle while the CPU is saturated (the input pipeline is CPU-bound)",
       .watches = "GPU utilisation per GPU and CPU utilisation per core (or the host's), per "
                  "sample time",
       .params = {Percent("threshold", "50", "percent of the samples in the window that must be "
                                             "bottlenecks (sagemaker_compat: since the start)"),
                  Percent("gpu_threshold", "10", "a GPU below this percent is idle"),
                  Percent("cpu_threshold", "90",
                          "the host CPU (mean over the cores) at or above this percent is busy"),
                  Patience("500", "1000"), Window("250", "", 1, kSinceStartInCompat),
                  kMinSaturated},
       .in_default_set = true,
       .make = Maker<BottleneckParams, BottleneckState>(&MakeCpuBottleneckParams)});
  add({.name = "IOBottleneck",
       .family = RuleFamily::kProfiler,
       .summary = "the GPUs idle while the cores wait on I/O (the input pipeline is I/O-bound)",
       .watches = "GPU utilisation per GPU and I/O wait per core, per sample time",
       .params = {Percent("threshold", "50", "percent of the samples in the window that must be "
                                             "bottlenecks (sagemaker_compat: since the start)"),
                  Percent("gpu_threshold", "10", "a GPU below this percent is idle"),
                  Percent("io_threshold", "50",
                          "the mean I/O wait over the cores at or above this percent is busy"),
                  Patience("500", "1000"), Window("250", "", 1, kSinceStartInCompat),
                  kMinSaturated},
       .in_default_set = true,
       .make = Maker<BottleneckParams, BottleneckState>(&MakeIoBottleneckParams)});
  add({.name = "LowGPUUtilization",
       .family = RuleFamily::kProfiler,
       .summary = "a GPU is unused, under-used (low p95) or fluctuating (high p95, low p5)",
       .watches = "GPU utilisation per GPU",
       .params = {Percent("threshold_p95", "70", "a GPU whose p95 is below this is under-used"),
                  Percent("threshold_p5", "10",
                          "a GPU with p95 above threshold_p95 and p5 below this fluctuates"),
                  Window("250", "500"), Patience("500", "1000")},
       .in_default_set = true,
       .make = Maker<LowGpuParams, LowGpuState>(&MakeLowGpuParams)});
  add({.name = "BatchSize",
       .family = RuleFamily::kProfiler,
       .summary = "GPU and CPU both have room to spare: the batch could be bigger",
       .watches = "host CPU utilisation, GPU utilisation and GPU memory utilisation per GPU",
       .params = {Percent("cpu_threshold_p95", "70", "the host CPU's p95 must be below this"),
                  Percent("gpu_threshold_p95", "70", "the GPU utilisation's p95 must be below this"),
                  Percent("gpu_memory_threshold_p95", "70",
                          "the GPU memory utilisation's p95 must be below this"),
                  Patience("500", "1000"), Window("250", "500")},
       .in_default_set = true,
       .make = Maker<BatchSizeParams, BatchSizeState>(&MakeBatchSizeParams)});
  add({.name = "GPUMemoryIncrease",
       .family = RuleFamily::kProfiler,
       .summary = "a GPU's memory keeps growing (a leak), with the projected time to full",
       .watches = "GPU memory utilisation per GPU, and memory used/total in bytes when reported",
       .params = {{"increase", ParamType::kNumber, "5", "", 0, 100,
                   "percentage points per 10 minutes (Theil-Sen slope over the window); in "
                   "sagemaker_compat, points between the means of the last `window` samples"},
                  Patience("500", "1000"), Window("600", "10", 2)},
       .in_default_set = true,
       .make = Maker<GpuMemoryParams, GpuMemoryState>(&MakeGpuMemoryParams)});
  add({.name = "LoadBalancing",
       .family = RuleFamily::kProfiler,
       .summary = "the GPUs of a host are used unevenly (their utilisation histograms differ)",
       .watches = "GPU utilisation per GPU: histograms since the start, compared per pair",
       .params = {{"threshold", ParamType::kNumber, "0.5", "", 0, 1,
                   "Jensen-Shannon distance (natural log, at most 0.83) between two GPUs' "
                   "histograms above which they are unbalanced"},
                  Patience("500", "1000")},
       .in_default_set = true,
       .make = Maker<LoadBalancingParams, LoadBalancingState>(&MakeLoadBalancingParams)});
  add({.name = "Dataloader",
       .family = RuleFamily::kProfiler,
       .summary = "too few or too many data-loader workers for the host's cores",
       .watches = "the job's processes minus its main one, taken as its data-loader workers "
                  "(no framework events), against the host's CPU cores",
       .params = {{"min_threshold", ParamType::kNumber, "70", "", 0, 10000,
                   "fewer workers than this percent of the cores is too few"},
                  {"max_threshold", ParamType::kNumber, "200", "", 0, 10000,
                   "more workers than this percent of the cores is too many"},
                  Patience("10", ""),
                  Window("300", "", 1,
                         "the sliding window the median is over (seconds; sagemaker_compat takes "
                         "it since the start, as SageMaker)")},
       .in_default_set = true,
       .make = Maker<DataloaderParams, DataloaderState>(&MakeDataloaderParams)});
  add({.name = "MaxInitializationTime",
       .family = RuleFamily::kProfiler,
       .summary = "the training loop does not start (no step) within the threshold",
       .watches = "the job's first data and its steps (the step metric); the clock",
       .params = {{"threshold", ParamType::kSeconds, "20m", "20", 1, 7 * kDay,
                   "longest time from the job's first data to its first step (in "
                   "sagemaker_compat, minutes, as SageMaker)"}},
       .in_default_set = true,
       .needs_steps = true,
       .make = Maker<MaxInitParams, MaxInitState>(&MakeMaxInitParams)});
  add({.name = "StepOutlier",
       .family = RuleFamily::kProfiler,
       .summary = "more than n_outliers steps much slower (or faster) than the median step",
       .watches = "step durations from consecutive steps of the step metric",
       .params = {{"stddev", ParamType::kNumber, "3", "", 0.1, 100,
                   "outliers lie beyond median +/- stddev x 1.4826 x MAD (sagemaker_compat: "
                   "mean + stddev x standard deviation, slow side only)"},
                  {"n_outliers", ParamType::kInteger, "10", "", 0, 1e9,
                   "more outlier steps than this is an issue"},
                  {"warmup_steps", ParamType::kInteger, "10", "0", 0, 1e9,
                   "the first steps, left out (compilation, warm-up)"},
                  {"min_steps", ParamType::kInteger, "100", "", 1, 1e9,
                   "step durations needed before deciding"}},
       .in_default_set = true,
       .needs_steps = true,
       .make = Maker<StepOutlierParams, StepOutlierState>(&MakeStepOutlierParams)});
  add({.name = "Straggler",
       .family = RuleFamily::kProfiler,
       .summary = "one host of a multi-host job advances through its steps much slower than "
                  "the others",
       .watches = "each host's own step metric values (Host = <job>/algo-<n>), as steps per "
                  "second over the window",
       .params = {Percent("threshold", "20",
                          "a host whose step rate is more than this percent below the median "
                          "of the other hosts' is a straggler"),
                  {"window", ParamType::kSeconds, "120", "", 5, 7 * kDay,
                   "the rates are over this much data time; each host's first window is "
                   "waited for"}},
       .in_default_set = true,
       .needs_steps = true,
       .make = Maker<StragglerParams, StragglerState>(&MakeStragglerParams)});
  add({.name = "NoProgress",
       .family = RuleFamily::kProfiler,
       .summary = "the job runs but uses no CPU and no GPU (hung, deadlocked or waiting)",
       .watches = "the CPU of the job's process tree and GPU utilisation per GPU; the clock",
       .params = {{"threshold", ParamType::kSeconds, "600", "", 10, 7 * kDay,
                   "how long the job may stay idle"},
                  {"cpu_threshold", ParamType::kNumber, "1", "", 0, 100000,
                   "the job's processes below this CPU (percent of one core) are idle"},
                  Percent("gpu_threshold", "1", "every GPU below this percent is idle")},
       .in_default_set = true,
       .make = Maker<NoProgressParams, NoProgressState>(&MakeNoProgressParams)});
  return out;
}

}  // namespace trainwatch::rules
