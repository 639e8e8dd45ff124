#include "profiler/profiler.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <numeric>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/metric_names.h"
#include "profiler/test_util.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

using testing::MemorySampleSink;
using Dims = std::map<std::string, std::string>;

TEST(NextGridSlotTest, OnTimeGoesToTheNextSlot) {
  GridStep s = NextGridSlot(1000, 100, 3, 1000 + 3 * 100 + 20);
  EXPECT_EQ(s.next_slot, 4);
  EXPECT_EQ(s.skipped, 0);
}

TEST(NextGridSlotTest, OverrunSkipsThePassedSlotsInsteadOfBunching) {
  GridStep s = NextGridSlot(1000, 100, 3, 1000 + 5 * 100 + 50);  // tick 3 ended inside slot 5
  EXPECT_EQ(s.next_slot, 6);
  EXPECT_EQ(s.skipped, 2);
  s = NextGridSlot(1000, 100, 3, 1000 + 4 * 100);  // exactly at slot 4: run it
  EXPECT_EQ(s.next_slot, 5);
  EXPECT_EQ(s.skipped, 1);
}

TEST(NextGridSlotTest, NeverGoesBackwards) {
  GridStep s = NextGridSlot(1000, 100, 7, 900);  // a clock before the origin
  EXPECT_EQ(s.next_slot, 8);
  EXPECT_EQ(s.skipped, 0);
}

ProfilerOptions RealOptions(const std::string& job, int64_t interval_ms) {
  ProfilerOptions o;
  o.job_name = job;
  o.interval_ms = interval_ms;
  o.nvml_library = "";  // CPU is what these tests look at
  return o;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

int64_t MonoMs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// The end-to-end check: a job that burns CPU for 2 s and then sleeps
// 2 s, sampled every 100 ms with the real /proc, has ~40 samples per series
// and the burn shows in CPUUtilization.
TEST(ProfilerEndToEndTest, BurnThenSleepAt100Ms) {
  // The child starts its burn when the profiler has started (the pipe closes),
  // so that all of its CPU falls after the first sample.
  // It reports when its burn began and ended (wall clock, as samples are
  // stamped): a loaded machine may start it late, and the windows below are
  // the child's, not the profiler's start plus a guess.
  int go[2];
  int phases[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(phases), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    ::close(phases[0]);
    char byte;
    while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {
    }
    int64_t times[2];
    times[0] = util::SystemClock::Get().NowMs();
    int64_t end = MonoMs() + 2000;
    volatile uint64_t x = 0;
    while (MonoMs() < end) x = x + 1;
    times[1] = util::SystemClock::Get().NowMs();
    if (::write(phases[1], times, sizeof(times)) != sizeof(times)) ::_exit(1);
    struct timespec two_s = {2, 0};
    while (::nanosleep(&two_s, &two_s) != 0) {
    }
    ::_exit(0);
  }
  ::close(phases[1]);
  util::SystemClock& clock = util::SystemClock::Get();
  const int64_t start_ms = clock.NowMs();
  MemorySampleSink sink;
  auto p = Profiler::Start(RealOptions("burn", 100), child, &sink, &clock);
  ::close(go[0]);
  ::close(go[1]);
  ASSERT_TRUE(p.ok()) << p.status();
  // Exited, not yet reaped: the final sample still sees the job's counters.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  (*p)->Stop();
  const int64_t stop_ms = clock.NowMs();
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(child, &status, 0, &usage), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int64_t phase_ms[2] = {0, 0};
  ASSERT_EQ(::read(phases[0], phase_ms, sizeof(phase_ms)), static_cast<ssize_t>(sizeof(phase_ms)));
  ::close(phases[0]);
  const int64_t burn_start_ms = phase_ms[0], burn_end_ms = phase_ms[1];
  const double child_cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
                             usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;

  ProfilerStats stats = (*p)->stats();
  Dims host = {{"Host", "burn/algo-1"}};
  std::vector<model::Sample> cpu = sink.Series(kSageMakerNamespace, metric::kCPUUtilization, host);
  std::vector<model::Sample> rss = sink.Series(kProfilerNamespace, metric::kJobRSS, host);
  std::vector<model::Sample> mem =
      sink.Series(kSageMakerNamespace, metric::kMemoryUtilization, host);
  // ~4 s at 100 ms: 40 ticks plus the first and the final; at most one per
  // 100 ms of the time the profiler ran, however slowly a loaded machine
  // started the child.
  const int64_t most_ticks = (stop_ms - start_ms) / 100 + 2;
  EXPECT_GE(stats.ticks, 36);
  EXPECT_LE(stats.ticks, most_ticks);
  EXPECT_GE(rss.size(), 35u);
  EXPECT_LE(static_cast<int64_t>(rss.size()), most_ticks);
  EXPECT_EQ(mem.size(), rss.size());
  EXPECT_EQ(cpu.size(), rss.size() - 1);  // no rate at the first tick
  EXPECT_EQ(stats.put_errors, 0);
  EXPECT_GT(stats.own_cpu_ns, 0);

  std::vector<double> burn, rest;
  // A sample covers the interval before it: the first of the burn and the
  // first of the sleep straddle the edges.
  for (const auto& s : cpu) {
    if (s.t_ms >= burn_start_ms + 200 && s.t_ms <= burn_end_ms) burn.push_back(s.value);
    if (s.t_ms >= burn_end_ms + 300 && s.t_ms <= burn_end_ms + 1900) rest.push_back(s.value);
  }
  ASSERT_GE(burn.size(), 10u);
  ASSERT_GE(rest.size(), 10u);
  // One busy thread gets up to 100 % of a core; on a shared, busy machine
  // less, so the burn is judged against the sleep, not against 100.
  EXPECT_LE(Mean(rest), 5.0);
  EXPECT_GT(Mean(burn), Mean(rest) + 10.0);
  EXPECT_GT(Mean(burn), 3 * Mean(rest));
  // And the profiler's CPU adds up to what the kernel charged the child:
  // each sample covers the interval since the previous one.
  double profiled_cpu_s = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    int64_t prev_t = i == 0 ? rss[0].t_ms : cpu[i - 1].t_ms;
    profiled_cpu_s += cpu[i].value / 100.0 * (cpu[i].t_ms - prev_t) / 1000.0;
  }
  RecordProperty("samples", static_cast<int>(rss.size()));
  RecordProperty("burn_mean_percent", std::to_string(Mean(burn)));
  RecordProperty("sleep_mean_percent", std::to_string(Mean(rest)));
  RecordProperty("profiled_cpu_s", std::to_string(profiled_cpu_s));
  RecordProperty("child_cpu_s", std::to_string(child_cpu_s));
  EXPECT_NEAR(profiled_cpu_s, child_cpu_s, 0.1 + 0.1 * child_cpu_s)
      << "burn mean " << Mean(burn) << "%, sleep mean " << Mean(rest) << "%";

  // Timestamps rise; the spacing is the interval.
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < rss.size(); ++i) {
    ASSERT_GT(rss[i].t_ms, rss[i - 1].t_ms);
    gaps.push_back(rss[i].t_ms - rss[i - 1].t_ms);
  }
  std::sort(gaps.begin(), gaps.end());
  EXPECT_NEAR(gaps[gaps.size() / 2], 100, 10);
  // Each tick is one Put.
  EXPECT_EQ(static_cast<int64_t>(sink.batches().size()), stats.ticks);
}

