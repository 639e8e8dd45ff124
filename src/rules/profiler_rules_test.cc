// The profiler rules' catalog entries, and the rules over cores, processes and
// steps. The GPU rules: profiler_rules_gpu_test.cc.

#include "rules/profiler_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "rules/catalog.h"
#include "rules/profiler_common.h"
#include "rules/testing/profiler_inputs.h"

namespace trainwatch::rules {
namespace {

using testing::Feed;
using testing::FeedAndEnd;
using testing::In;
using testing::StepAt;
using testing::Tick;

ParamValues Parse(std::string_view rule, const std::map<std::string, std::string>& given,
                  Profile profile = Profile::kDefault) {
  const RuleInfo* info = FindRule(rule);
  EXPECT_NE(info, nullptr) << rule;
  absl::StatusOr<ParamValues> v = ParseParams(rule, info->params, given, profile);
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

TEST(ProfilerCatalog, AllInOrderInTheDefaultSet) {
  std::vector<std::string> names;
  for (const RuleInfo& info : ProfilerRuleInfos()) {
    names.emplace_back(info.name);
    EXPECT_EQ(info.family, RuleFamily::kProfiler) << info.name;
    EXPECT_TRUE(info.in_default_set) << info.name;
    EXPECT_FALSE(info.summary.empty());
    EXPECT_FALSE(info.watches.empty());
    for (const ParamSpec& spec : info.params) {
      EXPECT_FALSE(spec.help.empty()) << info.name << "." << spec.name;
      if (spec.type == ParamType::kNumber || spec.type == ParamType::kInteger ||
          spec.type == ParamType::kSeconds) {
        EXPECT_TRUE(std::isfinite(spec.min) && std::isfinite(spec.max))
            << info.name << "." << spec.name;
      }
    }
    // Both profiles' defaults parse and make a rule.
    for (Profile profile : {Profile::kDefault, Profile::kSageMakerCompat}) {
      absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule(info.name, {}, profile);
      EXPECT_TRUE(r.ok()) << info.name << ": " << r.status();
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"CPUBottleneck", "IOBottleneck", "LowGPUUtilization",
                                             "BatchSize", "GPUMemoryIncrease", "LoadBalancing",
                                             "Dataloader", "MaxInitializationTime", "StepOutlier",
                                             "Straggler", "NoProgress"}));
}

TEST(ProfilerCatalog, OutOfRangeIsRefusedWithWhatIsAccepted) {
  absl::StatusOr<std::unique_ptr<Rule>> r =
      MakeRule("LowGPUUtilization", {{"threshold_p95", "150"}}, Profile::kDefault);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("from 0 to 100"), std::string_view::npos)
      << r.status();
  r = MakeRule("LoadBalancing", {{"threshold", "2"}}, Profile::kDefault);
  EXPECT_FALSE(r.ok());
  r = MakeRule("NoProgress", {{"threshold", "5"}}, Profile::kDefault);  // below 10 s
  EXPECT_FALSE(r.ok());
}

// The [K] column of spec/rules.md §7.2 (window and patience in samples,
// MaxInitializationTime in minutes).
TEST(ProfilerCatalog, SageMakerCompatDefaults) {
  const Profile k = Profile::kSageMakerCompat;
  ParamValues v = Parse("BatchSize", {}, k);
  EXPECT_EQ(v.Number("cpu_threshold_p95"), 70);
  EXPECT_EQ(v.Number("gpu_threshold_p95"), 70);
  EXPECT_EQ(v.Number("gpu_memory_threshold_p95"), 70);
  EXPECT_EQ(v.Seconds("patience"), 1000);
  EXPECT_EQ(v.Seconds("window"), 500);
  EXPECT_TRUE(MakeBatchSizeParams(v).compat);

  v = Parse("CPUBottleneck", {}, k);
  EXPECT_EQ(v.Number("threshold"), 50);
  EXPECT_EQ(v.Number("gpu_threshold"), 10);
  EXPECT_EQ(v.Number("cpu_threshold"), 90);
  EXPECT_EQ(v.Seconds("patience"), 1000);
  EXPECT_EQ(v.Integer("min_saturated_cores"), 1);  // any single core
  EXPECT_TRUE(MakeBottleneckParams(v, false).compat);

  v = Parse("IOBottleneck", {}, k);
  EXPECT_EQ(v.Number("threshold"), 50);
  EXPECT_EQ(v.Number("gpu_threshold"), 10);
  EXPECT_EQ(v.Number("io_threshold"), 50);
  EXPECT_EQ(v.Seconds("patience"), 1000);

  v = Parse("LowGPUUtilization", {}, k);
  EXPECT_EQ(v.Number("threshold_p95"), 70);
  EXPECT_EQ(v.Number("threshold_p5"), 10);
  EXPECT_EQ(v.Seconds("window"), 500);
  EXPECT_EQ(v.Seconds("patience"), 1000);
  EXPECT_TRUE(MakeLowGpuParams(v).span.samples);

  v = Parse("GPUMemoryIncrease", {}, k);
  EXPECT_EQ(v.Number("increase"), 5);
  EXPECT_EQ(v.Seconds("patience"), 1000);
  EXPECT_EQ(v.Seconds("window"), 10);
  EXPECT_TRUE(MakeGpuMemoryParams(v).compat);

  v = Parse("LoadBalancing", {}, k);
  EXPECT_EQ(v.Number("threshold"), 0.5);
  EXPECT_EQ(v.Seconds("patience"), 1000);
  EXPECT_TRUE(MakeLoadBalancingParams(v).compat);

  v = Parse("Dataloader", {}, k);
  EXPECT_EQ(v.Number("min_threshold"), 70);
  EXPECT_EQ(v.Number("max_threshold"), 200);
  EXPECT_EQ(v.Seconds("patience"), 10);  // [C]: [K] has none

  v = Parse("MaxInitializationTime", {}, k);
  EXPECT_EQ(v.Seconds("threshold"), 20);
  EXPECT_EQ(MakeMaxInitParams(v).threshold_s, 20 * 60);

  v = Parse("StepOutlier", {}, k);
  EXPECT_EQ(v.Number("stddev"), 3);
  EXPECT_EQ(v.Integer("n_outliers"), 10);
  EXPECT_EQ(v.Integer("min_steps"), 100);
  EXPECT_EQ(v.Integer("warmup_steps"), 0);
  EXPECT_TRUE(MakeStepOutlierParams(v).compat);
}

// The "trainwatch default" column of §7.2.
TEST(ProfilerCatalog, TrainwatchDefaults) {
  ParamValues v = Parse("LowGPUUtilization", {});
  EXPECT_EQ(v.Seconds("window"), 250);
  EXPECT_EQ(v.Seconds("patience"), 500);
  EXPECT_FALSE(MakeLowGpuParams(v).span.samples);
  EXPECT_EQ(Parse("CPUBottleneck", {}).Seconds("patience"), 500);
  EXPECT_EQ(Parse("BatchSize", {}).Seconds("window"), 250);
  EXPECT_EQ(Parse("GPUMemoryIncrease", {}).Seconds("window"), 600);
  EXPECT_EQ(MakeMaxInitParams(Parse("MaxInitializationTime", {})).threshold_s, 1200);
  EXPECT_EQ(Parse("StepOutlier", {}).Integer("warmup_steps"), 10);
  EXPECT_EQ(Parse("NoProgress", {}).Seconds("threshold"), 600);
}

// ---- CPUBottleneck / IOBottleneck ----

// One host's snapshot at second `sec`: `cores` per-core values and one GPU.
void AddSnapshot(std::vector<Input>& in, int64_t sec, const std::vector<double>& cores,
                 double gpu, Signal core_signal = Signal::kCoreCpu, int host = 1) {
  for (size_t i = 0; i < cores.size(); ++i) {
    in.push_back(In(core_signal, sec * 1000, cores[i], static_cast<int>(i), host));
  }
  in.push_back(In(Signal::kGpuUtil, sec * 1000, gpu, 0, host));
}

std::vector<Input> Snapshots(int64_t from, int64_t to, const std::vector<double>& cores,
                             double gpu, Signal core_signal = Signal::kCoreCpu, int host = 1) {
  std::vector<Input> in;
  for (int64_t sec = from; sec < to; ++sec) AddSnapshot(in, sec, cores, gpu, core_signal, host);
  return in;
}

const std::vector<double> kBusy8(8, 95.0);
const std::vector<double> kIdle8(8, 5.0);

TEST(CPUBottleneck, FiresOnceAfterPatience) {
  BottleneckParams p;
  BottleneckState s;
  std::vector<Finding> f = Feed(p, s, Snapshots(0, 700, kBusy8, 5));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "cpu_bottleneck");
  EXPECT_EQ(f[0].subject, "host");
  EXPECT_EQ(f[0].t_ms, 500000);  // warm-up 500 s from the first sample
  EXPECT_EQ(f[0].observed, 100);
  EXPECT_EQ(f[0].threshold, 50);
  EXPECT_NE(f[0].message.find("250 s"), std::string::npos) << f[0].message;
  EXPECT_FALSE(f[0].recommendation.empty());
}

