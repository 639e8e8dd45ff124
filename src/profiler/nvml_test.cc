#include "profiler/nvml.h"

#include <dlfcn.h>

#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/metric_names.h"
#include "profiler/sampler.h"
#include "profiler/test_util.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

using testing::CopyFixture;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::ValueIn;
using Dims = std::map<std::string, std::string>;

constexpr int64_t kT0 = 1736942400000;
constexpr int64_t kSecondNs = 1000000000;
const std::string kTw(kProfilerNamespace);
const std::string kSm(kSageMakerNamespace);
const char kHost[] = "gpu-job/algo-1";

Dims H() { return {{"Host", kHost}}; }
Dims G(const std::string& gpu) { return {{"Host", kHost}, {"GPU", gpu}}; }

// Two GPUs: a Hopper with GPM and an older one without. The job (fixture
// pids 4242, 4250, 4260) holds memory on both; pid 1234 is someone else's.
const char kTwoGpus[] =
    "device uuid=GPU-h100 name=NVIDIA_H100 gpm=1 util=87 mem_util=40 mem_total=85899345920 "
    "mem_used=42949672960 power_mw=350500 temp=65 sm_clock=1980 throttle=4 sm_util=75 "
    "sm_occupancy=50 tensor_util=60 dram_util=30 gpm_pcie_tx_mib=100 gpm_pcie_rx_mib=200 "
    "procs=4242:1073741824,1234:2147483648,4250:536870912\n"
    "device uuid=GPU-v100 name=Tesla_V100 gpm=0 util=13 mem_util=5 mem_total=17179869184 "
    "mem_used=4294967296 power_mw=100000 temp=50 sm_clock=1300 throttle=0 pcie_tx_kb=1000 "
    "pcie_rx_kb=2000 procs=4260:1048576\n";

class FakeNvmlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The same library the profiler dlopens; this handle keeps its state alive.
    handle_ = ::dlopen(TW_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    set_scenario_ =
        reinterpret_cast<int (*)(const char*)>(::dlsym(handle_, "fake_nvml_set_scenario"));
    calls_ = reinterpret_cast<long (*)(const char*)>(::dlsym(handle_, "fake_nvml_calls"));
    reset_calls_ = reinterpret_cast<void (*)()>(::dlsym(handle_, "fake_nvml_reset_calls"));
    ASSERT_NE(set_scenario_, nullptr);
    ASSERT_NE(calls_, nullptr);
    ASSERT_NE(reset_calls_, nullptr);
  }

  void SetUp() override {
    root_ = CopyFixture(dir_, "v2");
    options_.job_name = "gpu-job";
    options_.proc_root = root_ + "/proc";
    options_.sys_root = root_ + "/sys";
    options_.nvml_library = TW_FAKE_NVML;
    options_.disk_path = dir_.path();
    reset_calls_();
  }

  void Scenario(const char* text) { ASSERT_EQ(set_scenario_(text), 0) << text; }

  std::unique_ptr<Sampler> Make() {
    auto s = Sampler::Create(options_, 4242);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    (*s)->InitGpu();
    return *std::move(s);
  }

  const model::SampleBatch& Tick(Sampler& s, int64_t seconds) {
    return s.SampleOnce(kT0 + seconds * 1000, (1 + seconds) * kSecondNs);
  }

  static void* handle_;
  static int (*set_scenario_)(const char*);
  static long (*calls_)(const char*);
  static void (*reset_calls_)();
  TempDir dir_;
  std::string root_;
  ProfilerOptions options_;
};

void* FakeNvmlTest::handle_ = nullptr;
int (*FakeNvmlTest::set_scenario_)(const char*) = nullptr;
long (*FakeNvmlTest::calls_)(const char*) = nullptr;
void (*FakeNvmlTest::reset_calls_)() = nullptr;

TEST_F(FakeNvmlTest, EveryGpuIsSampledAndSummedUnderSageMakersNames) {
  Scenario(kTwoGpus);
  auto s = Make();
  const model::SampleBatch& b = Tick(*s, 0);
  EXPECT_EQ(s->gpu_count(), 2);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuUtil, G("0")), 87);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuUtil, G("1")), 13);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuMemCtrlUtil, G("0")), 40);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuMemUsed, G("0")), 42949672960.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuMemTotal, G("0")), 85899345920.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuMemUtil, G("0")), 50);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuMemUtil, G("1")), 25);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPower, G("0")), 350.5);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuTemperature, G("0")), 65);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuSmClock, G("0")), 1980);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuThrottleReasons, G("0")), 4);
  // The older GPU's PCIe comes from the legacy counter (KB/s).
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPcieTx, G("1")), 1000 * 1024.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPcieRx, G("1")), 2000 * 1024.0);
  // SageMaker: sums over GPUs (0-100 x GPUs).
  EXPECT_EQ(ValueIn(b, kSm, metric::kGPUUtilization, H()), 100);
  EXPECT_EQ(ValueIn(b, kSm, metric::kGPUMemoryUtilization, H()), 75);
  EXPECT_EQ(s->degraded().nvml_unavailable, 0);
}

