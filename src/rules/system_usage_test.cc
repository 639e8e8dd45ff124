#include "rules/system_usage.h"

#include <gtest/gtest.h>

#include "rules/testing/profiler_inputs.h"

namespace trainwatch::rules {
namespace {

using testing::In;

const UsageStats* Find(const std::vector<UsageStats>& rows, int host, std::string_view metric) {
  for (const UsageStats& r : rows) {
    if (r.host == host && r.metric == metric) return &r;
  }
  return nullptr;
}

TEST(SystemUsage, HostTotalsPerSampleTimeAndPerGpu) {
  SystemUsage usage;
  // 101 sample times: core 0 at t %, core 1 at 0 % (mean t/2); GPU 0 at t %,
  // GPU 1 at 100 - t %; I/O wait on core 0 only.
  for (int t = 0; t <= 100; ++t) {
    usage.Add(In(Signal::kCoreCpu, t * 1000, t, 0));
    usage.Add(In(Signal::kCoreCpu, t * 1000, 0, 1));
    usage.Add(In(Signal::kCoreIoWait, t * 1000, 4, 0));
    usage.Add(In(Signal::kGpuUtil, t * 1000, t, 0));
    usage.Add(In(Signal::kGpuUtil, t * 1000, 100 - t, 1));
    usage.Add(In(Signal::kGpuMemUtil, t * 1000, 30, 0));
    usage.Add(In(Signal::kJobCpu, t * 1000, 900));  // not a system total: ignored
  }
  std::vector<UsageStats> rows = usage.Summary();
  std::vector<std::string> metrics;
  for (const UsageStats& r : rows) metrics.push_back(r.metric);
  EXPECT_EQ(metrics, (std::vector<std::string>{"cpu", "io_wait", "gpu", "gpu_memory", "GPU 0",
                                               "GPU 0 memory", "GPU 1"}));
  const UsageStats* cpu = Find(rows, 1, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->count, 101);  // the sample times still open count too
  EXPECT_DOUBLE_EQ(cpu->max, 50);
  EXPECT_DOUBLE_EQ(cpu->min, 0);
  EXPECT_DOUBLE_EQ(cpu->p50, 25);
  EXPECT_NEAR(cpu->p95, 47.5, 0.01);
  EXPECT_NEAR(cpu->p99, 49.5, 0.01);
  const UsageStats* gpu = Find(rows, 1, "gpu");
  EXPECT_DOUBLE_EQ(gpu->max, 50);  // the two GPUs average 50 at every time
  EXPECT_DOUBLE_EQ(gpu->min, 50);
  const UsageStats* gpu0 = Find(rows, 1, "GPU 0");
  EXPECT_DOUBLE_EQ(gpu0->max, 100);
  EXPECT_DOUBLE_EQ(gpu0->p50, 50);
  EXPECT_NEAR(gpu0->p95, 95, 0.01);
  EXPECT_DOUBLE_EQ(Find(rows, 1, "io_wait")->p50, 4);
}

TEST(SystemUsage, HostCpuClippingAndHosts) {
  SystemUsage usage;
  usage.Add(In(Signal::kHostCpu, 0, 120, -1, 2));  // clipped to 100
  usage.Add(In(Signal::kCoreCpu, 0, 10, 0, 2));   // the host CPU wins
  usage.Add(In(Signal::kHostCpu, 1000, -5, -1, 2));  // clipped to 0
  usage.Add(In(Signal::kGpuUtil, 0, 12.346, 0, 1));
  std::vector<UsageStats> rows = usage.Summary();
  const UsageStats* cpu = Find(rows, 2, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->count, 2);
  EXPECT_DOUBLE_EQ(cpu->max, 100);
  EXPECT_DOUBLE_EQ(cpu->min, 0);
  EXPECT_EQ(Find(rows, 1, "cpu"), nullptr);
  EXPECT_DOUBLE_EQ(Find(rows, 1, "GPU 0")->max, 12.35);  // 2 decimals
  EXPECT_TRUE(SystemUsage().Summary().empty());
}

TEST(SystemUsage, PerCoreRowsOnlyWhenAskedAndAfterTheGpus) {
  SystemUsage usage(/*per_core=*/true);
  for (int t = 0; t <= 100; ++t) {
    usage.Add(In(Signal::kCoreCpu, t * 1000, t, 0));
    usage.Add(In(Signal::kCoreCpu, t * 1000, 100, 1));
    usage.Add(In(Signal::kGpuUtil, t * 1000, 50, 0));
  }
  std::vector<UsageStats> rows = usage.Summary();
  std::vector<std::string> metrics;
  for (const UsageStats& r : rows) metrics.push_back(r.metric);
  EXPECT_EQ(metrics,
            (std::vector<std::string>{"cpu", "gpu", "GPU 0", "core 0", "core 1"}));
  const UsageStats* core0 = Find(rows, 1, "core 0");
  ASSERT_NE(core0, nullptr);
  EXPECT_EQ(core0->count, 101);
  EXPECT_DOUBLE_EQ(core0->p50, 50);
  EXPECT_DOUBLE_EQ(core0->max, 100);
  EXPECT_DOUBLE_EQ(Find(rows, 1, "core 1")->min, 100);
  // The rule's summary (SageMaker's) has host totals only.
  SystemUsage totals;
  totals.Add(In(Signal::kCoreCpu, 0, 10, 0));
  EXPECT_EQ(Find(totals.Summary(), 1, "core 0"), nullptr);
}

}  // namespace
}  // namespace trainwatch::rules
