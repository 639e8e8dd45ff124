// LowGPUUtilization, BatchSize, GPUMemoryIncrease and LoadBalancing on
// synthetic streams sampled once a second.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "rules/catalog.h"
#include "rules/profiler_rules.h"
#include "rules/testing/profiler_inputs.h"

namespace trainwatch::rules {
namespace {

using testing::Feed;
using testing::FeedAndEnd;
using testing::In;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// One value a second from `from_s` to `to_s` (exclusive), value(second).
std::vector<Input> Series(Signal signal, int64_t from_s, int64_t to_s,
                          const std::function<double(int64_t)>& value, int index = 0,
                          int host = 1) {
  std::vector<Input> in;
  for (int64_t sec = from_s; sec < to_s; ++sec) {
    in.push_back(In(signal, sec * 1000, value(sec), index, host));
  }
  return in;
}
std::vector<Input> Gpu(int64_t from_s, int64_t to_s, double value, int index = 0, int host = 1) {
  return Series(Signal::kGpuUtil, from_s, to_s, [=](int64_t) { return value; }, index, host);
}
std::vector<Input> Alternating(int64_t to_s, double a, double b, int index = 0) {
  return Series(Signal::kGpuUtil, 0, to_s, [=](int64_t s) { return s % 2 ? a : b; }, index);
}
std::vector<Input> Join(std::vector<Input> a, const std::vector<Input>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// Two streams merged by time (a's sample first at each time).
std::vector<Input> Merge(const std::vector<Input>& a, const std::vector<Input>& b) {
  std::vector<Input> out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].t_ms <= b[j].t_ms)) {
      out.push_back(a[i++]);
    } else {
      out.push_back(b[j++]);
    }
  }
  return out;
}

std::vector<std::string> Reasons(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.reason);
  return out;
}

using Strings = std::vector<std::string>;

// ---- LowGPUUtilization ----

Strings LowGpuReasons(const std::vector<Input>& in) {
  LowGpuParams p;  // p95 70, p5 10, window 250 s, patience 500 s
  LowGpuState s;
  return Reasons(Feed(p, s, in));
}

TEST(LowGPUUtilization, UnderutilizedAtTheEdge) {
  LowGpuParams p;
  LowGpuState s;
  std::vector<Finding> f = Feed(p, s, Gpu(0, 700, 50));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "underutilized");
  EXPECT_EQ(f[0].subject, "GPU 0");
  EXPECT_EQ(f[0].t_ms, 500000);
  EXPECT_EQ(f[0].observed, 50);
  EXPECT_EQ(f[0].message, "GPU 0 was below 70 % (p95 50 %) over the last 250 s.");
  EXPECT_FALSE(f[0].recommendation.empty());
  EXPECT_EQ(LowGpuReasons(Gpu(0, 700, 69.9)), Strings{"underutilized"});
  EXPECT_EQ(LowGpuReasons(Gpu(0, 700, 70)), Strings{});
  EXPECT_EQ(LowGpuReasons(Gpu(0, 700, 80)), Strings{});
}

TEST(LowGPUUtilization, FluctuatingAtTheEdge) {
  EXPECT_EQ(LowGpuReasons(Alternating(700, 100, 0)), Strings{"fluctuating"});
  EXPECT_EQ(LowGpuReasons(Alternating(700, 100, 9.9)), Strings{"fluctuating"});
  EXPECT_EQ(LowGpuReasons(Alternating(700, 100, 10)), Strings{});
}

TEST(LowGPUUtilization, UnusedAndWarmUp) {
  EXPECT_EQ(LowGpuReasons(Gpu(0, 700, 0)), Strings{"unused"});
  EXPECT_EQ(LowGpuReasons(Gpu(0, 500, 0)), Strings{});  // 499 s: still warming up
}

