#include "profiler/sampler.h"

#include <unistd.h>

#include <map>
#include <regex>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/metric_names.h"
#include "profiler/test_util.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

using testing::CopyFixture;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using testing::Rewrite;
using testing::StatLine;
using testing::TempDir;
using testing::ValueIn;
using Dims = std::map<std::string, std::string>;

constexpr int64_t kT0 = 1736942400000;
constexpr int64_t kMono0 = 1000000000;
const char kHost[] = "mnist-7/algo-1";
const std::string kTw(kProfilerNamespace);
const std::string kSm(kSageMakerNamespace);

Dims H() { return {{"Host", kHost}}; }
Dims H(const std::string& dim, const std::string& value) { return {{"Host", kHost}, {dim, value}}; }

std::set<std::string> MetricNames(const model::SampleBatch& b) {
  std::set<std::string> names;
  for (const auto& s : b.series) names.insert(s.key.metric);
  return names;
}

class V2SamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = CopyFixture(dir_, "v2");
    options_.job_name = "mnist-7";
    options_.interval_ms = 1000;
    options_.proc_root = root_ + "/proc";
    options_.sys_root = root_ + "/sys";
    options_.nvml_library = "";
    options_.disk_path = dir_.path();
  }

  std::unique_ptr<Sampler> Make() {
    absl::StatusOr<std::unique_ptr<Sampler>> s = Sampler::Create(options_, 4242);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  // The second reading: one second later, with activity everywhere.
  void WriteSecondTick() {
    std::string p = root_ + "/proc/";
    Rewrite(p + "stat",
            "cpu  10050 200 4010 80330 805 0 100 405 0 0\n"
            "cpu0 2550 50 1010 20030 205 0 25 105 0 0\n"
            "cpu1 2500 50 1000 20100 200 0 25 100 0 0\n"
            "cpu2 2500 50 1000 20100 200 0 25 100 0 0\n"
            "cpu3 2500 50 1000 20100 200 0 25 100 0 0\n"
            "intr 1\nctxt 2\n");
    Rewrite(p + "diskstats",
            "   7       0 loop0 10 0 80 1 0 0 0 0 0 4 1 0 0 0 0 0 0\n"
            " 259       0 nvme0n1 1100 10 22000 500 2050 20 44000 900 0 1250 1400 0 0 0 0 50 7\n"
            " 259       1 nvme0n1p1 1090 10 21900 500 2050 20 44000 900 0 1250 1400 0 0 0 0 0 0\n"
            "   8       0 sda 110 0 2200 50 200 0 4000 90 0 1100 140 0 0 0 0\n"
            " 253       0 dm-0 1000 0 20000 450 1800 0 36000 810 0 900 1260 0 0 0 0 0 0\n"
            " 252       0 zram0 5 0 40 0 5 0 40 0 0 0 0 0 0 0 0 0 0\n");
    Rewrite(p + "net/dev",
            "Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n"
            "    lo:    4319      40    0    0    0     0          0         0     4319      40    "
            "0    0    0     0       0          0\n"
            "  eth0:1001000000    6000    3    0    0     0          0         0  2500000    1500  "
            "  0    0    0     0       0          0\n"
            "  ib0: 5000 50 0 0 0 0 0 0 6000 60 0 0 0 0 0 0\n");
    Rewrite(p + "pressure/cpu",
            "some avg10=1.0 avg60=0.9 avg300=3.2 total=30100000\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    Rewrite(p + "pressure/io",
            "some avg10=0.0 avg60=0.0 avg300=0.0 total=6500000\n"
            "full avg10=0.0 avg60=0.0 avg300=0.0 total=5250000\n");
    Rewrite(p + "4242/stat", StatLine(4242, "python3", 1, 150, 30, 0, 0, 2, 5000, 25600));
    Rewrite(p + "4250/stat", StatLine(4250, "pt_data_worker", 4242, 100, 20, 0, 0, 1, 5100, 12800));
    std::string cg = root_ + "/sys/fs/cgroup/system.slice/train.scope/";
    Rewrite(cg + "cpu.stat",
            "usage_usec 6500000\nuser_usec 5000000\nsystem_usec 1500000\n"
            "nr_periods 110\nnr_throttled 15\nthrottled_usec 300000\n");
    Rewrite(cg + "memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n");
  }

  TempDir dir_;
  std::string root_;
  ProfilerOptions options_;
};

