#include "rules/system_usage.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace trainwatch::rules {

namespace {

constexpr size_t kOpen = 3;  // sample times kept open, as prof::SnapshotAssembler
constexpr const char* kTotalNames[] = {"cpu", "io_wait", "gpu", "gpu_memory"};


// The value of rank r (0-based) among the histogram's values.
double ValueAtRank(const SystemUsage::Histogram& h, int64_t r) {
  int64_t seen = 0;
  for (int i = 0; i < SystemUsage::kBins; ++i) {
    seen += static_cast<int64_t>(h.bins[i]);
    if (seen > r) return i / 100.0;
  }
  return h.max;
}

// numpy's linear interpolation between the neighbouring ranks.
double Percentile(const SystemUsage::Histogram& h, double q) {
  const double pos = q * static_cast<double>(h.count - 1);
  const int64_t lo = static_cast<int64_t>(std::floor(pos));
  const double a = ValueAtRank(h, lo);
  if (lo + 1 >= h.count) return a;
  const double b = ValueAtRank(h, lo + 1);
  return a + (b - a) * (pos - static_cast<double>(lo));
}

}  // namespace

SystemUsage::SystemUsage(bool per_core) : per_core_(per_core) {}
SystemUsage::~SystemUsage() = default;
SystemUsage::SystemUsage(SystemUsage&&) noexcept = default;
SystemUsage& SystemUsage::operator=(SystemUsage&&) noexcept = default;

void SystemUsage::Histogram::Add(double v) {
  v = std::clamp(v, 0.0, 100.0);
  const double rounded = std::round(v * 100) / 100;
  if (count == 0 || rounded < min) min = rounded;
  if (count == 0 || rounded > max) max = rounded;
  ++count;
  ++bins[static_cast<size_t>(std::lround(v * 100))];
}

void SystemUsage::Close(const Totals& t, Metrics& metrics) {
  const auto add = [&](int kind, double v) {
    std::unique_ptr<Histogram>& h = metrics[{-1, kind}];
    if (!h) h = std::make_unique<Histogram>();
    h->Add(v);
  };
  if (t.host_cpu >= 0) {
    add(0, t.host_cpu);
  } else if (t.cpu_n > 0) {
    add(0, t.cpu_sum / t.cpu_n);
  }
  if (t.io_n > 0) add(1, t.io_sum / t.io_n);
  if (t.gpu_n > 0) add(2, t.gpu_sum / t.gpu_n);
  if (t.mem_n > 0) add(3, t.mem_sum / t.mem_n);
}

void SystemUsage::Add(const Input& in) {
  switch (in.signal) {
    case Signal::kCoreCpu:
    case Signal::kCoreIoWait:
    case Signal::kHostCpu:
    case Signal::kGpuUtil:
    case Signal::kGpuMemUtil:
      break;
    default:
      return;
  }
  if (!std::isfinite(in.value)) return;
  Host& h = hosts_[in.host];
  if (in.signal == Signal::kGpuUtil || in.signal == Signal::kGpuMemUtil) {
    std::unique_ptr<Histogram>& g =
        h.metrics[{in.index, in.signal == Signal::kGpuUtil ? 2 : 3}];
    if (!g) g = std::make_unique<Histogram>();
    g->Add(in.value);
  }
  if (per_core_ && in.signal == Signal::kCoreCpu) {
    std::unique_ptr<Histogram>& c = h.metrics[{in.index, 4}];
    if (!c) c = std::make_unique<Histogram>();
    c->Add(in.value);
  }
  if (in.t_ms <= h.closed_until) return;  // its sample time is closed
  Totals& t = h.open[in.t_ms];
  switch (in.signal) {
    case Signal::kCoreCpu: t.cpu_sum += in.value; ++t.cpu_n; break;
    case Signal::kCoreIoWait: t.io_sum += in.value; ++t.io_n; break;
    case Signal::kHostCpu: t.host_cpu = std::max(0.0, in.value); break;
    case Signal::kGpuUtil: t.gpu_sum += in.value; ++t.gpu_n; break;
    default: t.mem_sum += in.value; ++t.mem_n; break;
  }
  while (h.open.size() > kOpen) {
    h.closed_until = h.open.begin()->first;
    Close(h.open.begin()->second, h.metrics);
    h.open.erase(h.open.begin());
  }
}

std::vector<UsageStats> SystemUsage::Summary() const {
  std::vector<UsageStats> out;
  for (const auto& [host, h] : hosts_) {
    // The open sample times count too: close them on a copy of the totals.
    Metrics metrics;
    for (const auto& [key, hist] : h.metrics) {
      metrics[key] = std::make_unique<Histogram>(*hist);
    }
    for (const auto& [t, totals] : h.open) Close(totals, metrics);
    // Host totals and GPUs first (map order), then the cores.
    for (const bool cores : {false, true}) {
    for (const auto& [key, hist] : metrics) {
      const auto [index, kind] = key;
      if (hist->count == 0 || (kind == 4) != cores) continue;
      UsageStats row;
      row.host = host;
      if (index < 0) {
        row.metric = kTotalNames[kind];
      } else if (kind == 4) {
        row.metric = absl::StrFormat("core %d", index);
      } else {
        row.metric = absl::StrFormat("GPU %d%s", index, kind == 3 ? " memory" : "");
      }
      row.count = hist->count;
      row.max = hist->max;
      row.min = hist->min;
      row.p99 = Percentile(*hist, 0.99);
      row.p95 = Percentile(*hist, 0.95);
      row.p50 = Percentile(*hist, 0.50);
      out.push_back(std::move(row));
    }
    }
  }
  return out;
}

}  // namespace trainwatch::rules
