// CPUBottleneck, IOBottleneck, Dataloader and NoProgress: the rules that look
// at the host's cores and the job's processes (rules/profiler_rules.h).

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/log_rules.h"
#include "rules/profiler_rules.h"

namespace trainwatch::rules {

namespace {

using prof::Seconds;

bool BottleneckSignal(const BottleneckParams& p, Signal signal) {
  if (signal == Signal::kGpuUtil) return true;
  if (p.io) return signal == Signal::kCoreIoWait;
  return signal == Signal::kCoreCpu || signal == Signal::kHostCpu;
}

// Whether the snapshot counts, and whether it is a bottleneck.
struct Judged {
  bool counts = false;
  bool bottleneck = false;
};

Judged Judge(const BottleneckParams& p, const prof::Snapshot& snap) {
  const std::vector<double>& cores = p.io ? snap.core_iowait : snap.core_cpu;
  const bool low_gpu = std::any_of(snap.gpu_util.begin(), snap.gpu_util.end(),
                                   [&](double v) { return v < p.gpu_threshold; });
  if (p.compat) {  // SageMaker: every snapshot counts; busy = any core above
    const auto over = std::count_if(cores.begin(), cores.end(),
                                    [&](double v) { return v > p.busy_threshold; });
    return {true, low_gpu && over >= std::max<int64_t>(1, p.min_busy_cores)};
  }
  const bool host_cpu = !p.io && snap.host_cpu >= 0;
  if (snap.gpu_util.empty() || (cores.empty() && !host_cpu)) return {};
  double mean = snap.host_cpu;
  if (!host_cpu) {
    double sum = 0;
    for (double v : cores) sum += v;
    mean = sum / static_cast<double>(cores.size());
  }
  const auto saturated = std::count_if(cores.begin(), cores.end(),
                                       [&](double v) { return v >= p.busy_threshold; });
  const int64_t need = std::min<int64_t>(p.min_busy_cores, static_cast<int64_t>(cores.size()));
  const bool busy = mean >= p.busy_threshold || (!cores.empty() && saturated >= need);
  return {true, low_gpu && busy};
}

Finding BottleneckFinding(const BottleneckParams& p, int host, int64_t t_ms, double ratio,
                          int64_t snapshots) {
  Finding f;
  f.reason = p.io ? "io_bottleneck" : "cpu_bottleneck";
  f.subject = prof::HostSubject(host);
  f.t_ms = t_ms;
  f.observed = ratio;
  f.threshold = p.threshold;
  const char* what = p.io ? "I/O wait" : "CPU";
  std::string busy;
  if (p.compat) {
    busy = absl::StrFormat("a core's %s was above %g %%", what, p.busy_threshold);
  } else {
    busy = absl::StrFormat("the %s was busy (mean at least %g %%, or %d cores at %g %% or more)",
                           what, p.busy_threshold, p.min_busy_cores, p.busy_threshold);
  }
  const std::string over =
      p.compat ? absl::StrFormat("of the %d snapshots since the start", snapshots)
               : absl::StrFormat("of the snapshots over %s", prof::WindowText(p.span));
  f.message = absl::StrFormat(
      "On %s a GPU was below %g %% while %s in %.3g %% %s (threshold %g %%).", f.subject,
      p.gpu_threshold, busy, ratio, over, p.threshold);
  f.recommendation =
      p.io ? "Training waits on storage: read from faster storage (local NVMe rather than network "
             "storage), use fewer and larger files (e.g. TFRecord or WebDataset shards), prefetch "
             "batches, or cache the data set locally."
           : "The input pipeline cannot keep the GPUs fed: move preprocessing to the GPU or do it "
             "once offline, add data-loader workers, or choose an instance with more CPU cores "
             "per GPU.";
  return f;
}

void CloseSnapshot(const BottleneckParams& p, BottleneckState::Host& h, int host,
                   const prof::Snapshot& snap, bool& decided, std::vector<Finding>& findings) {
  const Judged j = Judge(p, snap);
  if (!j.counts) return;
  if (h.count == 0) h.first_ms = snap.t_ms;
  ++h.count;
  h.bottlenecks += j.bottleneck;
  if (!p.compat) {  // compat keeps the cumulative counts only
    h.window.emplace_back(snap.t_ms, j.bottleneck);
    h.window_bottlenecks += j.bottleneck;
    const int64_t window_ms = static_cast<int64_t>(p.span.window * 1000);
    while (h.window.front().first <= snap.t_ms - window_ms) {
      h.window_bottlenecks -= h.window.front().second;
      h.window.pop_front();
    }
  }
  if (!prof::Due(h.last_eval, snap.t_ms)) return;
  const bool warm = p.compat ? static_cast<double>(h.count) > p.span.patience
                             : static_cast<double>(snap.t_ms - h.first_ms) >= p.span.patience * 1000;
  if (!warm) return;
  decided = true;
  const double ratio =
      p.compat ? 100.0 * static_cast<double>(h.bottlenecks) / static_cast<double>(h.count)
               : 100.0 * static_cast<double>(h.window_bottlenecks) /
                     static_cast<double>(h.window.size());
  if (ratio > p.threshold) {
    if (!h.firing) findings.push_back(BottleneckFinding(p, host, snap.t_ms, ratio, h.count));
    h.firing = true;
  } else {
    h.firing = false;
  }
}

}  // namespace

Verdict OnInput(const BottleneckParams& p, BottleneckState& s, const Input& in) {
  if (!BottleneckSignal(p, in.signal)) return Verdict::Pending();
  if (in.signal == Signal::kGpuUtil) {
    s.saw_gpu = true;
  } else {
    s.saw_busy = true;
  }
  BottleneckState::Host& h = s.hosts[in.host];
  bool decided = false;
  std::vector<Finding> findings;
  h.snapshots.Add(in, [&](const prof::Snapshot& snap) {
    CloseSnapshot(p, h, in.host, snap, decided, findings);
  });
  for (Finding& f : findings) f.step = in.step;
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnEnd(const BottleneckParams& p, BottleneckState& s, int64_t end_ms) {
  bool decided = true;
  std::vector<Finding> findings;
  for (auto& entry : s.hosts) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    const int host = entry.first;
    auto& h = entry.second;
    h.snapshots.Flush([&](const prof::Snapshot& snap) {
      CloseSnapshot(p, h, host, snap, decided, findings);
    });
  }
  const char* busy = p.io ? "per-core I/O wait" : "CPU utilisation";
  if (!s.saw_gpu) {
    findings.push_back(NoDataFinding(
        "no GPU utilisation was reported (a CPU-only job, or GPU monitoring is off)",
        "Nothing to do for a CPU-only job; otherwise check that the profiler can read the GPUs "
        "(NVIDIA driver and NVML present).",
        end_ms));
  } else if (!s.saw_busy) {
    findings.push_back(NoDataFinding(
        absl::StrFormat("no %s was reported", busy),
        "Check that the profiler is enabled for this job and can read /proc/stat.", end_ms));
  }
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnInput(const DataloaderParams& p, DataloaderState& s, const Input& in) {
  if (in.signal == Signal::kCpuCores) {
    s.saw_cores = true;
    s.hosts[in.host].cores = in.value;
    return Verdict::Pending();
  }
  if (in.signal != Signal::kJobProcesses) return Verdict::Pending();
  s.saw_processes = true;
  DataloaderState::Host& h = s.hosts[in.host];
  h.workers.Add(in.t_ms, std::max(0.0, in.value - 1), p.span);
  // A job that never ran a process besides its main one loads its data in
  // that process (or needs no loader): there is no loader parallelism to
  // judge, and calling it "too few" would flag every single-process job.
  s.saw_workers |= in.value > 1;
  if (!s.saw_workers || h.cores <= 0 || !h.workers.WarmedUp(p.span) ||
      !prof::Due(h.last_eval, in.t_ms)) {
    return Verdict::Pending();
  }
  const double median = h.workers.Quantile(0.5);
  const double low = h.cores * p.min_threshold / 100;
  const double high = h.cores * p.max_threshold / 100;
  std::string reason;
  if (median < low) reason = "too_few";
  if (median > high) reason = "too_many";
  std::vector<Finding> findings;
  if (!reason.empty() && reason != h.firing) {
    Finding f;
    f.reason = reason;
    f.subject = prof::HostSubject(in.host);
    f.step = in.step;
    f.t_ms = in.t_ms;
    f.observed = median;
    f.threshold = reason == "too_few" ? low : high;
    const std::string over =
        p.compat ? std::string("since the start") : "over " + prof::WindowText(p.span);
    f.message = absl::StrFormat(
        "The job ran a median of %g worker processes besides its main process %s, %s than "
        "%g %% of the %g cores of %s (%.3g).",
        median, over, reason == "too_few" ? "fewer" : "more",
        reason == "too_few" ? p.min_threshold : p.max_threshold, h.cores, f.subject, f.threshold);
    f.recommendation =
        reason == "too_few"
            ? "If the job loads data in Python, load it in parallel: raise the PyTorch "
              "DataLoader's num_workers towards the number of cores and set pin_memory=True "
              "(with tf.data, use num_parallel_calls=tf.data.AUTOTUNE and prefetch)."
            : "Too many worker processes compete for the cores: lower the DataLoader's "
              "num_workers to about the number of cores.";
    findings.push_back(std::move(f));
  }
  h.firing = reason;
  return prof::MakeVerdict(true, std::move(findings));
}

Verdict OnEnd(const DataloaderParams&, DataloaderState& s, int64_t end_ms) {
  if (!s.saw_processes || !s.saw_cores) {
    return {Verdict::kOk,
            {NoDataFinding(!s.saw_processes ? "the job's process count was never reported"
                                            : "the host's number of CPU cores was never reported",
                           "Check that the profiler is enabled for this job and can see its "
                           "process tree.",
                           end_ms)}};
  }
  if (!s.saw_workers) {
    return {Verdict::kOk,
            {NoDataFinding("the job never ran a worker process besides its main one: there "
                           "was no data-loader parallelism to judge",
                           "Nothing to do if the job loads its data in its main process on "
                           "purpose; otherwise give the DataLoader num_workers > 0.",
                           end_ms)}};
  }
  return Verdict::Ok();
}

namespace {

Finding NoProgressFinding(const NoProgressParams& p, int host, int64_t idle_since,
                          int64_t now_ms, int64_t step) {
  Finding f;
  f.reason = "no_progress";
  f.subject = prof::HostSubject(host);
  f.step = step;
  f.t_ms = now_ms;
  f.observed = static_cast<double>(now_ms - idle_since) / 1000;
  f.threshold = p.threshold_s;
  f.message = absl::StrFormat(
      "On %s the job's processes used less than %g %% CPU and no GPU was above %g %% for %s: "
      "the job is running but doing nothing.",
      f.subject, p.cpu_threshold, p.gpu_threshold, Seconds(f.observed));
  f.recommendation =
      "The job may be deadlocked (a collective waiting for a rank that died, a hung data-loader "
      "worker), waiting for input, or stuck on a lock or a network call: take a stack dump of "
      "its processes (e.g. py-spy dump --pid PID) and check the other hosts' logs.";
  return f;
}

}  // namespace

Verdict OnInput(const NoProgressParams& p, NoProgressState& s, const Input& in) {
  if (in.signal == Signal::kJobCpu) {
    s.saw_job_cpu = true;
    NoProgressState::Host& h = s.hosts[in.host];
    if (in.value >= p.cpu_threshold) {
      h.idle_since = INT64_MIN;
      h.fired = false;
    } else if (h.idle_since == INT64_MIN) {
      h.idle_since = in.t_ms;
    }
  } else if (in.signal == Signal::kGpuUtil && in.value >= p.gpu_threshold) {
    auto it = s.hosts.find(in.host);
    if (it != s.hosts.end()) {
      it->second.idle_since = INT64_MIN;
      it->second.fired = false;
    }
  } else if (in.signal != Signal::kTick && in.signal != Signal::kGpuUtil) {
    return Verdict::Pending();
  }
  std::vector<Finding> findings;
  bool decided = false;
  for (auto& [host, h] : s.hosts) {
    // A tick decides for every host; a sample only for its own host.
    if (in.signal != Signal::kTick && host != in.host) continue;
    if (h.idle_since == INT64_MIN || h.fired) continue;
    decided = true;
    if (static_cast<double>(in.t_ms - h.idle_since) >= p.threshold_s * 1000) {
      h.fired = true;
      findings.push_back(NoProgressFinding(p, host, h.idle_since, in.t_ms, in.step));
    }
  }
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnEnd(const NoProgressParams&, NoProgressState& s, int64_t end_ms) {
  if (!s.saw_job_cpu) {
    return {Verdict::kOk,
            {NoDataFinding("the CPU use of the job's processes was never reported",
                           "Check that the profiler is enabled for this job and can see its "
                           "process tree.",
                           end_ms)}};
  }
  return Verdict::Ok();
}

}  // namespace trainwatch::rules
