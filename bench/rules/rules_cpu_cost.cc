// CPU cost of the default rule set on a job profiled every 100 ms, as a
// share of one core: CPU seconds spent per second of the job's data.
//
// Feeds HOURS of simulated data of one host (rules_bench_data.h): every
// 100 ms the profiler's batch (5 series per core, 26 host series, 10 per GPU;
// the rules read per-core CPU and I/O wait, host CPU, job CPU, job processes,
// cores, and per-GPU utilisation, memory utilisation, memory used and total),
// and 10 output lines a second, each with 20 log metrics and the step.
//
//   evaluator  a JobEvaluator fed the Inputs directly (the rules and the
//              status logic only), with a clock tick every 200 ms of data;
//              CPU of the calling thread
//   engine     the live path: Engine observer calls (OnSamples with the
//              whole profiler batch of a tick, OnLogs and OnSamples per
//              line), its queue and thread, evaluation and writes to a sink
//              that discards; the engine's clock advances with the data, so
//              it ticks every 200 ms of data. CPU of the whole process
//              (getrusage), the batches themselves being reused, not built
//
//   cmake --build --preset release --target rules_cpu_cost
//   build/release/bench/rules/rules_cpu_cost [HOURS=1]
//
// Prints, for 8 cores + 4 GPUs and 32 cores + 8 GPUs: inputs, CPU seconds
// and % of one core (target <= 0.5 %).

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rules/engine.h"
#include "rules/evaluator.h"
#include "rules_bench_data.h"
#include "util/clock.h"

