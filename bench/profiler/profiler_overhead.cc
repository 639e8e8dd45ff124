// profiler_overhead: what the running profiler costs. Forks a process tree
// standing in for a training job (a root and --workers data-loader processes,
// each with --threads sleeping threads), profiles it with the real threaded
// Profiler at --interval-ms for --seconds into a sink that only counts, and
// prints key=value lines:
//
//   profiler_cpu_s         CPU time of the sampling thread (CLOCK_THREAD_CPUTIME_ID)
//   process_cpu_s          CPU time of this whole process (getrusage), the idle main thread
//   included percent_of_core        100 * profiler_cpu_s / wall seconds peak_rss_mib VmHWM of this
//   process: the binary, libraries and the profiler profiler_rss_mib       VmRSS after Stop minus
//   VmRSS before Start: the profiler's own growth ticks late_ticks samples max_tick_ms gpus
//
//   build/release/bench/profiler/profiler_overhead --seconds 60 --interval-ms 100

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "profiler/profiler.h"
#include "util/clock.h"

namespace {

class CountingSink : public trainwatch::model::SampleSink {
 public:
  absl::Status Put(const trainwatch::model::SampleBatch& batch) override {
    samples_ += batch.SampleCount();
    return absl::OkStatus();
  }
  size_t samples_ = 0;
};

double StatusMib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0)
      return std::strtod(line.c_str() + std::strlen(key), nullptr) / 1024;
  }
  return 0;
}

// A process with `threads` threads blocked on `fd` until it reaches EOF.
[[noreturn]] void SleepyProcess(int fd, int threads) {
  std::vector<std::thread> ts;
  for (int i = 1; i < threads; ++i) {
    ts.emplace_back([fd] {
      char c;
      while (::read(fd, &c, 1) > 0) {
      }
    });
  }
  char c;
  while (::read(fd, &c, 1) > 0) {
  }
  for (auto& t : ts) t.join();
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 60, interval_ms = 100, workers = 4, threads = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (flag == "--seconds")
      seconds = v;
    else if (flag == "--interval-ms")
      interval_ms = v;
    else if (flag == "--workers")
      workers = v;
    else if (flag == "--threads")
      threads = v;
    else {
      std::fprintf(stderr,
                   "usage: %s [--seconds N] [--interval-ms MS] [--workers N] [--threads N]\n",
                   argv[0]);
      return 2;
    }
  }
  int hold[2];
  if (::pipe(hold) != 0) return 1;
  pid_t root = ::fork();
  if (root == 0) {
    ::close(hold[1]);
    for (int w = 0; w < workers; ++w) {
      if (::fork() == 0) SleepyProcess(hold[0], threads);
    }
    std::thread reaper([] {
      while (::wait(nullptr) > 0) {
      }
    });
    reaper.detach();
    SleepyProcess(hold[0], threads);
  }
  ::close(hold[0]);

  trainwatch::profiler::ProfilerOptions options;
  options.job_name = "overhead";
  options.interval_ms = interval_ms;
  CountingSink sink;
  double rss_before = StatusMib("VmRSS:");
  auto started = std::chrono::steady_clock::now();
  auto profiler = trainwatch::profiler::Profiler::Start(options, root, &sink,
                                                        &trainwatch::util::SystemClock::Get());
  if (!profiler.ok()) {
    std::fprintf(stderr, "%s\n", std::string(profiler.status().message()).c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  (*profiler)->Stop();
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double rss_after = StatusMib("VmRSS:");
  trainwatch::profiler::ProfilerStats stats = (*profiler)->stats();
  struct rusage self {};
  ::getrusage(RUSAGE_SELF, &self);
  double process_cpu_s = self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + self.ru_stime.tv_sec +
                         self.ru_stime.tv_usec / 1e6;
  ::close(hold[1]);
  ::waitpid(root, nullptr, 0);

  double cpu_s = stats.own_cpu_ns / 1e9;
  std::printf("seconds=%.1f\ninterval_ms=%d\njob_processes=%d\njob_threads=%d\n", wall_s,
              interval_ms, workers + 1, (workers + 1) * threads);
  std::printf("profiler_cpu_s=%.4f\nprocess_cpu_s=%.4f\npercent_of_core=%.3f\n", cpu_s,
              process_cpu_s, 100 * cpu_s / wall_s);
  std::printf("peak_rss_mib=%.1f\nprofiler_rss_mib=%.1f\n", StatusMib("VmHWM:"),
              rss_after - rss_before);
  std::printf("ticks=%lld\nlate_ticks=%lld\nsamples=%zu\nmax_tick_ms=%.2f\ngpus=%d\n",
              static_cast<long long>(stats.ticks), static_cast<long long>(stats.late_ticks),
              sink.samples_, stats.max_tick_ns / 1e6, stats.gpus);
  return 0;
}