TEST(CPUBottleneck, BusyGpuOrIdleCpuDoesNotFire) {
  BottleneckParams p;
  BottleneckState s1, s2;
  EXPECT_TRUE(Feed(p, s1, Snapshots(0, 700, kBusy8, 50)).empty());
  EXPECT_TRUE(Feed(p, s2, Snapshots(0, 700, kIdle8, 5)).empty());
}

TEST(CPUBottleneck, ThresholdEdges) {
  // Mean exactly at cpu_threshold is busy; just below (and no core at it) is not.
  BottleneckParams p;
  BottleneckState at, below;
  EXPECT_EQ(Feed(p, at, Snapshots(0, 600, std::vector<double>(8, 90.0), 5)).size(), 1u);
  EXPECT_TRUE(Feed(p, below, Snapshots(0, 600, std::vector<double>(8, 89.9), 5)).empty());
  // A GPU at gpu_threshold is not idle; just below is.
  BottleneckState gpu_at, gpu_below;
  EXPECT_TRUE(Feed(p, gpu_at, Snapshots(0, 600, kBusy8, 10)).empty());
  EXPECT_EQ(Feed(p, gpu_below, Snapshots(0, 600, kBusy8, 9.9)).size(), 1u);
}

TEST(CPUBottleneck, RatioEdge) {
  // Every other snapshot is a bottleneck: 50 % of any window, not above 50.
  std::vector<Input> in;
  for (int64_t sec = 0; sec < 700; ++sec) AddSnapshot(in, sec, kBusy8, sec % 2 ? 5 : 50);
  BottleneckParams p;
  BottleneckState equal;
  EXPECT_TRUE(Feed(p, equal, in).empty());
  p.threshold = 49.5;
  BottleneckState above;
  EXPECT_EQ(Feed(p, above, in).size(), 1u);
}

