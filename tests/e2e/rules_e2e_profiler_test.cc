// End-to-end tests of the time-driven and profiler rules with real processes:
// `trainwatch run` over a script that hangs, idles a GPU, burns CPU or waits
// on the disk, with the fake NVML (src/profiler/testdata/fake_nvml) standing
// in for the GPU: trainwatch dlopens "libnvidia-ml.so.1", which
// LD_LIBRARY_PATH points at the fake, and the fake reads its scenario from
// TRAINWATCH_FAKE_NVML_SCENARIO.
//
// The scripts run until a rule stops them (action=StopTraining) where the
// rule is the point, so a loaded machine makes a test slower, not flaky.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tests/e2e/rules_fixture.h"
#include "tests/e2e/subprocess.h"

namespace trainwatch {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Finished;
using testing::ParseIso8601Ms;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitUntil;

using namespace std::chrono_literals;

class ProfiledRulesTest : public testing::RulesTest {
 protected:
  // The environment that makes `trainwatch run` see the GPUs of `scenario`
  // (fake_nvml.cc's scenario text).
  std::map<std::string, std::string> FakeGpus(const std::string& scenario) {
    const std::string lib_dir = dir_ + "/nvml";
    std::filesystem::create_directories(lib_dir);
    std::error_code ec;
    std::filesystem::create_symlink(TW_FAKE_NVML, lib_dir + "/libnvidia-ml.so.1", ec);
    const std::string file = Script("scenario.txt", scenario);
    return {{"LD_LIBRARY_PATH", lib_dir}, {"TRAINWATCH_FAKE_NVML_SCENARIO", file}};
  }
  std::map<std::string, std::string> IdleGpu() {
    return FakeGpus(
        "device uuid=GPU-e2e-0 name=FakeGPU util=5 mem_util=10 mem_total=17179869184 "
        "mem_used=1717986918\n");
  }
  std::map<std::string, std::string> BusyGpu() {
    return FakeGpus(
        "device uuid=GPU-e2e-0 name=FakeGPU util=95 mem_util=80 mem_total=17179869184 "
        "mem_used=12884901888\n");
  }

  // The status of one rule configuration in `rules JOB --json` output.
  static const nlohmann::json* Rule(const nlohmann::json& rules, const std::string& name) {
    for (const nlohmann::json& s : rules["rule_statuses"]) {
      if (s["configuration_name"] == name) return &s;
    }
    return nullptr;
  }
  // The status message of the job's Stopped transition ("" when none).
  std::string StoppedMessage(const std::string& job, int64_t* stopping_ms = nullptr) const {
    std::optional<nlohmann::json> j = TryJson({"describe", job, "--json"});
    if (!j) return "";
    std::string message;
    for (const nlohmann::json& t : (*j)["SecondaryStatusTransitions"]) {
      if (t["Status"] == "Stopping" && stopping_ms != nullptr) {
        *stopping_ms = static_cast<int64_t>(t["StartTime"].get<double>() * 1000);
      }
      if (t["Status"] == "Stopped") message = t.value("StatusMessage", "");
    }
    return message;
  }
};

// A script that prints until it is stopped (at most a minute).
constexpr char kIdleLoop[] = R"(
import time
for i in range(600):
    print(f"waiting {i}", flush=True)
    time.sleep(0.1)
)";