namespace {

using namespace trainwatch;
using bench::ProfilerSeries;

constexpr int64_t kProfileMs = 100;
constexpr int kLinesPerSecond = 10;

double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuS() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

rules::Signal SignalOf(ProfilerSeries::Kind kind) {
  switch (kind) {
    case ProfilerSeries::kCoreCpu: return rules::Signal::kCoreCpu;
    case ProfilerSeries::kCoreIoWait: return rules::Signal::kCoreIoWait;
    case ProfilerSeries::kHostCpu: return rules::Signal::kHostCpu;
    case ProfilerSeries::kJobCpu: return rules::Signal::kJobCpu;
    case ProfilerSeries::kJobProcs: return rules::Signal::kJobProcesses;
    case ProfilerSeries::kCores: return rules::Signal::kCpuCores;
    case ProfilerSeries::kGpuUtil: return rules::Signal::kGpuUtil;
    case ProfilerSeries::kGpuMemUtil: return rules::Signal::kGpuMemUtil;
    case ProfilerSeries::kGpuMemUsed: return rules::Signal::kGpuMemUsedBytes;
    case ProfilerSeries::kGpuMemTotal: return rules::Signal::kGpuMemTotalBytes;
    case ProfilerSeries::kOther: break;
  }
  return rules::Signal::kTick;
}

struct Result {
  int64_t inputs = 0;
  double cpu_s = 0;
  double data_s = 0;
};

Result RunEvaluator(int cores, int gpus, double hours) {
  const std::string name = "cpu-cost";
  const model::JobRecord job = bench::MakeJob(name, bench::kT0, kProfileMs);
  const std::vector<ProfilerSeries> series = bench::HostSeries(name, cores, gpus, false);
  const std::vector<model::SeriesKey> metrics = bench::MetricKeys(name);
  bench::Noise noise(1);
  rules::JobEvaluator evaluator(job, bench::kT0);
  rules::Outcome out;
  Result r;
  const int64_t ticks = static_cast<int64_t>(hours * 3600 * 1000 / kProfileMs);
  const int64_t line_every = 1000 / kLinesPerSecond;
  int64_t line = 0;
  const double t0 = ThreadCpuS();
  rules::Input in;
  for (int64_t k = 1; k <= ticks; ++k) {
    const int64_t t = bench::kT0 + k * kProfileMs;
    for (const ProfilerSeries& s : series) {
      in = rules::Input{};
      in.signal = SignalOf(s.kind);
      in.t_ms = t;
      in.value = bench::ProfilerValue(s, cores, noise);
      in.index = s.index;
      evaluator.Feed(in, &out);
      ++r.inputs;
    }
    for (int64_t lt = t - kProfileMs + line_every; lt <= t; lt += line_every) {
      ++line;
      in = rules::Input{};
      in.signal = rules::Signal::kLogLine;
      in.t_ms = lt;
      evaluator.Feed(in, &out);
      for (size_t i = 0; i < metrics.size(); ++i) {
        in = rules::Input{};
        in.signal = rules::Signal::kMetric;
        in.t_ms = lt;
        in.name = metrics[i].metric;
        in.value = bench::MetricValue(i, line, static_cast<double>(lt - bench::kT0) / 1000, noise);
        evaluator.Feed(in, &out);
      }
      r.inputs += 1 + static_cast<int64_t>(metrics.size());
    }
    if (k % 2 == 0) {
      in = rules::Input{};
      in.signal = rules::Signal::kTick;
      in.t_ms = t;
      evaluator.Feed(in, &out);
    }
    out = rules::Outcome{};
  }
  r.cpu_s = ThreadCpuS() - t0;
  r.data_s = static_cast<double>(ticks * kProfileMs) / 1000;
  return r;
}

class DiscardingSink final : public rules::RuleResultSink {
 public:
  absl::Status SetRuleStatuses(const std::string&, int,
                               const std::vector<model::RuleStatus>&) override {
    return absl::OkStatus();
  }
  absl::Status PutLogs(const model::LogBatch&) override { return absl::OkStatus(); }
};

Result RunEngine(int cores, int gpus, double hours) {
  const std::string name = "cpu-cost";
  const model::JobRecord job = bench::MakeJob(name, bench::kT0, kProfileMs);
  const std::vector<ProfilerSeries> series = bench::HostSeries(name, cores, gpus, true);
  bench::Noise noise(1);
  util::FakeClock clock(bench::kT0);
  DiscardingSink sink;
  rules::Engine engine(&sink, nullptr, {.clock = &clock});
  engine.OnJob(job);
  engine.Flush();

  // The batches, built once; each tick rewrites their samples.
  model::SampleBatch profiler_batch;
  for (const ProfilerSeries& s : series) profiler_batch.series.push_back({s.key, 1, {{0, 0}}, {}, {}});
  model::SampleBatch line_batch;
  for (const model::SeriesKey& key : bench::MetricKeys(name)) {
    line_batch.series.push_back({key, 1, {{0, 0}}, {}, {}});
  }
  model::LogBatch log_batch{{std::string(model::kTrainingJobsLogGroup), job.log_stream},
                            {{0, "step 1 m0=0.5 m1=1.2 ..."}}};

  Result r;
  const int64_t ticks = static_cast<int64_t>(hours * 3600 * 1000 / kProfileMs);
  const int64_t line_every = 1000 / kLinesPerSecond;
  int64_t line = 0;
  const double t0 = ProcessCpuS();
  for (int64_t k = 1; k <= ticks; ++k) {
    const int64_t t = bench::kT0 + k * kProfileMs;
    for (size_t i = 0; i < series.size(); ++i) {
      profiler_batch.series[i].samples[0] = {t, bench::ProfilerValue(series[i], cores, noise)};
    }
    engine.OnSamples(profiler_batch);
    r.inputs += cores * 2 + 4 + gpus * 4;
    for (int64_t lt = t - kProfileMs + line_every; lt <= t; lt += line_every) {
      ++line;
      log_batch.events[0].t_ms = lt;
      engine.OnLogs(log_batch);
      for (size_t i = 0; i < line_batch.series.size(); ++i) {
        line_batch.series[i].samples[0] = {
            lt, bench::MetricValue(i, line, static_cast<double>(lt - bench::kT0) / 1000, noise)};
      }
      engine.OnSamples(line_batch);
      r.inputs += 1 + static_cast<int64_t>(line_batch.series.size());
    }
    clock.AdvanceMs(kProfileMs);
    engine.Flush();
  }
  r.cpu_s = ProcessCpuS() - t0;
  r.data_s = static_cast<double>(ticks * kProfileMs) / 1000;
  return r;
}

void Print(const char* path, int cores, int gpus, const Result& r) {
  std::printf("%-9s %2d cores %d GPUs: %.1f h of data, %lld inputs (%.0f/s), %.3f CPU s, "
              "%.1f ns/input, %.4f %% of one core\n",
              path, cores, gpus, r.data_s / 3600, static_cast<long long>(r.inputs),
              static_cast<double>(r.inputs) / r.data_s, r.cpu_s,
              r.cpu_s * 1e9 / static_cast<double>(r.inputs), 100 * r.cpu_s / r.data_s);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const double hours = argc > 1 ? std::atof(argv[1]) : 1.0;
  if (hours <= 0) {
    std::fprintf(stderr, "usage: rules_cpu_cost [HOURS=1]\n");
    return 2;
  }
  for (auto [cores, gpus] : {std::pair{8, 4}, std::pair{32, 8}}) {
    Print("evaluator", cores, gpus, RunEvaluator(cores, gpus, hours));
    Print("engine", cores, gpus, RunEngine(cores, gpus, hours));
  }
  return 0;
}