TEST(CPUBottleneck, SaturatedCoresCountEvenWithALowMean) {
  std::vector<double> four_hot = {100, 100, 100, 100, 0, 0, 0, 0};
  std::vector<double> three_hot = {100, 100, 100, 0, 0, 0, 0, 0};
  BottleneckParams p;
  BottleneckState s4, s3;
  EXPECT_EQ(Feed(p, s4, Snapshots(0, 600, four_hot, 0)).size(), 1u);
  EXPECT_TRUE(Feed(p, s3, Snapshots(0, 600, three_hot, 0)).empty());
  // A 2-core host: both saturated is enough.
  BottleneckState small;
  EXPECT_EQ(Feed(p, small, Snapshots(0, 600, {100, 95}, 0)).size(), 1u);
}

TEST(CPUBottleneck, SlidingWindowNotCumulative) {
  // 600 s fine, then 200 s of bottleneck: 80 % of the last 250 s (25 % since
  // the start, which SageMaker's cumulative ratio would not flag).
  std::vector<Input> in = Snapshots(0, 600, kIdle8, 90);
  for (const Input& i : Snapshots(600, 800, kBusy8, 0)) in.push_back(i);
  BottleneckParams p;
  BottleneckState s;
  std::vector<Finding> f = Feed(p, s, in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GT(f[0].t_ms, 600000);

  BottleneckParams compat = MakeBottleneckParams(Parse("CPUBottleneck", {{"patience", "100"}},
                                                       Profile::kSageMakerCompat),
                                                 false);
  BottleneckState cs;
  EXPECT_TRUE(Feed(compat, cs, in).empty());
}

TEST(CPUBottleneck, HostCpuAndLateGpuSamplesAndOtherHosts) {
  // The host CPU alone; the GPU sample of each time arrives after the next
  // time's CPU sample; host 2.
  std::vector<Input> in;
  for (int64_t sec = 0; sec < 600; ++sec) {
    in.push_back(In(Signal::kHostCpu, sec * 1000, 95, -1, 2));
    if (sec > 0) in.push_back(In(Signal::kGpuUtil, (sec - 1) * 1000, 0, 0, 2));
  }
  BottleneckParams p;
  BottleneckState s;
  std::vector<Finding> f = Feed(p, s, in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "host algo-2");
}

TEST(CPUBottleneck, NoGpuDataIsAWarningAtTheEnd) {
  std::vector<Input> in;
  for (int64_t sec = 0; sec < 600; ++sec) in.push_back(In(Signal::kCoreCpu, sec * 1000, 99, 0));
  BottleneckParams p;
  BottleneckState s;
  EXPECT_TRUE(Feed(p, s, in).empty());
  Verdict end = OnEnd(p, s, 600000);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].severity, Severity::kWarning);
}

