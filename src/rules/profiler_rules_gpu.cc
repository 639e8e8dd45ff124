// LowGPUUtilization, BatchSize, GPUMemoryIncrease and LoadBalancing: the
// rules that look at each GPU (rules/profiler_rules.h).

#include <algorithm>
#include <climits>
#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/log_rules.h"
#include "rules/profiler_rules.h"

namespace trainwatch::rules {

namespace {

Finding NoGpuData(int64_t end_ms, std::string_view what = "GPU utilisation") {
  return NoDataFinding(
      absl::StrFormat("no %s was reported (a CPU-only job, or GPU monitoring is off)", what),
      "Nothing to do for a CPU-only job; otherwise check that the profiler can read the GPUs "
      "(NVIDIA driver and NVML present).",
      end_ms);
}

Finding GpuFinding(const Input& in, std::string reason, double observed, double threshold) {
  Finding f;
  f.reason = std::move(reason);
  f.subject = prof::Subject("GPU", in.index, in.host);
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = observed;
  f.threshold = threshold;
  return f;
}

}  // namespace

Verdict OnInput(const LowGpuParams& p, LowGpuState& s, const Input& in) {
  if (in.signal != Signal::kGpuUtil) return Verdict::Pending();
  LowGpuState::Gpu& g = s.gpus[{in.host, in.index}];
  g.util.Add(in.t_ms, in.value, p.span);
  if (!g.util.WarmedUp(p.span) || !prof::Due(g.last_eval, in.t_ms)) return Verdict::Pending();
  const double max = g.util.Max();
  const double p95 = g.util.Quantile(0.95);
  const double p5 = g.util.Quantile(0.05);
  std::string reason;
  if (max <= 0) {
    reason = "unused";
  } else if (p95 < p.threshold_p95) {
    reason = "underutilized";
  } else if (p95 > p.threshold_p95 && p5 < p.threshold_p5) {
    reason = "fluctuating";
  }
  std::vector<Finding> findings;
  if (!reason.empty() && reason != g.firing) {
    const std::string window = prof::WindowText(p.span);
    Finding f;
    if (reason == "unused") {
      f = GpuFinding(in, reason, max, 0);
      f.message = absl::StrFormat("%s was not used: its utilisation stayed at 0 %% over %s.",
                                  f.subject, window);
      f.recommendation =
          "Make the job use every GPU it has (e.g. DistributedDataParallel with one process per "
          "GPU), or choose an instance with fewer GPUs.";
    } else if (reason == "underutilized") {
      f = GpuFinding(in, reason, p95, p.threshold_p95);
      f.message = absl::StrFormat("%s was below %g %% (p95 %.3g %%) over %s.", f.subject,
                                  p.threshold_p95, p95, window);
      f.recommendation =
          "Give the GPU more work per step (a bigger batch size), make sure the input pipeline "
          "keeps up (more data-loader workers, prefetching), or use a smaller GPU instance.";
    } else {
      f = GpuFinding(in, reason, p5, p.threshold_p5);
      f.message = absl::StrFormat(
          "%s's utilisation fluctuated over %s: p95 %.3g %% (above %g %%) but p5 %.3g %% "
          "(below %g %%).",
          f.subject, window, p95, p.threshold_p95, p5, p.threshold_p5);
      f.recommendation =
          "The GPU waits between bursts of work, usually for input: prefetch batches, add "
          "data-loader workers, use pinned memory, and avoid synchronising with the host every "
          "step (e.g. .item() or printing tensors).";
    }
    findings.push_back(std::move(f));
  }
  g.firing = reason;
  return prof::MakeVerdict(true, std::move(findings));
}

Verdict OnEnd(const LowGpuParams&, LowGpuState& s, int64_t end_ms) {
  if (s.gpus.empty()) return {Verdict::kOk, {NoGpuData(end_ms)}};
  return Verdict::Ok();
}

namespace {

// The host's GPUs: those of `gpus` whose key's host is `host`.
template <class Map>
auto HostGpus(Map& gpus, int host) {
  return std::make_pair(gpus.lower_bound({host, INT_MIN}), gpus.upper_bound({host, INT_MAX}));
}

void EvaluateBatchSize(const BatchSizeParams& p, BatchSizeState& s, const Input& in, bool& decided,
                       std::vector<Finding>& findings) {
  BatchSizeState::Host& h = s.hosts[in.host];
  if (!h.cpu.WarmedUp(p.span) || !prof::Due(h.last_eval, in.t_ms)) return;
  if (p.compat && static_cast<double>(h.cpu.count()) <= p.span.window) return;
  decided = true;
  const double cpu_p95 = h.cpu.Quantile(0.95);
  auto [begin, end] = HostGpus(s.gpus, in.host);
  for (auto it = begin; it != end; ++it) {
    BatchSizeState::Gpu& g = it->second;
    if (g.util.empty() || g.memory.empty()) continue;
    if (p.compat && static_cast<double>(g.util.count()) <= p.span.window) continue;
    const double util_p95 = g.util.Quantile(0.95);
    const double memory_p95 = g.memory.Quantile(0.95);
    const bool room = cpu_p95 < p.cpu_threshold_p95 && util_p95 < p.gpu_threshold_p95 &&
                      memory_p95 < p.gpu_memory_threshold_p95;
    if (room && !g.firing) {
      Input at = in;
      at.index = it->first.second;
      Finding f = GpuFinding(at, "batch_too_small", util_p95, p.gpu_threshold_p95);
      f.message = absl::StrFormat(
          "%s had room for more work over %s: its utilisation p95 was %.3g %% and its memory "
          "p95 %.3g %% (below %g %% and %g %%), while the host CPU p95 was %.3g %% (below %g %%).",
          f.subject, prof::WindowText(p.span), util_p95, memory_p95, p.gpu_threshold_p95,
          p.gpu_memory_threshold_p95, cpu_p95, p.cpu_threshold_p95);
      f.recommendation =
          "Increase the batch size (and scale the learning rate with it), or move to a smaller "
          "or cheaper GPU instance. If the framework pre-allocates GPU memory (TensorFlow, JAX) "
          "the memory figure does not show what the model needs.";
      findings.push_back(std::move(f));
    }
    g.firing = room;
  }
}

}  // namespace

Verdict OnInput(const BatchSizeParams& p, BatchSizeState& s, const Input& in) {
  bool decided = false;
  std::vector<Finding> findings;
  switch (in.signal) {
    case Signal::kGpuUtil: s.gpus[{in.host, in.index}].util.Add(in.t_ms, in.value, p.span); break;
    case Signal::kGpuMemUtil:
      s.gpus[{in.host, in.index}].memory.Add(in.t_ms, in.value, p.span);
      break;
    case Signal::kCoreCpu:
    case Signal::kHostCpu: {
      BatchSizeState::Host& h = s.hosts[in.host];
      h.snapshots.Add(in, [&](const prof::Snapshot& snap) {
        double cpu = snap.host_cpu;
        if (cpu < 0 && !snap.core_cpu.empty()) {
          double sum = 0;
          for (double v : snap.core_cpu) sum += v;
          cpu = sum / static_cast<double>(snap.core_cpu.size());
        }
        if (cpu >= 0) h.cpu.Add(snap.t_ms, cpu, p.span);
      });
      break;
    }
    default: return Verdict::Pending();
  }
  EvaluateBatchSize(p, s, in, decided, findings);
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnEnd(const BatchSizeParams&, BatchSizeState& s, int64_t end_ms) {
  if (s.gpus.empty()) return {Verdict::kOk, {NoGpuData(end_ms)}};
  return Verdict::Ok();
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

GpuMemoryState::Bucket* BucketAt(const GpuMemoryParams& p, GpuMemoryState::Gpu& g,
                                 int64_t t_ms) {
  const int64_t width = std::max<int64_t>(1000, static_cast<int64_t>(p.span.window * 1000 / 60));
  const int64_t id = t_ms / width;
  if (g.buckets.empty() || g.buckets.back().id < id) {
    g.buckets.push_back({});
    g.buckets.back().id = id;
    const int64_t keep_from = (t_ms - static_cast<int64_t>(p.span.window * 1000)) / width;
    while (g.buckets.front().id < keep_from) g.buckets.pop_front();
    return &g.buckets.back();
  }
  for (auto it = g.buckets.rbegin(); it != g.buckets.rend(); ++it) {
    if (it->id == id) return &*it;
  }
  return nullptr;  // older than the window
}

Finding CompatMemoryFinding(const GpuMemoryParams& p, const Input& in, double diff) {
  Finding f = GpuFinding(in, "increasing", diff, p.increase);
  const int window = static_cast<int>(p.span.window);
  f.message = absl::StrFormat(
      "%s's memory utilisation rose by %.3g percentage points between the mean of its last %d "
      "samples and the mean of the %d before the last two (threshold %g).",
      f.subject, diff, window, window - 1, p.increase);
  return f;
}

// Default profile: the slope over the window's buckets.
void EvaluateMemory(const GpuMemoryParams& p, GpuMemoryState::Gpu& g, const Input& in,
                    bool& decided, std::vector<Finding>& findings) {
  if (static_cast<double>(in.t_ms - g.first_ms) < p.span.patience * 1000) return;
  if (!prof::Due(g.last_eval, in.t_ms)) return;
  std::vector<std::pair<double, double>> pct, bytes;
  // Seconds since the first value, so the slope keeps its precision.
  const double origin = static_cast<double>(g.first_ms);
  for (const GpuMemoryState::Bucket& b : g.buckets) {
    if (b.pct_n > 0) pct.emplace_back((b.t_sum / b.pct_n - origin) / 1000, b.pct_sum / b.pct_n);
    if (b.bytes_n > 0) {
      bytes.emplace_back((b.bytes_t_sum / b.bytes_n - origin) / 1000, b.bytes_sum / b.bytes_n);
    }
  }
  if (pct.size() < 5 || pct.back().first - pct.front().first < p.span.window / 2) return;
  decided = true;
  const double slope = prof::TheilSenSlope(pct);  // points per second
  const double per_10min = slope * 600;
  const bool growing = per_10min > p.increase;
  if (growing && !g.firing) {
    Finding f = GpuFinding(in, "increasing", per_10min, p.increase);
    f.message = absl::StrFormat(
        "%s's memory grew by %.3g percentage points per 10 min over %s (now %.3g %%", f.subject,
        per_10min, prof::WindowText(p.span), g.last_pct);
    double full_s = slope > 0 ? (100 - g.last_pct) / slope : 0;
    if (bytes.size() >= 5) {
      const double bytes_slope = prof::TheilSenSlope(bytes);
      f.message += absl::StrFormat("; %+.3g GiB per 10 min", bytes_slope * 600 / kGiB);
      if (g.total > 0) {
        f.message += absl::StrFormat(", %.3g of %.3g GiB used", g.last_used / kGiB,
                                     g.total / kGiB);
        if (bytes_slope > 0) full_s = (g.total - g.last_used) / bytes_slope;
      }
    }
    f.message += ").";
    if (full_s > 0) {
      f.message += absl::StrFormat(" At this rate it is full in about %s.", prof::Seconds(full_s));
    }
    findings.push_back(std::move(f));
  }
  g.firing = growing;
}

void AddPercent(const GpuMemoryParams& p, GpuMemoryState::Gpu& g, const Input& in, double pct,
                bool& decided, std::vector<Finding>& findings) {
  if (g.count++ == 0) g.first_ms = in.t_ms;
  g.last_pct = pct;
  if (p.compat) {
    const size_t window = static_cast<size_t>(p.span.window);
    g.recent.push_back(pct);
    if (g.recent.size() > window + 1) g.recent.pop_front();
    if (g.recent.size() <= window) return;  // SageMaker: n > window + 1
    if (static_cast<size_t>(g.count) <= window + 1) return;
    // mean(x[-window:]) - mean(x[-window-1:-2]), SageMaker's overlapping slices.
    double last = 0, before = 0;
    for (size_t i = 1; i <= window; ++i) last += g.recent[i];
    for (size_t i = 0; i + 2 <= window; ++i) before += g.recent[i];
    const double diff = last / static_cast<double>(window) - before / static_cast<double>(window - 1);
    decided = true;
    const bool growing = diff > p.increase && static_cast<double>(g.count) > p.span.patience;
    if (growing && !g.firing) findings.push_back(CompatMemoryFinding(p, in, diff));
    g.firing = growing;
    return;
  }
  if (GpuMemoryState::Bucket* b = BucketAt(p, g, in.t_ms)) {
    b->t_sum += static_cast<double>(in.t_ms);
    b->pct_sum += pct;
    ++b->pct_n;
  }
  EvaluateMemory(p, g, in, decided, findings);
}

}  // namespace

Verdict OnInput(const GpuMemoryParams& p, GpuMemoryState& s, const Input& in) {
  if (in.signal != Signal::kGpuMemUtil && in.signal != Signal::kGpuMemUsedBytes &&
      in.signal != Signal::kGpuMemTotalBytes) {
    return Verdict::Pending();
  }
  GpuMemoryState::Gpu& g = s.gpus[{in.host, in.index}];
  bool decided = false;
  std::vector<Finding> findings;
  if (in.signal == Signal::kGpuMemTotalBytes) {
    g.total = in.value;
  } else if (in.signal == Signal::kGpuMemUtil) {
    g.saw_percent = true;
    AddPercent(p, g, in, in.value, decided, findings);
  } else {
    g.last_used = in.value;
    if (!p.compat) {
      if (GpuMemoryState::Bucket* b = BucketAt(p, g, in.t_ms)) {
        b->bytes_t_sum += static_cast<double>(in.t_ms);
        b->bytes_sum += in.value;
        ++b->bytes_n;
      }
    }
    // Without a percentage series, derive it from the bytes.
    if (!g.saw_percent && g.total > 0) {
      AddPercent(p, g, in, 100 * in.value / g.total, decided, findings);
    }
  }
  for (Finding& f : findings) {
    if (f.recommendation.empty()) {
      f.recommendation =
          "Memory that keeps growing is usually a leak: tensors kept across steps (e.g. summing "
          "the loss tensor instead of loss.item()), growing caches or lists of outputs; or "
          "inputs of varying size fragmenting the allocator. Find what holds the references, "
          "or pad inputs to fixed sizes.";
    }
  }
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnEnd(const GpuMemoryParams&, GpuMemoryState& s, int64_t end_ms) {
  const bool any = std::any_of(s.gpus.begin(), s.gpus.end(),
                               [](const auto& kv) { return kv.second.count > 0; });
  if (!any) return {Verdict::kOk, {NoGpuData(end_ms, "GPU memory use")}};
  return Verdict::Ok();
}

namespace {

double JensenShannonDistance(const LoadBalancingState::Gpu& a, const LoadBalancingState::Gpu& b) {
  double ta = 0, tb = 0;
  for (size_t i = 0; i < a.bins.size(); ++i) {
    ta += static_cast<double>(a.bins[i]);
    tb += static_cast<double>(b.bins[i]);
  }
  if (ta == 0 || tb == 0) return std::nan("");  // SageMaker's NaN: never fires
  double kl_a = 0, kl_b = 0;
  for (size_t i = 0; i < a.bins.size(); ++i) {
    const double pa = static_cast<double>(a.bins[i]) / ta;
    const double pb = static_cast<double>(b.bins[i]) / tb;
    const double m = (pa + pb) / 2;
    if (pa > 0) kl_a += pa * std::log(pa / m);
    if (pb > 0) kl_b += pb * std::log(pb / m);
  }
  return std::sqrt(std::max(0.0, (kl_a + kl_b) / 2));
}

bool Warm(const LoadBalancingParams& p, const LoadBalancingState::Gpu& g) {
  if (p.compat) return static_cast<double>(g.count) > p.span.patience;
  return g.count > 0 && static_cast<double>(g.last_ms - g.first_ms) >= p.span.patience * 1000;
}

}  // namespace

Verdict OnInput(const LoadBalancingParams& p, LoadBalancingState& s, const Input& in) {
  if (in.signal != Signal::kGpuUtil) return Verdict::Pending();
  LoadBalancingState::Host& h = s.hosts[in.host];
  LoadBalancingState::Gpu& g = h.gpus[in.index];
  if (g.count++ == 0) g.first_ms = in.t_ms;
  g.last_ms = std::max(g.last_ms, in.t_ms);
  g.sum += in.value;
  if (p.compat) {  // numpy.histogram with edges 0, 2, ..., 98: the rest is dropped
    if (in.value >= 0 && in.value <= 98) g.bins[std::min(48, static_cast<int>(in.value / 2))]++;
  } else {
    g.bins[std::min(49, static_cast<int>(std::clamp(in.value, 0.0, 100.0) / 2))]++;
  }
  if (h.gpus.size() < 2 || !prof::Due(h.last_eval, in.t_ms)) return Verdict::Pending();
  bool decided = false;
  std::vector<Finding> findings;
  for (auto a = h.gpus.begin(); a != h.gpus.end(); ++a) {
    if (!Warm(p, a->second)) continue;
    for (auto b = std::next(a); b != h.gpus.end(); ++b) {
      if (!Warm(p, b->second)) continue;
      const double distance = JensenShannonDistance(a->second, b->second);
      if (std::isnan(distance)) continue;
      decided = true;
      const std::pair<int, int> pair{a->first, b->first};
      if (distance <= p.threshold) {
        h.firing.erase(pair);
        continue;
      }
      if (!h.firing.insert(pair).second) continue;
      Finding f;
      f.reason = "unbalanced";
      f.subject = absl::StrFormat("GPU %d and GPU %d%s", a->first, b->first, prof::OnHost(in.host));
      f.step = in.step;
      f.t_ms = in.t_ms;
      f.observed = distance;
      f.threshold = p.threshold;
      f.message = absl::StrFormat(
          "%s were used unevenly: the Jensen-Shannon distance between their utilisation "
          "histograms is %.3g (threshold %g); mean utilisation %.3g %% and %.3g %%.",
          f.subject, distance, p.threshold, a->second.sum / static_cast<double>(a->second.count),
          b->second.sum / static_cast<double>(b->second.count));
      f.recommendation =
          "Spread the work evenly over the GPUs: use one process per GPU "
          "(DistributedDataParallel, Horovod) rather than DataParallel, give every rank an "
          "equal shard of the data, and keep extra work (evaluation, logging, checkpoints) off "
          "a single rank or spread it too.";
      findings.push_back(std::move(f));
    }
  }
  return prof::MakeVerdict(decided, std::move(findings));
}

Verdict OnEnd(const LoadBalancingParams&, LoadBalancingState& s, int64_t end_ms) {
  if (s.hosts.empty()) return {Verdict::kOk, {NoGpuData(end_ms)}};
  return Verdict::Ok();
}

}  // namespace trainwatch::rules
