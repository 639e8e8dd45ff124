#include "profiler/profiler.h"

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "profiler/sampler.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/mutex.h"
#include "util/stop_wait.h"

namespace trainwatch::profiler {
namespace {

int64_t ThreadCpuNs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

GridStep NextGridSlot(int64_t origin_ns, int64_t interval_ns, int64_t slot, int64_t now_ns) {
  int64_t ahead = now_ns < origin_ns ? 0 : (now_ns - origin_ns) / interval_ns + 1;
  if (ahead <= slot) ahead = slot + 1;
  return GridStep{ahead, ahead - slot - 1};
}

absl::StatusOr<std::unique_ptr<Profiler>> Profiler::Start(ProfilerOptions options, pid_t root_pid,
                                                          model::SampleSink* sink,
                                                          const util::Clock* clock) {
  if (sink == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("profiler: Start needs a sink and a clock");
  }
  TW_ASSIGN_OR_RETURN(std::unique_ptr<Sampler> sampler, Sampler::Create(options, root_pid));
  std::unique_ptr<Profiler> p(new Profiler(std::move(options), std::move(sampler), sink, clock));
  p->thread_ =
      std::jthread([raw = p.get()](std::stop_token stop) { raw->Run(std::move(stop)); });
  return p;
}

Profiler::Profiler(ProfilerOptions options, std::unique_ptr<Sampler> sampler,
                   model::SampleSink* sink, const util::Clock* clock)
    : options_(std::move(options)), sampler_(std::move(sampler)), sink_(sink), clock_(clock) {}

Profiler::~Profiler() { Stop(); }

void Profiler::Stop() {
  util::MutexLock serial(stop_mu_);
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

ProfilerStats Profiler::stats() const {
  util::MutexLock lock(mu_);
  return stats_;
}

bool Profiler::WaitUntil(const std::stop_token& stop, int64_t deadline_ns) {
  // The deadline is on clock_ (a test's may not follow real time): sleep
  // what it says is left, then ask it again.
  while (!stop.stop_requested()) {
    int64_t left_ns = deadline_ns - clock_->MonotonicNs();
    if (left_ns <= 0) return true;
    util::SleepFor(stop, std::chrono::nanoseconds(left_ns));
  }
  return false;
}

void Profiler::Tick() {
  int64_t start_ns = clock_->MonotonicNs();
  const model::SampleBatch& batch = sampler_->SampleOnce(clock_->NowMs(), start_ns);
  absl::Status put = batch.empty() ? absl::OkStatus() : sink_->Put(batch);
  if (!put.ok()) {
    util::LogOnce(
        "profiler.put-failed",
        absl::StrFormat("profiler: writing samples failed: %s (that tick is lost)", put.message()));
  }
  int64_t tick_ns = clock_->MonotonicNs() - start_ns;
  util::MutexLock lock(mu_);
  ++stats_.ticks;
  if (put.ok()) {
    stats_.samples += static_cast<int64_t>(batch.SampleCount());
  } else {
    ++stats_.put_errors;
  }
  if (tick_ns > stats_.max_tick_ns) stats_.max_tick_ns = tick_ns;
  stats_.own_cpu_ns = ThreadCpuNs();
  stats_.gpus = sampler_->gpu_count();
  stats_.degraded = sampler_->degraded();
}

void Profiler::Run(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-profiler");
  // The first sample at once, before NVML (whose init may take a while).
  Tick();
  int64_t init_start = clock_->MonotonicNs();
  sampler_->InitGpu();
  {
    util::MutexLock lock(mu_);
    stats_.nvml_init_ns = options_.nvml_library.empty() ? 0 : clock_->MonotonicNs() - init_start;
    stats_.degraded = sampler_->degraded();
  }
  const int64_t interval_ns = options_.interval_ms * 1000000;
  // The grid starts at the first tick; slots NVML's init covered are not late.
  const int64_t origin_ns = init_start;
  int64_t slot = NextGridSlot(origin_ns, interval_ns, 0, clock_->MonotonicNs()).next_slot;
  while (WaitUntil(stop, origin_ns + slot * interval_ns)) {
    Tick();
    GridStep step = NextGridSlot(origin_ns, interval_ns, slot, clock_->MonotonicNs());
    if (step.skipped > 0) {
      util::MutexLock lock(mu_);
      stats_.late_ticks += step.skipped;
    }
    slot = step.next_slot;
  }
  Tick();  // the final sample, at exit
}

}  // namespace trainwatch::profiler