TEST(CPUBottleneck, CompatCountsSamplesAndAnyCoreAboveThreshold) {
  BottleneckParams p = MakeBottleneckParams(Parse("CPUBottleneck", {}, Profile::kSageMakerCompat),
                                            false);
  std::vector<double> one_hot = {91, 0, 0, 0};
  std::vector<double> one_at = {90, 0, 0, 0};
  BottleneckState hot, at;
  std::vector<Finding> f = Feed(p, hot, Snapshots(0, 1100, one_hot, 0));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].t_ms, 1000 * 1000);  // the 1001st snapshot: n > patience
  EXPECT_TRUE(Feed(p, at, Snapshots(0, 1100, one_at, 0)).empty());  // strictly above
}

TEST(IOBottleneck, FiresOnIoWaitNotOnCpu) {
  BottleneckParams p = MakeBottleneckParams(Parse("IOBottleneck", {}), true);
  BottleneckState io, cpu, below;
  std::vector<Finding> f =
      Feed(p, io, Snapshots(0, 600, std::vector<double>(4, 60), 5, Signal::kCoreIoWait));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "io_bottleneck");
  EXPECT_NE(f[0].recommendation.find("storage"), std::string::npos);
  EXPECT_TRUE(Feed(p, cpu, Snapshots(0, 600, kBusy8, 5)).empty());
  EXPECT_TRUE(
      Feed(p, below, Snapshots(0, 600, std::vector<double>(4, 49.9), 5, Signal::kCoreIoWait))
          .empty());
}

// ---- Dataloader ----

