// One profiler tick: Sampler::SampleOnce over this machine's /proc and /sys
// (this process and a small tree of sleeping threads as the job), and the
// parsers alone over fixture text.
//
//   cmake --preset release && cmake --build --preset release --target profiler_tick_bench
//   build/release/bench/profiler/profiler_tick_bench

#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "profiler/proc_parsers.h"
#include "profiler/sampler.h"

namespace trainwatch::profiler {
namespace {

std::string Fixture(const std::string& rel) {
  std::ifstream in(std::string(TW_PROFILER_TESTDATA) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Threads that sleep until the benchmark ends: a job with some threads.
class SleepingThreads {
 public:
  explicit SleepingThreads(int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_; });
      });
    }
  }
  ~SleepingThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

void BM_SampleOnceRealProc(benchmark::State& state) {
  SleepingThreads threads(static_cast<int>(state.range(0)));
  ProfilerOptions options;
  options.job_name = "bench";
  options.interval_ms = 100;
  options.nvml_library = "";
  auto sampler = Sampler::Create(options, ::getpid());
  if (!sampler.ok()) {
    state.SkipWithError(std::string(sampler.status().message()).c_str());
    return;
  }
  int64_t t_ms = 1736942400000, mono_ns = 1000000000;
  size_t samples = 0;
  for (auto _ : state) {
    const model::SampleBatch& b = (*sampler)->SampleOnce(t_ms, mono_ns);
    samples += b.SampleCount();
    t_ms += 100;
    mono_ns += 100000000;
  }
  state.counters["samples_per_tick"] =
      benchmark::Counter(static_cast<double>(samples) / state.iterations());
}
BENCHMARK(BM_SampleOnceRealProc)->Arg(8)->Arg(64);

void BM_ParseProcStat(benchmark::State& state) {
  std::string text = Fixture("v2/proc/stat");
  ProcStat st;
  for (auto _ : state) benchmark::DoNotOptimize(ParseProcStat(text, &st));
}
BENCHMARK(BM_ParseProcStat);

void BM_ParseMeminfo(benchmark::State& state) {
  std::string text = Fixture("v2/proc/meminfo");
  MemInfo m;
  for (auto _ : state) benchmark::DoNotOptimize(ParseMeminfo(text, &m));
}
BENCHMARK(BM_ParseMeminfo);

void BM_ParsePidStat(benchmark::State& state) {
  std::string text = Fixture("v2/proc/4260/stat");
  PidStat st;
  for (auto _ : state) benchmark::DoNotOptimize(ParsePidStat(text, &st));
}
BENCHMARK(BM_ParsePidStat);

}  // namespace
}  // namespace trainwatch::profiler
