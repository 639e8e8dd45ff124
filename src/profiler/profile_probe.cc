// profile_probe: the profiler alone, for checking a machine (scripts/gpu-check).
// Runs CMD, profiles it until it exits, and prints every sample as CSV:
//
//   t_ms,namespace,metric,dimensions,unit,value
//   1736942400123,trainwatch/Profiler,GPUUtilization,GPU=0;Host=probe/algo-1,Percent,87
//
// then "# " lines with the profiler's statistics. Exits with CMD's status
// (128 + signal when killed).
//
//   profile_probe [--interval-ms 100] [--job NAME] [--nvml LIB] [--only SUBSTR] -- CMD [ARGS...]

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "profiler/profiler.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace {

using trainwatch::model::SampleBatch;

class CsvSink : public trainwatch::model::SampleSink {
 public:
  explicit CsvSink(std::string only) : only_(std::move(only)) {}
  absl::Status Put(const SampleBatch& batch) override {
    trainwatch::util::MutexLock lock(mu_);
    for (const auto& s : batch.series) {
      if (!only_.empty() && s.key.metric.find(only_) == std::string::npos) continue;
      std::string dims;
      for (const auto& d : s.key.dimensions) {
        if (!dims.empty()) dims += ';';
        dims += d.name + "=" + d.value;
      }
      for (const auto& x : s.samples) {
        std::printf("%lld,%s,%s,%s,%s,%.17g\n", static_cast<long long>(x.t_ms), s.key.ns.c_str(),
                    s.key.metric.c_str(), dims.c_str(), s.key.unit.c_str(), x.value);
      }
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }

 private:
  trainwatch::util::Mutex mu_;
  std::string only_ ABSL_GUARDED_BY(mu_);
};

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--interval-ms 100|200|500|1000|5000|60000] [--job NAME] [--nvml LIB] "
               "[--only SUBSTR] -- CMD [ARGS...]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  trainwatch::profiler::ProfilerOptions options;
  options.job_name = "probe";
  options.interval_ms = 100;
  std::string only;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) return Usage(argv[0]);
    if (a == "--interval-ms")
      options.interval_ms = std::atoll(argv[++i]);
    else if (a == "--job")
      options.job_name = argv[++i];
    else if (a == "--nvml")
      options.nvml_library = argv[++i];
    else if (a == "--only")
      only = argv[++i];
    else
      return Usage(argv[0]);
  }
  if (i >= argc) return Usage(argv[0]);

  std::printf("t_ms,namespace,metric,dimensions,unit,value\n");
  std::fflush(stdout);
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    ::execvp(argv[i], argv + i);
    std::fprintf(stderr, "profile_probe: cannot run %s: %s\n", argv[i], std::strerror(errno));
    ::_exit(127);
  }
  CsvSink sink(only);
  auto profiler = trainwatch::profiler::Profiler::Start(options, child, &sink,
                                                        &trainwatch::util::SystemClock::Get());
  if (!profiler.ok()) {
    std::fprintf(stderr, "profile_probe: %s\n", std::string(profiler.status().message()).c_str());
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return 1;
  }
  // Exited but not reaped: the final sample still sees the job's CPU.
  siginfo_t info{};
  while (::waitid(P_PID, child, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  (*profiler)->Stop();
  int status = 0;
  ::waitpid(child, &status, 0);
  trainwatch::profiler::ProfilerStats st = (*profiler)->stats();
  const auto& d = st.degraded;
  std::printf("# ticks=%lld late_ticks=%lld samples=%lld put_errors=%lld gpus=%d\n",
              static_cast<long long>(st.ticks), static_cast<long long>(st.late_ticks),
              static_cast<long long>(st.samples), static_cast<long long>(st.put_errors), st.gpus);
  std::printf("# profiler_cpu_ms=%.1f max_tick_ms=%.2f nvml_init_ms=%.1f\n", st.own_cpu_ns / 1e6,
              st.max_tick_ns / 1e6, st.nvml_init_ns / 1e6);
  std::printf(
      "# degraded: nvml_unavailable=%lld cgroup_v1=%lld psi_unavailable=%lld "
      "gpu_lost=%lld gpu_field_unsupported=%lld gpu_read_errors=%lld "
      "gpu_process_list_invalid=%lld\n",
      static_cast<long long>(d.nvml_unavailable), static_cast<long long>(d.cgroup_v1),
      static_cast<long long>(d.psi_unavailable), static_cast<long long>(d.gpu_lost),
      static_cast<long long>(d.gpu_field_unsupported), static_cast<long long>(d.gpu_read_errors),
      static_cast<long long>(d.gpu_process_list_invalid));
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
