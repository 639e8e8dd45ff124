#include "job/profiler_observer.h"

#include "absl/strings/str_format.h"
#include "util/log.h"

namespace trainwatch::job {

ProfilerObserver::~ProfilerObserver() {
  if (profiler_ != nullptr) profiler_->Stop();
}

void ProfilerObserver::OnTrainingStarted(const model::JobRecord& job, pid_t pid) {
  profiler::ProfilerOptions options;
  options.interval_ms = interval_ms_;
  options.job_name = job.name;
  options.host_index = job.host_index;
  if (!job.working_dir.empty()) options.disk_path = job.working_dir;
  auto started = profiler::Profiler::Start(options, pid, sink_, clock_);
  if (!started.ok()) {
    // The job goes on without system metrics; say so once.
    util::LogWarning(absl::StrFormat("profiling is off for job %s: %s", job.name,
                                     started.status().ToString()));
    return;
  }
  profiler_ = std::move(*started);
  started_ = true;
}

void ProfilerObserver::OnTrainingExited(const model::JobRecord& /*job*/,
                                        const capture::ExitStatus& /*status*/) {
  if (profiler_ == nullptr) return;
  profiler_->Stop();
  stats_ = profiler_->stats();
  profiler_.reset();
}

}  // namespace trainwatch::job