std::vector<Input> Processes(int64_t from_s, int64_t to_s, double processes, double cores) {
  std::vector<Input> in;
  for (int64_t sec = from_s; sec < to_s; ++sec) {
    in.push_back(In(Signal::kCpuCores, sec * 1000, cores));
    in.push_back(In(Signal::kJobProcesses, sec * 1000, processes));
  }
  return in;
}

TEST(Dataloader, TooFewAndTooManyWorkersAtTheEdges) {
  DataloaderParams p;  // 70 % .. 200 % of 10 cores: 7 .. 20 workers
  auto reasons = [&](double processes) {
    DataloaderState s;
    std::vector<Finding> f = Feed(p, s, Processes(0, 60, processes, 10));
    return f.empty() ? std::string() : f[0].reason + (f.size() > 1 ? "+more" : "");
  };
  EXPECT_EQ(reasons(7), "too_few");   // 6 workers
  EXPECT_EQ(reasons(8), "");          // 7 workers
  EXPECT_EQ(reasons(21), "");         // 20 workers
  EXPECT_EQ(reasons(22), "too_many"); // 21 workers
  // A job that never ran a worker process is not judged: it loads its data
  // in its main process (or needs no loader), and says so at the end.
  EXPECT_EQ(reasons(1), "");
  DataloaderState single;
  std::vector<Finding> f = FeedAndEnd(p, single, Processes(0, 60, 1, 10), 60000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "no_data");
  EXPECT_NE(f[0].message.find("never ran a worker process"), std::string::npos);
}

TEST(Dataloader, WaitsForPatienceAndNeedsCores) {
  DataloaderParams p;
  DataloaderState s;
  EXPECT_TRUE(Feed(p, s, Processes(0, 10, 2, 10)).empty());  // 9 s of data
  std::vector<Input> no_cores;
  for (int64_t sec = 0; sec < 60; ++sec) no_cores.push_back(In(Signal::kJobProcesses, sec * 1000, 1));
  DataloaderState s2;
  std::vector<Finding> f = FeedAndEnd(p, s2, no_cores, 60000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "no_data");
}

// ---- MaxInitializationTime ----

TEST(MaxInitializationTime, FiresOnTheTickAtTheThreshold) {
  MaxInitParams p;  // 20 min
  MaxInitState s;
  std::vector<Input> in = {In(Signal::kHostCpu, 0, 10), Tick(600000), Tick(1199999)};
  EXPECT_TRUE(Feed(p, s, in).empty());
  std::vector<Finding> f = Feed(p, s, {Tick(1200000), Tick(1300000)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "not_started");
  EXPECT_EQ(f[0].t_ms, 1200000);
  EXPECT_NE(f[0].recommendation.find("--metric"), std::string::npos);
  EXPECT_EQ(OnEnd(p, s, 1400000).kind, Verdict::kOk);  // already reported
}

TEST(MaxInitializationTime, AStepInTimeIsOk) {
  MaxInitParams p;
  MaxInitState s;
  EXPECT_EQ(OnInput(p, s, In(Signal::kHostCpu, 0, 10)).kind, Verdict::kPending);
  EXPECT_EQ(OnInput(p, s, StepAt(1, 1199999)).kind, Verdict::kOk);
  EXPECT_TRUE(Feed(p, s, {Tick(5000000)}).empty());
  EXPECT_TRUE(OnEnd(p, s, 6000000).findings.empty());
}

TEST(MaxInitializationTime, AtTheEndNoStepIsAnIssueOrNoData) {
  MaxInitParams p;
  MaxInitState long_job, short_job;
  Feed(p, long_job, {In(Signal::kHostCpu, 0, 10)});
  Verdict v = OnEnd(p, long_job, 1800000);
  EXPECT_EQ(v.kind, Verdict::kIssue);
  Feed(p, short_job, {In(Signal::kHostCpu, 0, 10)});
  v = OnEnd(p, short_job, 300000);
  EXPECT_EQ(v.kind, Verdict::kOk);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].reason, "no_data");
  EXPECT_NE(v.findings[0].recommendation.find("--metric 'step=step (\\d+)'"), std::string::npos);
}