TEST_F(V2SamplerTest, FirstTickPublishesGaugesButNoRates) {
  auto s = Make();
  const model::SampleBatch& b = s->SampleOnce(kT0, kMono0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUCores, H()), 4);
  EXPECT_EQ(ValueIn(b, kTw, metric::kLoad1, H()), 3.5);
  EXPECT_EQ(ValueIn(b, kTw, metric::kRunnableTasks, H()), 3);
  EXPECT_EQ(ValueIn(b, kTw, metric::kMemoryTotal, H()), 16000000.0 * 1024);
  EXPECT_EQ(ValueIn(b, kTw, metric::kMemoryUsed, H()), 4000000.0 * 1024);
  EXPECT_EQ(ValueIn(b, kTw, metric::kMemoryPageCache, H()), 3100000.0 * 1024);
  EXPECT_EQ(ValueIn(b, kTw, metric::kMemoryUsedPercent, H()), 25);
  EXPECT_EQ(ValueIn(b, kTw, metric::kSwapUsed, H()), 500000.0 * 1024);
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobProcesses, H()), 3);
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobThreads, H()), 4);
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobRSS, H()),
            (25600.0 + 12800 + 256) * ::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupMemoryUsed, H()), 4294967296.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupMemoryLimit, H()), 8589934592.0);
  ASSERT_TRUE(ValueIn(b, kSm, metric::kDiskUtilization, H()).has_value());
  ASSERT_TRUE(ValueIn(b, kSm, metric::kMemoryUtilization, H()).has_value());
  // Rates need two readings.
  for (std::string_view m : {metric::kHostCPUUtilization, metric::kJobCPU, metric::kDiskReadBytes,
                             metric::kNetRxBytes, metric::kPressureCPUSome, metric::kCgroupCPU}) {
    EXPECT_FALSE(ValueIn(b, kTw, m, H()).has_value()) << m;
  }
  EXPECT_FALSE(ValueIn(b, kSm, metric::kCPUUtilization, H()).has_value());
  // Every sample of the tick carries its timestamp.
  for (const auto& series : b.series) {
    ASSERT_EQ(series.samples.size(), 1u) << series.key.ToString();
    EXPECT_EQ(series.samples[0].t_ms, kT0);
  }
}