// A job that prints three lines and hangs: StalledTrainingRule (threshold 2 s)
// fires 2 to 3 s after the last line (the engine ticks every 200 ms), while
// the job runs; without an action the job goes on.
TEST_F(ProfiledRulesTest, StalledTrainingRuleFiresWithinASecondOfItsThreshold) {
  const std::string script = Script("hang.py", R"(
import time
for i in range(3):
    print(f"line {i}", flush=True)
    time.sleep(0.1)
time.sleep(120)
)");
  // The profiler's samples keep flowing: they are not progress.
  Subprocess runner(Tw({"run", "--name", "stall-1", "--profile-interval", "200ms", "--rule",
                        "StalledTrainingRule:threshold=2s", "--stop-grace", "2s", "--",
                        "python3", script}),
                    {});
  nlohmann::json finding;
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::optional<nlohmann::json> rules = TryJson({"rules", "stall-1", "--json"});
        if (!rules || (*rules)["rule_statuses"].empty()) return false;
        const nlohmann::json& findings = (*rules)["rule_statuses"][0]["findings"];
        if (findings.empty()) return false;
        EXPECT_EQ((*rules)["rule_statuses"][0]["status"], "IssuesFound");
        finding = findings[0];
        return true;
      },
      30s))
      << "no finding within 30 s";
  EXPECT_EQ(JobStatus("stall-1"), "InProgress");  // found while the job runs

  Finished logs = RunCommand(Tw({"logs", "stall-1", "--timestamps"}));
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = logs.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(logs.out.substr(at, nl - at));
  }
  ASSERT_EQ(lines.size(), 3u) << logs.out;
  EXPECT_THAT(lines[2], HasSubstr(" line 2"));
  const int64_t last_line_ms = ParseIso8601Ms(lines[2].substr(0, lines[2].find(' ')));
  ASSERT_GT(last_line_ms, 0) << lines[2];

  EXPECT_EQ(finding["reason"], "stalled");
  EXPECT_EQ(finding["subject"], "job");
  const int64_t late_ms = finding["t_ms"].get<int64_t>() - last_line_ms;
  EXPECT_GE(late_ms, 2000) << finding.dump();
  EXPECT_LE(late_ms, 3000) << "found " << late_ms << " ms after the last line";
  EXPECT_THAT(finding["message"].get<std::string>(),
              HasSubstr("the threshold being 2 s; the last thing seen was a log line"));

  Finished stop = RunCommand(Tw({"stop", "stall-1"}));
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  Finished run = runner.Wait();
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  EXPECT_EQ(JobStatus("stall-1"), "Stopped");
}