TEST_F(FakeNvmlTest, JobsOwnGpuMemoryCountsOnlyTheJobsProcesses) {
  Scenario(kTwoGpus);
  auto s = Make();
  const model::SampleBatch& b = Tick(*s, 0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobGpuMemUsed, G("0")), 1073741824.0 + 536870912.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobGpuMemUsed, G("1")), 1048576.0);  // the grandchild's
  EXPECT_EQ(ValueIn(b, kTw, metric::kJobGpuMemUsed, H()), 1073741824.0 + 536870912.0 + 1048576.0);
  // Process lists are a slow query: not read again within a second...
  EXPECT_FALSE(
      ValueIn(s->SampleOnce(kT0 + 100, kSecondNs + 100000000), kTw, metric::kJobGpuMemUsed, H())
          .has_value());
  // ...but again after one.
  EXPECT_TRUE(ValueIn(Tick(*s, 1), kTw, metric::kJobGpuMemUsed, H()).has_value());
}

TEST_F(FakeNvmlTest, GpmActivityOnHopperFromTheSecondTickAndNeverOnOlderGpus) {
  Scenario(kTwoGpus);
  auto s = Make();
  const model::SampleBatch& first = Tick(*s, 0);
  EXPECT_FALSE(ValueIn(first, kTw, metric::kGpuSmActivity, G("0")).has_value());
  const model::SampleBatch& b = Tick(*s, 1);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuSmActivity, G("0")), 75);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuTensorActivity, G("0")), 60);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuSmOccupancy, G("0")), 50);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuDramBandwidth, G("0")), 30);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPcieTx, G("0")), 100 * 1048576.0);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPcieRx, G("0")), 200 * 1048576.0);
  for (std::string_view m : {metric::kGpuSmActivity, metric::kGpuTensorActivity,
                             metric::kGpuSmOccupancy, metric::kGpuDramBandwidth}) {
    EXPECT_FALSE(ValueIn(b, kTw, m, G("1")).has_value()) << m;
  }
  EXPECT_EQ(calls_("nvmlGpmMetricsGet"), 1);  // only the Hopper, only at the second tick
}

TEST_F(FakeNvmlTest, FieldAnsweringNotSupportedIsLeftOutCountedOnceAndNotAskedAgain) {
  std::string scenario = kTwoGpus;
  scenario.replace(scenario.find("power_mw=350500"), 15, "fail=power:NOT_SUPPORTED");
  Scenario(scenario.c_str());
  auto s = Make();
  Tick(*s, 0);
  const model::SampleBatch& b = Tick(*s, 1);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kGpuPower, G("0")).has_value());
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuPower, G("1")), 100);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuUtil, G("0")), 87);  // the rest of GPU 0 goes on
  EXPECT_EQ(s->degraded().gpu_field_unsupported, 1);
  EXPECT_EQ(calls_("nvmlDeviceGetPowerUsage"), 1 + 2);  // GPU 0 once, GPU 1 every tick
  EXPECT_GE(util::LogOnceCount("profiler.gpu-unsupported.power usage"), 1);
}

TEST_F(FakeNvmlTest, LostGpuIsDroppedCountedAndComesBackWhenItAnswers) {
  Scenario(kTwoGpus);
  options_.gpu_rescan_interval_ms = 5000;
  auto s = Make();
  Tick(*s, 0);
  std::string lost = kTwoGpus;
  lost.insert(lost.find("gpm=1"), "lost=1 ");
  Scenario(lost.c_str());
  const model::SampleBatch& b = Tick(*s, 1);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kGpuUtil, G("0")).has_value());
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuUtil, G("1")), 13);
  EXPECT_EQ(ValueIn(b, kSm, metric::kGPUUtilization, H()), 13);
  EXPECT_EQ(s->degraded().gpu_lost, 1);
  long util_calls = calls_("nvmlDeviceGetUtilizationRates");
  Tick(*s, 2);
  EXPECT_EQ(calls_("nvmlDeviceGetUtilizationRates"), util_calls + 1);  // the lost one is not asked
  // It answers again: the next rescan takes it back under the same GPU index.
  Scenario(kTwoGpus);
  const model::SampleBatch& back = Tick(*s, 6);
  EXPECT_EQ(ValueIn(back, kTw, metric::kGpuUtil, G("0")), 87);
  EXPECT_EQ(s->degraded().gpu_lost, 1);
}