TEST_F(V2SamplerTest, SecondTickPublishesRatesFromTheDeltas) {
  auto s = Make();
  s->SampleOnce(kT0, kMono0);
  WriteSecondTick();
  const model::SampleBatch& b = s->SampleOnce(kT0 + 1000, kMono0 + 1000000000);

  // CPU: core 0 was 50 % user, 10 % system, 5 % iowait, 5 % steal; the others idle.
  EXPECT_EQ(ValueIn(b, kTw, metric::kHostCPUUtilization, H("Core", "0")), 65);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUUser, H("Core", "0")), 50);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUSystem, H("Core", "0")), 10);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUIOWait, H("Core", "0")), 5);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUSteal, H("Core", "0")), 5);
  EXPECT_EQ(ValueIn(b, kTw, metric::kHostCPUUtilization, H("Core", "3")), 0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kHostCPUUtilization, H()), 16.25);  // mean over 4 cores

  // Disks: per device for whole disks (dm-0 included), totals over physical disks only.
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadBytes, H("Device", "nvme0n1")), 2000 * 512.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskWriteBytes, H("Device", "nvme0n1")), 4000 * 512.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadOps, H("Device", "nvme0n1")), 100);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskWriteOps, H("Device", "nvme0n1")), 50);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskBusy, H("Device", "nvme0n1")), 25);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskBusy, H("Device", "sda")), 100);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadBytes, H("Device", "dm-0")), 2000 * 512.0);
  for (const char* absent : {"loop0", "zram0", "nvme0n1p1"}) {
    EXPECT_FALSE(ValueIn(b, kTw, metric::kDiskReadBytes, H("Device", absent)).has_value())
        << absent;
  }
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadBytes, H()), (2000 + 200) * 512.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadOps, H()), 110);

  // Network: per interface; totals leave lo out.
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxBytes, H("Interface", "eth0")), 1000000);
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetTxBytes, H("Interface", "eth0")), 500000);
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxPackets, H("Interface", "eth0")), 1000);
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxErrors, H("Interface", "eth0")), 2);
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxBytes, H("Interface", "lo")), 1000);
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxBytes, H()), 1000000);

  // Pressure: share of the interval stalled.
  EXPECT_THAT(*ValueIn(b, kTw, metric::kPressureCPUSome, H()), DoubleNear(10, 1e-9));
  EXPECT_THAT(*ValueIn(b, kTw, metric::kPressureIOSome, H()), DoubleNear(50, 1e-9));
  EXPECT_THAT(*ValueIn(b, kTw, metric::kPressureIOFull, H()), DoubleNear(25, 1e-9));
  EXPECT_EQ(ValueIn(b, kTw, metric::kPressureMemorySome, H()), 0);

  // The job: 100 user + 20 system ticks in one second.
  double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_THAT(*ValueIn(b, kTw, metric::kJobCPUUser, H()), DoubleNear(100 * 100 / hz, 1e-9));
  EXPECT_THAT(*ValueIn(b, kTw, metric::kJobCPUSystem, H()), DoubleNear(20 * 100 / hz, 1e-9));
  EXPECT_THAT(*ValueIn(b, kTw, metric::kJobCPU, H()), DoubleNear(120 * 100 / hz, 1e-9));

  // Its cgroup.
  EXPECT_THAT(*ValueIn(b, kTw, metric::kCgroupCPU, H()), DoubleNear(150, 1e-9));
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupThrottledPeriods, H()), 5);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupThrottledPercent, H()), 50);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupThrottledTime, H()), 100000);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupOOMKills, H()), 1);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupMemoryMaxEvents, H()), 2);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCgroupMemoryHighEvents, H()), 0);

  // SageMaker's names: the job's CPU (0-100 x cores); memory against the
  // container's limit, reclaimable page cache left out.
  EXPECT_THAT(*ValueIn(b, kSm, metric::kCPUUtilization, H()), DoubleNear(120 * 100 / hz, 1e-9));
  EXPECT_THAT(*ValueIn(b, kSm, metric::kMemoryUtilization, H()),
              DoubleNear(100.0 * (4294967296.0 - 294967296.0) / 8589934592.0, 1e-9));
  double used = *ValueIn(b, kTw, metric::kFilesystemUsed, H());
  double avail = *ValueIn(b, kTw, metric::kFilesystemAvailable, H());
  EXPECT_THAT(*ValueIn(b, kSm, metric::kDiskUtilization, H()),
              DoubleNear(100 * used / (used + avail), 1e-9));
  EXPECT_FALSE(ValueIn(b, kSm, metric::kGPUUtilization, H()).has_value());  // no NVML asked for

  // Every unit is one of CloudWatch's.
  for (const auto& series : b.series) {
    EXPECT_THAT(series.key.unit, ::testing::AnyOf("Percent", "Bytes", "Bytes/Second", "Count",
                                                  "Count/Second", "Microseconds", "None"));
  }
  EXPECT_EQ(s->degraded().cgroup_v1, 0);
  EXPECT_EQ(s->degraded().psi_unavailable, 0);
  EXPECT_EQ(s->degraded().proc_fields_missing, 0);
}

TEST_F(V2SamplerTest, ATickWithoutMonotonicProgressPublishesNoRates) {
  auto s = Make();
  s->SampleOnce(kT0, kMono0);
  WriteSecondTick();
  const model::SampleBatch& b = s->SampleOnce(kT0, kMono0);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kJobCPU, H()).has_value());
  EXPECT_TRUE(ValueIn(b, kTw, metric::kJobRSS, H()).has_value());
}

TEST_F(V2SamplerTest, WithoutAMemoryLimitMemoryUtilizationIsTheHosts) {
  Rewrite(root_ + "/sys/fs/cgroup/system.slice/train.scope/memory.max", "max\n");
  auto s = Make();
  const model::SampleBatch& b = s->SampleOnce(kT0, kMono0);
  EXPECT_EQ(ValueIn(b, kSm, metric::kMemoryUtilization, H()), 25);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kCgroupMemoryLimit, H()).has_value());
}

TEST_F(V2SamplerTest, PerDeviceSeriesAreCappedButTotalsCoverAll) {
  options_.max_devices = 1;
  auto s = Make();
  s->SampleOnce(kT0, kMono0);
  WriteSecondTick();
  const model::SampleBatch& b = s->SampleOnce(kT0 + 1000, kMono0 + 1000000000);
  EXPECT_TRUE(ValueIn(b, kTw, metric::kDiskReadBytes, H("Device", "nvme0n1")).has_value());
  EXPECT_FALSE(ValueIn(b, kTw, metric::kDiskReadBytes, H("Device", "sda")).has_value());
  EXPECT_EQ(ValueIn(b, kTw, metric::kDiskReadBytes, H()), (2000 + 200) * 512.0);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kNetRxBytes, H("Interface", "eth0")).has_value());
  EXPECT_EQ(ValueIn(b, kTw, metric::kNetRxBytes, H()), 1000000);
  EXPECT_GE(s->degraded().series_capped, 2);
}