TEST(LowGPUUtilization, PerGpuPerHostAndReportedAgainAfterClearing) {
  LowGpuParams p;
  LowGpuState s;
  std::vector<Input> in = Join(Join(Gpu(0, 600, 50, 1, 2), Gpu(600, 900, 90, 1, 2)),
                               Gpu(900, 1300, 50, 1, 2));
  std::vector<Finding> f = Feed(p, s, in);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].subject, "GPU 1 on algo-2");
  EXPECT_GT(f[1].t_ms, 1100000);
}

TEST(LowGPUUtilization, CompatCountsSamples) {
  LowGpuParams p = MakeLowGpuParams(*ParseParams(
      "LowGPUUtilization", FindRule("LowGPUUtilization")->params, {}, Profile::kSageMakerCompat));
  LowGpuState early, late;
  EXPECT_TRUE(Feed(p, early, Gpu(0, 1000, 50)).empty());  // n = 1000: not > patience
  std::vector<Finding> f = Feed(p, late, Gpu(0, 1001, 50));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("the last 500 samples"), std::string::npos) << f[0].message;
}

TEST(LowGPUUtilization, NoGpuIsAWarningAtTheEnd) {
  LowGpuParams p;
  LowGpuState s;
  std::vector<Finding> f = FeedAndEnd(p, s, {In(Signal::kCoreCpu, 0, 50, 0)}, 1000);
  EXPECT_EQ(Reasons(f), Strings{"no_data"});
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

// ---- BatchSize ----

std::vector<Input> Host(int64_t to_s, double cpu, double gpu, double memory) {
  std::vector<Input> in;
  for (int64_t sec = 0; sec < to_s; ++sec) {
    for (int core = 0; core < 4; ++core) in.push_back(In(Signal::kCoreCpu, sec * 1000, cpu, core));
    in.push_back(In(Signal::kGpuUtil, sec * 1000, gpu, 0));
    in.push_back(In(Signal::kGpuMemUtil, sec * 1000, memory, 0));
  }
  return in;
}

Strings BatchReasons(const std::vector<Input>& in) {
  BatchSizeParams p;
  BatchSizeState s;
  return Reasons(Feed(p, s, in));
}

TEST(BatchSize, RoomOnGpuAndCpuFires) {
  BatchSizeParams p;
  BatchSizeState s;
  std::vector<Finding> f = Feed(p, s, Host(700, 30, 30, 30));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "batch_too_small");
  EXPECT_EQ(f[0].subject, "GPU 0");
  EXPECT_NE(f[0].recommendation.find("batch size"), std::string::npos);
}

TEST(BatchSize, EachThresholdAtItsEdge) {
  EXPECT_EQ(BatchReasons(Host(700, 69.9, 69.9, 69.9)), Strings{"batch_too_small"});
  EXPECT_EQ(BatchReasons(Host(700, 70, 30, 30)), Strings{});
  EXPECT_EQ(BatchReasons(Host(700, 30, 70, 30)), Strings{});
  EXPECT_EQ(BatchReasons(Host(700, 30, 30, 70)), Strings{});
  EXPECT_EQ(BatchReasons(Host(400, 30, 30, 30)), Strings{});  // warming up
}

TEST(BatchSize, NoGpuIsAWarningAtTheEnd) {
  BatchSizeParams p;
  BatchSizeState s;
  EXPECT_EQ(Reasons(FeedAndEnd(p, s, {In(Signal::kHostCpu, 0, 5)}, 1000)), Strings{"no_data"});
}

// ---- GPUMemoryIncrease ----

// GPU memory rising `per_10min` points per 10 minutes from 20 %.
std::vector<Input> Ramp(int64_t to_s, double per_10min) {
  return Series(Signal::kGpuMemUtil, 0, to_s,
                [=](int64_t s) { return 20 + per_10min * static_cast<double>(s) / 600; });
}

Strings MemoryReasons(const std::vector<Input>& in) {
  GpuMemoryParams p;  // 5 points per 10 min, window 600 s, patience 500 s
  GpuMemoryState s;
  return Reasons(Feed(p, s, in));
}