TEST_F(FakeNvmlTest, DisappearingAndAppearingGpus) {
  std::string one = kTwoGpus;
  one.resize(one.find("device uuid=GPU-v100"));
  Scenario(kTwoGpus);
  options_.gpu_rescan_interval_ms = 10000;
  auto s = Make();
  Tick(*s, 0);
  Scenario(one.c_str());  // GPU 1 falls off the bus
  const model::SampleBatch& b = Tick(*s, 1);
  EXPECT_EQ(ValueIn(b, kTw, metric::kGpuUtil, G("0")), 87);
  EXPECT_FALSE(ValueIn(b, kTw, metric::kGpuUtil, G("1")).has_value());
  EXPECT_EQ(s->degraded().gpu_lost, 1);
  Tick(*s, 11);  // rescan: still gone, not counted twice
  EXPECT_EQ(s->degraded().gpu_lost, 1);

  // A new GPU appears; it is found at the next rescan, not before.
  std::string two_new =
      one + "device uuid=GPU-new name=L4 gpm=0 util=33 mem_total=1000 mem_used=10\n";
  Scenario(two_new.c_str());
  EXPECT_FALSE(ValueIn(Tick(*s, 12), kTw, metric::kGpuUtil, G("1")).has_value());
  const model::SampleBatch& later = Tick(*s, 22);
  EXPECT_EQ(ValueIn(later, kTw, metric::kGpuUtil, G("1")), 33);
  EXPECT_EQ(ValueIn(later, kSm, metric::kGPUUtilization, H()), 87 + 33);
}

TEST_F(FakeNvmlTest, NoGpusAtAllMeansNoGpuSeries) {
  Scenario("");
  auto s = Make();
  const model::SampleBatch& b = Tick(*s, 0);
  EXPECT_EQ(s->gpu_count(), 0);
  EXPECT_FALSE(ValueIn(b, kSm, metric::kGPUUtilization, H()).has_value());
  EXPECT_EQ(s->degraded().nvml_unavailable, 0);
}

TEST_F(FakeNvmlTest, DriverNotLoadedIsOneNotice) {
  Scenario("init=driver_not_loaded\n");
  int64_t before = util::LogOnceCount("profiler.nvml-unavailable");
  auto s = Make();
  EXPECT_EQ(s->degraded().nvml_unavailable, 1);
  EXPECT_EQ(util::LogOnceCount("profiler.nvml-unavailable") - before, 1);
  EXPECT_FALSE(ValueIn(Tick(*s, 0), kSm, metric::kGPUUtilization, H()).has_value());
}

TEST_F(FakeNvmlTest, MissingLibraryIsOneClearNoticeAndCounted) {
  std::vector<std::string> messages;
  util::SetLogSinkForTest([&](util::LogLevel, std::string_view m) { messages.emplace_back(m); });
  options_.nvml_library = dir_.path() + "/libnvidia-ml.so.1";
  int64_t before = util::LogOnceCount("profiler.nvml-unavailable");
  auto s = Make();
  util::SetLogSinkForTest(nullptr);
  EXPECT_EQ(s->degraded().nvml_unavailable, 1);
  EXPECT_EQ(util::LogOnceCount("profiler.nvml-unavailable") - before, 1);
  if (before == 0) {  // the first notice of the process is the one printed
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_THAT(messages[0], HasSubstr("no GPU metrics"));
    EXPECT_THAT(messages[0], HasSubstr(options_.nvml_library));
    EXPECT_EQ(messages[0].find('\n'), std::string::npos);
  }
  const model::SampleBatch& b = Tick(*s, 0);
  EXPECT_TRUE(ValueIn(b, kTw, metric::kMemoryUsed, H()).has_value());  // the rest goes on
}

TEST_F(FakeNvmlTest, EveryGpuMetricIsDocumented) {
  std::string docs = testing::ReadFile(std::string(TW_SOURCE_DIR) + "/docs/profiler.md");
  Scenario(kTwoGpus);
  auto s = Make();
  std::set<std::string> names;
  for (int t = 0; t < 2; ++t) {
    for (const auto& series : Tick(*s, t).series) names.insert(series.key.metric);
  }
  for (const auto& name : names) {
    EXPECT_THAT(docs, HasSubstr("`" + name + "`")) << name << " is not in docs/profiler.md";
  }
}

}  // namespace
}  // namespace trainwatch::profiler