// A sink that takes 250 ms per Put: the work the test is about, not a wait.
class SlowSink : public model::SampleSink {
 public:
  absl::Status Put(const model::SampleBatch& batch) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : batch.series) {
      if (!s.samples.empty()) {
        times_.push_back(s.samples[0].t_ms);
        break;
      }
    }
    return absl::OkStatus();
  }
  std::vector<int64_t> times() {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> times_;
};

TEST(ProfilerTest, LateTicksAreCountedNotBunched) {
  SlowSink sink;
  auto p = Profiler::Start(RealOptions("slow", 100), ::getpid(), &sink, &util::SystemClock::Get());
  ASSERT_TRUE(p.ok()) << p.status();
  while ((*p)->stats().ticks < 5) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  (*p)->Stop();
  ProfilerStats stats = (*p)->stats();
  EXPECT_GE(stats.late_ticks, 2 * (stats.ticks - 3));  // each 250 ms tick passes 2 slots
  std::vector<int64_t> t = sink.times();
  for (size_t i = 2; i < t.size(); ++i) EXPECT_GE(t[i] - t[i - 1], 240) << i;
}

TEST(ProfilerTest, FailingSinkIsCountedAndSamplingGoesOn) {
  MemorySampleSink sink;
  sink.set_fail(true);
  auto p =
      Profiler::Start(RealOptions("failing", 100), ::getpid(), &sink, &util::SystemClock::Get());
  ASSERT_TRUE(p.ok());
  while ((*p)->stats().ticks < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  (*p)->Stop();
  ProfilerStats stats = (*p)->stats();
  EXPECT_EQ(stats.put_errors, stats.ticks);
  EXPECT_EQ(stats.samples, 0);
  EXPECT_GE(util::LogOnceCount("profiler.put-failed"), 1);
}

TEST(ProfilerTest, ThreadIsNamedAndStopIsIdempotentWithAFinalSample) {
  MemorySampleSink sink;
  auto p =
      Profiler::Start(RealOptions("named", 5000), ::getpid(), &sink, &util::SystemClock::Get());
  ASSERT_TRUE(p.ok());
  bool found = false;
  for (int attempt = 0; attempt < 100 && !found; ++attempt) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      found = found || name == "tw-profiler";
    }
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(found);
  while ((*p)->stats().ticks < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int64_t before_stop = util::SystemClock::Get().NowMs();
  (*p)->Stop();
  (*p)->Stop();
  ProfilerStats stats = (*p)->stats();
  EXPECT_EQ(stats.ticks, 2);  // the first at start, the final at Stop (5 s interval)
  std::vector<model::SampleBatch> batches = sink.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_GE(batches.back().series[0].samples[0].t_ms, before_stop);
}

TEST(ProfilerTest, StartRefusesBadArguments) {
  MemorySampleSink sink;
  util::SystemClock& clock = util::SystemClock::Get();
  EXPECT_TRUE(absl::IsInvalidArgument(
      Profiler::Start(RealOptions("x", 100), ::getpid(), nullptr, &clock).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      Profiler::Start(RealOptions("x", 100), ::getpid(), &sink, nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      Profiler::Start(RealOptions("x", 0), ::getpid(), &sink, &clock).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      Profiler::Start(RealOptions("x", 300), ::getpid(), &sink, &clock).status()));
  EXPECT_TRUE(sink.batches().empty());
}

}  // namespace
}  // namespace trainwatch::profiler