TEST(GPUMemoryIncrease, SlopeAtTheEdge) {
  GpuMemoryParams p;
  GpuMemoryState s;
  std::vector<Finding> f = Feed(p, s, Ramp(700, 10));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "increasing");
  EXPECT_EQ(f[0].subject, "GPU 0");
  EXPECT_NEAR(f[0].observed, 10, 1e-6);
  EXPECT_NE(f[0].message.find("full in about"), std::string::npos) << f[0].message;
  EXPECT_EQ(MemoryReasons(Ramp(700, 5.5)), Strings{"increasing"});
  EXPECT_EQ(MemoryReasons(Ramp(700, 4.5)), Strings{});
  EXPECT_EQ(MemoryReasons(Ramp(499, 50)), Strings{});  // warming up
}

TEST(GPUMemoryIncrease, NoisyFlatMemoryAndOneSpikeDoNotFire) {
  EXPECT_EQ(MemoryReasons(Series(Signal::kGpuMemUtil, 0, 1000,
                                 [](int64_t s) { return s % 2 ? 43.0 : 37.0; })),
            Strings{});
  // A 10 s spike to 90 % is an outlier for the robust slope.
  EXPECT_EQ(MemoryReasons(Series(Signal::kGpuMemUtil, 0, 1000,
                                 [](int64_t s) { return s >= 800 && s < 810 ? 90.0 : 40.0; })),
            Strings{});
}

TEST(GPUMemoryIncrease, BytesGiveTheRateAndTimeToFull) {
  // 16 GiB; 1.6 GiB per 10 min from 4 GiB.
  std::vector<Input> in = {In(Signal::kGpuMemTotalBytes, 0, 16 * kGiB, 0)};
  for (int64_t sec = 0; sec < 700; ++sec) {
    const double used = 4 * kGiB + 1.6 * kGiB * static_cast<double>(sec) / 600;
    in.push_back(In(Signal::kGpuMemUsedBytes, sec * 1000, used, 0));
  }
  GpuMemoryParams p;
  GpuMemoryState s;
  std::vector<Finding> f = Feed(p, s, in);  // the percentage comes from the bytes
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].observed, 10, 1e-6);
  EXPECT_NE(f[0].message.find("+1.6 GiB per 10 min"), std::string::npos) << f[0].message;
  // At 500 s: 5.33 GiB used, 10.67 GiB left at 1.6 GiB per 10 min: 66.7 min.
  EXPECT_NE(f[0].message.find("full in about 66.7 min"), std::string::npos) << f[0].message;
}

TEST(GPUMemoryIncrease, CompatOverlappingMeansMissSlowLeaks) {
  GpuMemoryParams p = MakeGpuMemoryParams(*ParseParams("GPUMemoryIncrease",
                                                       FindRule("GPUMemoryIncrease")->params,
                                                       {{"patience", "20"}},
                                                       Profile::kSageMakerCompat));
  auto reasons = [&](const std::vector<Input>& in) {
    GpuMemoryState s;
    return Reasons(Feed(p, s, in));
  };
  // A jump of J points gives at most 2 J / window (two samples after it,
  // when the earlier slice has none of it yet): 26 points fires, 24 does not.
  auto jump = [](double j) {
    return Series(Signal::kGpuMemUtil, 0, 60, [=](int64_t s) { return s < 30 ? 10.0 : 10 + j; });
  };
  EXPECT_EQ(reasons(jump(26)), Strings{"increasing"});
  EXPECT_EQ(reasons(jump(24)), Strings{});
  // A ramp of r points per sample gives 1.5 r: 4 fires, 3 does not.
  auto ramp = [](double r) {
    return Series(Signal::kGpuMemUtil, 0, 60, [=](int64_t s) { return r * static_cast<double>(s); });
  };
  EXPECT_EQ(reasons(ramp(4)), Strings{"increasing"});
  EXPECT_EQ(reasons(ramp(3)), Strings{});
  // 10 points per 10 minutes: the default profile's slope sees it.
  EXPECT_EQ(reasons(Ramp(700, 10)), Strings{});
}