TEST_F(V2SamplerTest, EveryPublishedMetricIsDocumented) {
  std::string docs = testing::ReadFile(std::string(TW_SOURCE_DIR) + "/docs/profiler.md");
  ASSERT_FALSE(docs.empty()) << "docs/profiler.md is missing";
  auto s = Make();
  std::set<std::string> names = MetricNames(s->SampleOnce(kT0, kMono0));
  WriteSecondTick();
  for (const auto& n : MetricNames(s->SampleOnce(kT0 + 1000, kMono0 + 1000000000))) names.insert(n);
  EXPECT_GE(names.size(), 55u);
  for (const auto& name : names) {
    EXPECT_THAT(docs, HasSubstr("`" + name + "`")) << name << " is not in docs/profiler.md";
  }
}

TEST(OldKernelSamplerTest, DegradedModesAreCountedAndTheRestStillWorks) {
  TempDir dir;
  std::string root = CopyFixture(dir, "old");
  ProfilerOptions options;
  options.job_name = "old-job";
  options.proc_root = root + "/proc";
  options.sys_root = root + "/sys";
  options.nvml_library = "";
  options.disk_path = dir.path();
  int64_t psi_before = util::LogOnceCount("profiler.no-psi");
  int64_t v1_before = util::LogOnceCount("profiler.cgroup-v1");
  auto s = Sampler::Create(options, 4242);
  ASSERT_TRUE(s.ok()) << s.status();
  const model::SampleBatch& first = (*s)->SampleOnce(kT0, kMono0);
  Dims h = {{"Host", "old-job/algo-1"}};
  // MemAvailable is missing: MemFree + Buffers + Cached stands in.
  EXPECT_EQ(ValueIn(first, kTw, metric::kMemoryUsedPercent, h), 50);
  EXPECT_EQ(ValueIn(first, kSm, metric::kMemoryUtilization, h), 50);
  EXPECT_EQ(ValueIn(first, kTw, metric::kJobProcesses, h), 3);
  EXPECT_EQ(ValueIn(first, kTw, metric::kCPUCores, h), 2);
  Rewrite(root + "/proc/stat",
          "cpu  2100 0 1050 16050 400 0 0\ncpu0 1100 0 550 8000 200 0 0\n"
          "cpu1 1000 0 500 8050 200 0 0\n");
  const model::SampleBatch& b = (*s)->SampleOnce(kT0 + 1000, kMono0 + 1000000000);
  EXPECT_EQ(
      ValueIn(b, kTw, metric::kHostCPUUtilization, Dims{{"Host", "old-job/algo-1"}, {"Core", "0"}}),
      100);
  EXPECT_EQ(ValueIn(b, kTw, metric::kCPUSteal, h), 0);
  for (const auto& series : b.series) {
    EXPECT_THAT(series.key.metric, ::testing::Not(::testing::StartsWith("Pressure")));
    EXPECT_THAT(series.key.metric, ::testing::Not(::testing::StartsWith("Cgroup")));
  }
  const DegradedCounters& d = (*s)->degraded();
  EXPECT_EQ(d.psi_unavailable, 3);
  EXPECT_EQ(d.cgroup_v1, 1);
  EXPECT_EQ(d.no_children_files, 1);
  // Per tick: 3 /proc/stat lines without steal, MemAvailable, the short sda1 line.
  EXPECT_EQ(d.proc_fields_missing, 2 * (3 + 1 + 1));
  EXPECT_EQ(util::LogOnceCount("profiler.no-psi") - psi_before, 3);
  EXPECT_EQ(util::LogOnceCount("profiler.cgroup-v1") - v1_before, 1);
}

TEST(SamplerCreateTest, RefusesBadOptionsWithClearMessages) {
  ProfilerOptions o;
  o.job_name = "j";
  o.nvml_library = "";
  o.interval_ms = 250;
  EXPECT_TRUE(absl::IsInvalidArgument(Sampler::Create(o, 1).status()));
  o.interval_ms = 100;
  o.job_name = "";
  EXPECT_THAT(std::string(Sampler::Create(o, 1).status().message()), HasSubstr("job name"));
  o.job_name = "j";
  o.host_index = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(Sampler::Create(o, 1).status()));
  o.host_index = 1;
  TempDir empty;
  o.proc_root = empty.path();
  absl::Status st = Sampler::Create(o, 1).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr(empty.path()));
}

}  // namespace
}  // namespace trainwatch::profiler