// ---- Straggler ----

// Hosts 1..n each reporting their own steps every second for `seconds`, host
// `slow` at `slow_rate` of the others' pace (2 steps/s).
std::vector<Input> HostSteps(int hosts, int seconds, int slow = 0, double slow_rate = 1) {
  std::vector<Input> in;
  for (int t = 0; t <= seconds; ++t) {
    for (int h = 1; h <= hosts; ++h) {
      const double rate = h == slow ? 2 * slow_rate : 2;
      in.push_back(In(Signal::kHostStep, t * 1000LL, std::floor(rate * t), -1, h));
    }
  }
  return in;
}

TEST(Straggler, AHostFarBehindTheOthersIsFoundOnce) {
  StragglerParams p;  // 20 %, 120 s
  StragglerState s;
  std::vector<Finding> f = Feed(p, s, HostSteps(4, 300, 3, 0.5));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "straggler");
  EXPECT_EQ(f[0].subject, "host algo-3");
  EXPECT_NEAR(f[0].observed, 1.0, 0.02);
  EXPECT_NEAR(f[0].threshold, 1.6, 0.02);
  for (std::string_view part : {"Host algo-3 made 0.99 steps/s over the last ", "(1.01 s a step), 50% "
                                "fewer than the median of the other 3 hosts, 1.98 steps/s",
                                "it is at step 119, they are at step 238"}) {
    EXPECT_NE(f[0].message.find(part), std::string::npos) << f[0].message;
  }
  // Not before a full window of data.
  EXPECT_EQ(f[0].t_ms, 120'000);
}