TEST(GPUMemoryIncrease, NoMemoryDataIsAWarningAtTheEnd) {
  GpuMemoryParams p;
  GpuMemoryState s;
  EXPECT_EQ(Reasons(FeedAndEnd(p, s, Gpu(0, 10, 50), 10000)), Strings{"no_data"});
}

// ---- LoadBalancing ----

Strings BalanceReasons(const std::vector<Input>& in, double threshold = 0.5) {
  LoadBalancingParams p;
  p.threshold = threshold;
  LoadBalancingState s;
  return Reasons(Feed(p, s, in));
}

TEST(LoadBalancing, DisjointHistogramsFire) {
  LoadBalancingParams p;
  LoadBalancingState s;
  std::vector<Finding> f = Feed(p, s, Merge(Gpu(0, 600, 90, 0), Gpu(0, 600, 10, 1)));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, "unbalanced");
  EXPECT_EQ(f[0].subject, "GPU 0 and GPU 1");
  EXPECT_NEAR(f[0].observed, std::sqrt(std::log(2.0)), 1e-9);
  EXPECT_EQ(BalanceReasons(Merge(Gpu(0, 600, 50, 0), Gpu(0, 600, 50, 1))), Strings{});
}

TEST(LoadBalancing, DistanceAtTheEdge) {
  // GPU 1 spends half its time where GPU 0 is: distance 0.4645.
  const std::vector<Input> in = Merge(Gpu(0, 600, 90, 0), Alternating(600, 90, 10, 1));
  EXPECT_EQ(BalanceReasons(in), Strings{});
  EXPECT_EQ(BalanceReasons(in, 0.47), Strings{});
  EXPECT_EQ(BalanceReasons(in, 0.46), Strings{"unbalanced"});
}

TEST(LoadBalancing, PinnedGpusLandInTheLastBin) {
  const std::vector<Input> pinned_vs_idle = Merge(Gpu(0, 1100, 100, 0), Gpu(0, 1100, 10, 1));
  EXPECT_EQ(BalanceReasons(pinned_vs_idle), Strings{"unbalanced"});
  EXPECT_EQ(BalanceReasons(Merge(Gpu(0, 600, 100, 0), Gpu(0, 600, 100, 1))), Strings{});
  // SageMaker's 49 bins drop values above 98: the distance is NaN, never fires.
  LoadBalancingParams compat = MakeLoadBalancingParams(*ParseParams(
      "LoadBalancing", FindRule("LoadBalancing")->params, {}, Profile::kSageMakerCompat));
  LoadBalancingState s;
  EXPECT_TRUE(Feed(compat, s, pinned_vs_idle).empty());
  LoadBalancingState s2;
  EXPECT_EQ(Reasons(Feed(compat, s2, Merge(Gpu(0, 1100, 98, 0), Gpu(0, 1100, 10, 1)))),
            Strings{"unbalanced"});
}

TEST(LoadBalancing, OnlyGpusOfOneHostAreCompared) {
  EXPECT_EQ(BalanceReasons(Merge(Gpu(0, 600, 90, 0, 1), Gpu(0, 600, 10, 0, 2))), Strings{});
  LoadBalancingParams p;
  LoadBalancingState s;
  std::vector<Finding> f = Feed(p, s, Merge(Gpu(0, 600, 90, 2, 3), Gpu(0, 600, 10, 5, 3)));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "GPU 2 and GPU 5 on algo-3");
}

TEST(LoadBalancing, NoGpuIsAWarningAtTheEnd) {
  LoadBalancingParams p;
  LoadBalancingState s;
  EXPECT_EQ(Reasons(FeedAndEnd(p, s, {}, 1000)), Strings{"no_data"});
}

}  // namespace
}  // namespace trainwatch::rules
