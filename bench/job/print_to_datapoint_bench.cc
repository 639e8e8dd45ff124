// How long from a training script printing a metric line to its datapoint being
// stored, through everything the runner owns: pipe, reader thread, passthrough,
// line splitting, extraction, batching, and the sink's Put returning.
//
// The fake trainer prints "step=I t_us=T loss=L" with T = its own clock at print
// time (CLOCK_REALTIME, microseconds); the definition print_us=\bt_us=([0-9]+) turns T
// into a datapoint, and the sink notes (now - T) when Put returns. Sink latency
// (the argument, microseconds per Put and per PutLogs) stands for a store's durable
// write. Reported: p50, p99, max in milliseconds.
//
//   cmake --preset release && cmake --build --preset release --target job_bench -- -j2
//   build/release/bench/job/job_bench
//
// BM_Throughput pushes 64 MB of log lines from yes(1) (no definition matches) and
// reports MB/s through capture and the telemetry writer into a sink that discards.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "job/job_runner.h"

namespace trainwatch::job {
namespace {

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A TelemetrySink that records (now - value) for the datapoints of print_us, and
// sleeps `latency` in each Put and PutLogs.
class LatencySink : public model::TelemetrySink {
 public:
  explicit LatencySink(std::chrono::microseconds latency) : latency_(latency) {}
  absl::Status Put(const model::SampleBatch& batch) override {
    if (latency_.count() > 0) std::this_thread::sleep_for(latency_);
    const int64_t now_us = NowUs();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : batch.series) {
      if (s.key.metric != "print_us") continue;
      for (const auto& sample : s.samples) {
        latencies_us_.push_back(now_us - static_cast<int64_t>(sample.value));
      }
    }
    return absl::OkStatus();
  }
  absl::Status PutLogs(const model::LogBatch& batch) override {
    if (latency_.count() > 0) std::this_thread::sleep_for(latency_);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : batch.events) log_bytes_ += e.message.size();
    return absl::OkStatus();
  }
  absl::Status CreateJob(const model::JobRecord&) override { return absl::OkStatus(); }
  absl::Status UpdateJob(const model::JobRecord&) override { return absl::OkStatus(); }
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view) override {
    return std::optional<model::JobRecord>();
  }
  std::vector<int64_t> latencies_us() {
    std::lock_guard<std::mutex> lock(mu_);
    return latencies_us_;
  }
  uint64_t log_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_bytes_;
  }

 private:
  const std::chrono::microseconds latency_;
  std::mutex mu_;
  std::vector<int64_t> latencies_us_;
  uint64_t log_bytes_ = 0;
};

RunSpec Spec(std::vector<std::string> actions, int dev_null) {
  RunSpec spec;
  spec.name = "bench";
  spec.command = {"/usr/bin/python3", std::string(TW_SOURCE_DIR) + "/tests/e2e/fake_trainer.py"};
  spec.command.insert(spec.command.end(), actions.begin(), actions.end());
  spec.stdout_fd = dev_null;  // passthrough stays in the path
  spec.stderr_fd = dev_null;
  spec.stdin_fd = -1;
  spec.handle_signals = false;
  spec.drain_after_exit_ms = 100;
  return spec;
}

double Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[i]) / 1000.0;
}

// Args: lines, ms between lines, sink latency in microseconds.
void BM_PrintToDatapoint(benchmark::State& state) {
  const int lines = static_cast<int>(state.range(0));
  const int interval_ms = static_cast<int>(state.range(1));
  const auto sink_latency = std::chrono::microseconds(state.range(2));
  int dev_null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  std::vector<int64_t> all;
  for (auto _ : state) {
    LatencySink sink(sink_latency);
    RunSpec spec = Spec({"timed:" + std::to_string(lines) + ":" + std::to_string(interval_ms)},
                        dev_null);
    spec.metric_definitions = {{"print_us", "\\bt_us=([0-9]+)"}, {"loss", "\\bloss=([0-9.]+)"}};
    auto runner = JobRunner::Create(spec, &sink);
    auto result = (*runner)->Run();
    if (!result.ok() || result->exit_code != 0) {
      state.SkipWithError("the job failed");
      break;
    }
    auto latencies = sink.latencies_us();
    all.insert(all.end(), latencies.begin(), latencies.end());
  }
  ::close(dev_null);
  state.counters["lines"] = static_cast<double>(all.size());
  state.counters["p50_ms"] = Percentile(all, 0.50);
  state.counters["p99_ms"] = Percentile(all, 0.99);
  state.counters["max_ms"] = Percentile(all, 1.0);
}
BENCHMARK(BM_PrintToDatapoint)
    ->ArgNames({"lines", "every_ms", "sink_us"})
    ->Args({400, 5, 0})       // a training loop printing 200 lines/s, fast sink
    ->Args({400, 5, 2000})    // ... a sink that takes 2 ms per write (fsync-like)
    ->Args({400, 5, 20000})   // ... a slow sink, 20 ms per write
    ->Args({20000, 0, 2000})  // a burst: 20,000 lines at once, 2 ms sink
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Throughput(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  int dev_null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  uint64_t stored = 0;
  for (auto _ : state) {
    LatencySink sink(std::chrono::microseconds(0));
    RunSpec spec = Spec({}, dev_null);
    // yes(1) writes far faster than any trainer: the runner is what is measured.
    spec.command = {"/bin/sh", "-c",
                    "yes 'epoch=3 step=1234 loss=0.4567 lr=0.001 throughput=812.5/s' | head -c " +
                        std::to_string(bytes)};
    spec.metric_definitions = {{"never", "never=([0-9]+)"}};
    auto runner = JobRunner::Create(spec, &sink);
    auto result = (*runner)->Run();
    if (!result.ok() || result->exit_code != 0) {
      state.SkipWithError("the job failed");
      break;
    }
    stored += sink.log_bytes();
  }
  ::close(dev_null);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["stored_MB"] = static_cast<double>(stored) / 1e6;
}
BENCHMARK(BM_Throughput)->Arg(64 << 20)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace trainwatch::job