// The same hang with action=StopTraining: the job is stopped within a second
// of the finding, and its Stopped message names the rule and the finding.
TEST_F(ProfiledRulesTest, StalledTrainingRuleStopsAHungJob) {
  const std::string script = Script("hang.py", R"(
import time
print("step 0", flush=True)
time.sleep(120)
)");
  Finished run = RunCommand(Tw({"run", "--name", "stall-2", "--rule",
                               "StalledTrainingRule:threshold=2s,action=StopTraining",
                               "--stop-grace", "2s", "--", "python3", script}));
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  EXPECT_EQ(JobStatus("stall-2"), "Stopped");
  nlohmann::json rules = Json({"rules", "stall-2", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u) << rules.dump();
  EXPECT_EQ(rules["rule_statuses"][0]["status"], "IssuesFound");
  const int64_t finding_ms = rules["rule_statuses"][0]["findings"][0]["t_ms"];
  int64_t stopping_ms = -1;
  EXPECT_THAT(StoppedMessage("stall-2", &stopping_ms),
              StartsWith("Stopped by rule StalledTrainingRule: No log line, metric or step for "));
  EXPECT_GE(stopping_ms, finding_ms);
  EXPECT_LE(stopping_ms - finding_ms, 1000) << "stopped " << stopping_ms - finding_ms << " ms late";
}

// A GPU idling at 5 %: LowGPUUtilization finds it under-utilised once its
// 2 s of patience are over, and stops the job.
TEST_F(ProfiledRulesTest, LowGpuUtilizationFindsAnIdleGpu) {
  const std::string script = Script("idle.py", kIdleLoop);
  Finished run = RunCommand(
      Tw({"run", "--name", "lowgpu-1", "--profile-interval", "100ms", "--rule",
          "LowGPUUtilization:window=2s,patience=2s,action=StopTraining", "--stop-grace", "2s",
          "--", "python3", script}),
      IdleGpu());
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  nlohmann::json rules = Json({"rules", "lowgpu-1", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u) << rules.dump();
  const nlohmann::json& status = rules["rule_statuses"][0];
  EXPECT_EQ(status["status"], "IssuesFound") << status.dump();
  ASSERT_FALSE(status["findings"].empty()) << status.dump();
  EXPECT_EQ(status["findings"][0]["reason"], "underutilized");
  EXPECT_EQ(status["findings"][0]["subject"], "GPU 0");
  EXPECT_EQ(status["findings"][0]["observed"], 5);
  EXPECT_THAT(StoppedMessage("lowgpu-1"), StartsWith("Stopped by rule LowGPUUtilization: "));
}

// A "data loader" of one busy process per core while the GPU idles at 5 %:
// CPUBottleneck. The machine is shared, so a snapshot counts as CPU-bound
// when one core is at 80 % or more (min_saturated_cores=1, cpu_threshold=80)
// rather than all cores at 90 %: other load only adds to it.
TEST_F(ProfiledRulesTest, CpuBottleneckFindsBusyLoadersAndAnIdleGpu) {
  const std::string script = Script("loader.py", R"(
import multiprocessing, os, time

def load():
    x = 0
    while True:
        x += 1

if __name__ == "__main__":
    for _ in range(os.cpu_count() or 2):
        multiprocessing.Process(target=load, daemon=True).start()
    for step in range(600):
        print(f"step {step}", flush=True)
        time.sleep(0.1)
)");
  Finished run = RunCommand(
      Tw({"run", "--name", "cpu-1", "--profile-interval", "100ms", "--rule",
          "CPUBottleneck:window=3s,patience=2s,cpu_threshold=80,min_saturated_cores=1,"
          "action=StopTraining",
          "--stop-grace", "2s", "--", "python3", script}),
      IdleGpu());
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  nlohmann::json rules = Json({"rules", "cpu-1", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u) << rules.dump();
  const nlohmann::json& status = rules["rule_statuses"][0];
  EXPECT_EQ(status["status"], "IssuesFound") << status.dump();
  ASSERT_FALSE(status["findings"].empty()) << status.dump();
  EXPECT_EQ(status["findings"][0]["reason"], "cpu_bottleneck");
  EXPECT_EQ(status["findings"][0]["subject"], "host");
  EXPECT_GT(status["findings"][0]["observed"].get<double>(), 50);
  EXPECT_THAT(StoppedMessage("cpu-1"), StartsWith("Stopped by rule CPUBottleneck: "));
}

// A reader that waits on the disk (O_DIRECT reads, past the page cache) while
// the GPU idles: IOBottleneck. I/O wait is only counted while a core is
// otherwise idle, so on a machine whose cores are busy with other work it may
// never rise: the rule must then have run and judged (no "no data"), and the
// test is skipped saying what the machine showed instead of failing.
TEST_F(ProfiledRulesTest, IoBottleneckFindsAReaderWaitingOnTheDisk) {
  const std::string script = Script("reader.py", R"(
import mmap, os, sys, time
path, size, chunk = sys.argv[1], 128 << 20, 1 << 20
with open(path, "wb") as f:
    block = os.urandom(chunk)
    for _ in range(size // chunk):
        f.write(block)
    os.fsync(f.fileno())
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT wants
end = time.time() + 20
step = 0
while time.time() < end:
    for off in range(0, size, chunk):
        os.preadv(fd, [buf], off)
    print(f"step {step}", flush=True)
    step += 1
)");
  Finished run = RunCommand(
      Tw({"run", "--name", "io-1", "--profile-interval", "100ms", "--rule",
          "IOBottleneck:window=3s,patience=2s,threshold=30,io_threshold=20,"
          "min_saturated_cores=1,action=StopTraining",
          "--stop-grace", "2s", "--", "python3", script, dir_ + "/data.bin"}),
      IdleGpu());
  nlohmann::json rules = Json({"rules", "io-1", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u) << rules.dump();
  const nlohmann::json& status = rules["rule_statuses"][0];
  for (const nlohmann::json& f : status["findings"]) {
    EXPECT_NE(f["reason"], "no_data") << "the rule did not see its input: " << f.dump();
  }
  if (status["status"] == "IssuesFound") {
    EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
    EXPECT_EQ(status["findings"][0]["reason"], "io_bottleneck");
    EXPECT_EQ(status["findings"][0]["subject"], "host");
    EXPECT_THAT(StoppedMessage("io-1"), StartsWith("Stopped by rule IOBottleneck: "));
    return;
  }
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(status["status"], "NoIssuesFound") << status.dump();
  Finished iowait = RunCommand(Tw({"metrics", "io-1", "--metric", "CPUIOWaitPercent", "--period",
                                   "1", "--stat", "Maximum", "--format", "csv"}));
  // "timestamp,dimensions,Maximum" rows; the per-core ones have "Core=N".
  double most = 0;
  for (size_t at = 0, nl; (nl = iowait.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string row = iowait.out.substr(at, nl - at);
    if (row.find(",Core=") == std::string::npos) continue;
    most = std::max(most, std::atof(row.substr(row.rfind(',') + 1).c_str()));
  }
  GTEST_SKIP() << "this machine's cores did not wait on I/O enough for IOBottleneck (one core at "
                  "20 % or more in 30 % of the snapshots of 3 s): the most I/O wait a core "
                  "showed in a second was "
               << most << " % (I/O wait is only counted while a core is otherwise idle). The "
               << "rule ran and judged NoIssuesFound.";
}

// What one rule concluded, in a form two runs can be compared by.
struct Verdicts {
  std::string status;
  int64_t findings_total = 0;
  std::vector<std::tuple<std::string, std::string>> reasons;              // sorted
  std::vector<std::tuple<std::string, std::string, int64_t, int64_t>> at;  // + t_ms, step
};
std::map<std::string, Verdicts> VerdictsOf(const nlohmann::json& rules) {
  std::map<std::string, Verdicts> out;
  for (const nlohmann::json& s : rules["rule_statuses"]) {
    Verdicts& v = out[s["configuration_name"].get<std::string>()];
    v.status = s["status"];
    v.findings_total = s.value("findings_total", 0);
    for (const nlohmann::json& f : s["findings"]) {
      v.reasons.emplace_back(f["reason"], f["subject"]);
      v.at.emplace_back(f["reason"], f["subject"], f["t_ms"], f.value("step", int64_t{-1}));
    }
    std::sort(v.reasons.begin(), v.reasons.end());
    std::sort(v.at.begin(), v.at.end());
  }
  return out;
}

// A profiled job with a nan, an idle GPU, a burst of CPU and a hang: the
// replay of what was stored gives each rule the status and findings the live
// run gave. Tick-driven findings (stalled, no progress) are compared by
// reason and subject (the live engine ticks on its clock, replay every
// 200 ms of data time); data-driven ones also by time and step.
//
// The step of a profiler-driven finding may differ by one: it is the step of
// the sample that decided, and live, a step line can reach the engine after a
// profiler sample taken a few milliseconds after it (replay feeds in time
// order). The opposite order (a sample delivered after a later step line) is
// resolved by the evaluator, which gives each input the step of its time.
TEST_F(ProfiledRulesTest, ALiveRunAndItsReplayAgree) {
  const std::string script = Script("mixed.py", R"(
import multiprocessing, time

def load(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass

if __name__ == "__main__":
    for step in range(20):
        print(f"step {step} loss: {1.0 / (step + 1)}", flush=True)
        time.sleep(0.05)
    print("step 20 loss: nan", flush=True)
    workers = [multiprocessing.Process(target=load, args=(2.5,)) for _ in range(2)]
    for w in workers:
        w.start()
    for step in range(21, 46):
        print(f"step {step} loss: 0.5", flush=True)
        time.sleep(0.1)
    for w in workers:
        w.join()
    time.sleep(12)  # hangs: stalled after 2 s, no progress after 10 s
    print("done", flush=True)
)");
  Finished run = RunCommand(
      Tw({"run", "--name", "mixed-1", "--profile-interval", "100ms", "--metric",
          "train:loss=loss: (\\S+)", "--metric", "step=step (\\d+)", "--rule",
          "LowGPUUtilization:window=2s,patience=2s", "--rule",
          "CPUBottleneck:window=2s,patience=1s,cpu_threshold=80,min_saturated_cores=1", "--rule",
          "ExplodingTensor", "--rule", "StalledTrainingRule:threshold=2s", "--rule",
          "NoProgress:threshold=10s,gpu_threshold=10", "--", "python3", script}),
      IdleGpu());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json live = Json({"rules", "mixed-1", "--json"});
  nlohmann::json replay = Json({"rules", "replay", "mixed-1", "--json"});
  std::map<std::string, Verdicts> a = VerdictsOf(live), b = VerdictsOf(replay);
  ASSERT_EQ(a.size(), 5u) << live.dump();
  // What the job did, the live rules saw (CPUBottleneck depends on the machine).
  EXPECT_EQ(a["ExplodingTensor"].status, "IssuesFound");
  EXPECT_EQ(a["LowGPUUtilization"].status, "IssuesFound");
  EXPECT_EQ(a["StalledTrainingRule"].status, "IssuesFound");
  EXPECT_EQ(a["NoProgress"].status, "IssuesFound");
  EXPECT_NE(a["CPUBottleneck"].status, "InProgress");
  ASSERT_EQ(b.size(), a.size()) << replay.dump();
  for (const auto& [name, live_verdicts] : a) {
    const Verdicts& replayed = b[name];
    EXPECT_EQ(replayed.status, live_verdicts.status) << name;
    EXPECT_EQ(replayed.findings_total, live_verdicts.findings_total) << name;
    EXPECT_EQ(replayed.reasons, live_verdicts.reasons) << name;
    if (name == "ExplodingTensor") {
      EXPECT_EQ(replayed.at, live_verdicts.at) << name;  // the step is on the nan's own line
    } else if (name != "StalledTrainingRule" && name != "NoProgress") {
      ASSERT_EQ(replayed.at.size(), live_verdicts.at.size()) << name;
      for (size_t i = 0; i < replayed.at.size(); ++i) {
        const auto& [reason, subject, t_ms, step] = live_verdicts.at[i];
        EXPECT_EQ(std::get<0>(replayed.at[i]), reason) << name;
        EXPECT_EQ(std::get<1>(replayed.at[i]), subject) << name;
        EXPECT_EQ(std::get<2>(replayed.at[i]), t_ms) << name;
        EXPECT_LE(std::abs(std::get<3>(replayed.at[i]) - step), 1) << name << " at step " << step;
      }
    }
  }
  if (::testing::Test::HasFailure()) {
    ADD_FAILURE() << "live:\n" << live.dump(1) << "\nreplay:\n" << replay.dump(1);
  }
}

// A healthy profiled run, the GPU busy at 95 %: every rule of the default set
// ends NoIssuesFound. The default windows and patience are minutes, longer
// than this job, so its data is also replayed through the GPU and CPU rules
// with short ones: they judge it, and find nothing either.
TEST_F(ProfiledRulesTest, AHealthyProfiledRunEndsNoIssuesFoundForEveryRule) {
  const std::string script = Script("healthy.py", R"(
import time
for step in range(40):
    print(f"step {step} loss: {1.0 / (step + 1)}", flush=True)
    time.sleep(0.1)
)");
  Finished run = RunCommand(Tw({"run", "--name", "healthy-1", "--profile-interval", "100ms",
                               "--metric", "train:loss=loss: (\\S+)", "--metric",
                               "step=step (\\d+)", "--", "python3", script}),
                            BusyGpu());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json rules = Json({"rules", "healthy-1", "--json"});
  std::vector<std::string> names;
  for (const nlohmann::json& s : rules["rule_statuses"]) {
    names.push_back(s["configuration_name"]);
    EXPECT_EQ(s["status"], "NoIssuesFound") << s.dump();
  }
  for (const char* rule : {"CPUBottleneck", "IOBottleneck", "LowGPUUtilization", "BatchSize",
                           "GPUMemoryIncrease", "LoadBalancing", "Dataloader",
                           "MaxInitializationTime", "StepOutlier", "NoProgress",
                           "StalledTrainingRule"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), rule), names.end()) << rule;
  }

  nlohmann::json replay = Json(
      {"rules", "replay", "healthy-1", "--json", "--rule", "LowGPUUtilization:window=1s,patience=1s",
       "--rule", "CPUBottleneck:window=1s,patience=1s,min_saturated_cores=1", "--rule",
       "IOBottleneck:window=1s,patience=1s,min_saturated_cores=1", "--rule",
       "BatchSize:window=1s,patience=1s", "--rule", "GPUMemoryIncrease:window=2s,patience=1s",
       "--rule", "NoProgress:threshold=10s"});
  ASSERT_EQ(replay["rule_statuses"].size(), 6u) << replay.dump();
  for (const nlohmann::json& s : replay["rule_statuses"]) {
    EXPECT_EQ(s["status"], "NoIssuesFound") << s.dump();
    EXPECT_TRUE(s["findings"].empty()) << "saw no data, or found something: " << s.dump();
  }
}

}  // namespace
}  // namespace trainwatch