TEST(Straggler, EvenHostsOneHostAndSmallLagsPass) {
  StragglerParams p;
  StragglerState even, one, small;
  EXPECT_TRUE(Feed(p, even, HostSteps(3, 300)).empty());
  EXPECT_TRUE(Feed(p, one, HostSteps(1, 300, 1, 0.1)).empty());
  EXPECT_TRUE(Feed(p, small, HostSteps(3, 300, 2, 0.85)).empty());
  EXPECT_EQ(OnEnd(p, one, 300'000).kind, Verdict::kOk);
}

TEST(Straggler, AHostThatStopsSteppingLagsAndRecovers) {
  StragglerParams p;
  p.window_s = 30;
  StragglerState s;
  std::vector<Input> in;
  for (int t = 0; t <= 200; ++t) {
    const bool stuck = t >= 60 && t < 120;
    in.push_back(In(Signal::kHostStep, t * 1000LL, 2.0 * t, -1, 1));
    if (!stuck) in.push_back(In(Signal::kHostStep, t * 1000LL, t < 60 ? 2.0 * t : 2.0 * t - 120, -1, 2));
  }
  std::vector<Finding> f = Feed(p, s, in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "host algo-2");
  // Found within a few seconds of the stall (the rate falls below 80 %).
  EXPECT_GT(f[0].t_ms, 60'000);
  EXPECT_LT(f[0].t_ms, 70'000);
  EXPECT_FALSE(s.hosts[2].firing);  // caught up its pace after the stall
}

// ---- StepOutlier ----

// Steps 0..n at `ms` per step from t0; returns the time after the last.
int64_t AddSteps(std::vector<Input>& in, int64_t& step, int64_t t, int n, int64_t ms,
                 int host = 1) {
  for (int i = 0; i < n; ++i) {
    t += ms;
    in.push_back(StepAt(++step, t, host));
  }
  return t;
}

// 20 normal steps, `slow` slow ones, 200 normal ones (100 ms each).
std::vector<Input> StepsWithSlow(int slow, int64_t slow_ms, int host = 1) {
  std::vector<Input> in = {StepAt(0, 0, host)};
  int64_t step = 0;
  int64_t t = AddSteps(in, step, 0, 20, 100, host);
  for (int i = 0; i < slow; ++i) {
    t = AddSteps(in, step, t, 1, slow_ms, host);
    t = AddSteps(in, step, t, 5, 100, host);
  }
  AddSteps(in, step, t, 200, 100, host);
  return in;
}

TEST(StepOutlier, MoreThanNOutliersFires) {
  StepOutlierParams p;
  StepOutlierState ten, eleven;
  EXPECT_TRUE(Feed(p, ten, StepsWithSlow(10, 1000)).empty());
  std::vector<Finding> f = Feed(p, eleven, StepsWithSlow(11, 1000));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "slow_steps");
  EXPECT_EQ(f[0].subject, "steps");
  EXPECT_EQ(f[0].observed, 11);
  EXPECT_EQ(f[0].threshold, 10);
  EXPECT_NE(f[0].message.find("1 s"), std::string::npos) << f[0].message;
}

TEST(StepOutlier, SlowEdgeIsMedianPlusKRobustSpread) {
  // All normal steps take 100 ms, so the spread is its 1 % floor (1 ms):
  // the limit is 103 ms. 103 ms is not above it, 104 ms is.
  StepOutlierParams p;
  StepOutlierState at, above;
  EXPECT_TRUE(Feed(p, at, StepsWithSlow(11, 103)).empty());
  EXPECT_EQ(Feed(p, above, StepsWithSlow(11, 104)).size(), 1u);
}

TEST(StepOutlier, FastStepsAreTheirOwnReason) {
  StepOutlierParams p;
  StepOutlierState s;
  std::vector<Finding> f = Feed(p, s, StepsWithSlow(11, 10));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "fast_steps");
}

TEST(StepOutlier, WarmUpAndTooFewStepsAreNotJudged) {
  StepOutlierParams p;
  p.warmup_steps = 100;  // the slow steps are all in the warm-up
  StepOutlierState warm;
  EXPECT_TRUE(Feed(p, warm, StepsWithSlow(11, 1000)).empty());
  StepOutlierParams q;
  q.min_steps = 500;  // fewer durations than that
  StepOutlierState few;
  EXPECT_TRUE(Feed(q, few, StepsWithSlow(11, 1000)).empty());
}

TEST(StepOutlier, RobustWhereMeanAndSigmaAreNot) {
  // 5 huge steps inflate the standard deviation and hide 11 slow ones.
  std::vector<Input> in = {StepAt(0, 0)};
  int64_t step = 0;
  int64_t t = AddSteps(in, step, 0, 100, 100);
  t = AddSteps(in, step, t, 5, 100000);
  t = AddSteps(in, step, t, 11, 300);
  AddSteps(in, step, t, 100, 100);
  StepOutlierParams p;
  StepOutlierState robust;
  std::vector<Finding> f = Feed(p, robust, in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GT(f[0].observed, 10);  // decided once the 11th outlier is in
  StepOutlierParams compat =
      MakeStepOutlierParams(Parse("StepOutlier", {}, Profile::kSageMakerCompat));
  StepOutlierState mean_sigma;
  EXPECT_TRUE(Feed(compat, mean_sigma, in).empty());
}

TEST(StepOutlier, StepsPrintedEveryNAndOtherHosts) {
  // Steps reported every 10 steps: the duration is per step.
  std::vector<Input> in = {StepAt(0, 0, 3)};
  int64_t t = 0;
  for (int64_t step = 10; step <= 3000; step += 10) {
    t += (step % 200 == 0) ? 10000 : 1000;  // 1 s per step, 15 of them slow
    in.push_back(StepAt(step, t, 3));
  }
  StepOutlierParams p;
  StepOutlierState s;
  std::vector<Finding> f = Feed(p, s, in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "steps on algo-3");
  EXPECT_NE(f[0].message.find("median 0.1 s"), std::string::npos) << f[0].message;
}

TEST(StepOutlier, NoStepIsAWarningAtTheEnd) {
  StepOutlierParams p;
  StepOutlierState s;
  std::vector<Finding> f = FeedAndEnd(p, s, {In(Signal::kHostCpu, 0, 5)}, 1000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "no_data");
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

// ---- NoProgress ----

std::vector<Input> JobCpu(int64_t from_s, int64_t to_s, double cpu, double gpu) {
  std::vector<Input> in;
  for (int64_t sec = from_s; sec < to_s; sec += 10) {
    in.push_back(In(Signal::kJobCpu, sec * 1000, cpu));
    in.push_back(In(Signal::kGpuUtil, sec * 1000, gpu, 0));
  }
  return in;
}

TEST(NoProgress, IdleForThresholdFiresOnce) {
  NoProgressParams p;  // 600 s, 1 %, 1 %
  NoProgressState s;
  std::vector<Finding> f = Feed(p, s, JobCpu(0, 1000, 0.5, 0));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "no_progress");
  EXPECT_EQ(f[0].t_ms, 600000);
  EXPECT_EQ(f[0].observed, 600);
  // Activity re-arms it.
  f = Feed(p, s, JobCpu(1000, 1100, 50, 0));
  EXPECT_TRUE(f.empty());
  EXPECT_EQ(Feed(p, s, JobCpu(1100, 1800, 0, 0)).size(), 1u);
}

TEST(NoProgress, EdgesAndBusyGpu) {
  NoProgressParams p;
  NoProgressState at, below, gpu;
  EXPECT_TRUE(Feed(p, at, JobCpu(0, 1000, 1.0, 0)).empty());
  EXPECT_EQ(Feed(p, below, JobCpu(0, 1000, 0.99, 0)).size(), 1u);
  EXPECT_TRUE(Feed(p, gpu, JobCpu(0, 1000, 0, 50)).empty());
}

TEST(NoProgress, DecidesOnTheClockWithoutFurtherData) {
  NoProgressParams p;
  NoProgressState s;
  std::vector<Finding> f =
      Feed(p, s, {In(Signal::kJobCpu, 0, 0), Tick(599000), Tick(600000), Tick(700000)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].t_ms, 600000);
}

TEST(NoProgress, NoJobCpuIsAWarningAtTheEnd) {
  NoProgressParams p;
  NoProgressState s;
  std::vector<Finding> f = FeedAndEnd(p, s, {Tick(1000)}, 2000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "no_data");
}

// ---- the order statistics behind the windows ----

TEST(OrderStatistics, AgreeWithSortingTheValues) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(0, 20);  // many ties
  for (int round = 0; round < 50; ++round) {
    prof::OrderStatistics os;
    std::vector<double> values;
    const int n = 1 + round * 7;
    for (int i = 0; i < n; ++i) {
      const double v = round % 2 ? small(rng) / 4.0 : std::ldexp(rng() % 100000, -7);
      values.push_back(v);
      os.Insert(v, static_cast<uint64_t>(i));
    }
    for (double q : {0.0, 0.05, 0.5, 0.95, 1.0}) {
      std::vector<double> copy = values;
      EXPECT_EQ(os.Quantile(q), prof::Quantile(copy, q)) << "n=" << n << " q=" << q;
    }
    std::vector<double> copy = values;
    const double center = prof::Quantile(copy, 0.5);
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::abs(v - center));
    EXPECT_EQ(os.QuantileOfDeviations(center, 0.5), prof::Quantile(deviations, 0.5)) << n;
    EXPECT_EQ(os.CountLess(center),
              static_cast<size_t>(std::count_if(values.begin(), values.end(),
                                                [&](double v) { return v < center; })));
    EXPECT_EQ(os.CountAtMost(center),
              static_cast<size_t>(std::count_if(values.begin(), values.end(),
                                                [&](double v) { return v <= center; })));
  }
}

}  // namespace
}  // namespace trainwatch::rules
