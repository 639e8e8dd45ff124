#pragma once
// OverallSystemUsage (spec/rules.md §6.10) for the report: not a rule, it
// never fires. It accumulates, per host, the host's totals per sample time
// (CPU: the host's CPU or the mean over its cores; I/O wait: mean over the
// cores; GPU and GPU memory: mean over the GPUs) and each GPU's own
// utilisation and memory, and summarises each as max, p99, p95, p50 and min.
//
//   SystemUsage usage;
//   for (const Input& in : inputs) usage.Add(in);
//   for (const UsageStats& row : usage.Summary()) ...
//
// Values are percentages, clipped to 0-100, kept in a histogram of 0.01-point
// bins: memory is fixed per metric (80 KiB) however long the job runs, and
// the percentiles are exact to 0.01 points (SageMaker rounds to 2 decimals).

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rules/rule.h"

namespace trainwatch::rules {

struct UsageStats {
  int host = 1;
  // "cpu", "io_wait", "gpu", "gpu_memory", "GPU 0", "GPU 0 memory", and with
  // per_core "core 0", ...
  std::string metric;
  int64_t count = 0;   // values (sample times for the host totals)
  double max = 0, p99 = 0, p95 = 0, p50 = 0, min = 0;
  friend bool operator==(const UsageStats&, const UsageStats&) = default;
};

class SystemUsage {
 public:
  // per_core: also each core's own utilisation (the report's rows; the rule
  // summarises host totals only, as SageMaker's does).
  explicit SystemUsage(bool per_core = false);
  ~SystemUsage();
  SystemUsage(SystemUsage&&) noexcept;
  SystemUsage& operator=(SystemUsage&&) noexcept;

  // Takes the system signals (per-core CPU and I/O wait, host CPU, GPU
  // utilisation and memory); ignores the others.
  void Add(const Input& in);
  // Per host, the totals first (cpu, io_wait, gpu, gpu_memory; those with
  // values), then per GPU in index order, then per core. Includes the sample
  // times still being grouped.
  std::vector<UsageStats> Summary() const;

  static constexpr int kBins = 10001;  // 0.00 .. 100.00
  struct Histogram {
    std::array<uint64_t, kBins> bins{};
    int64_t count = 0;
    double min = 0, max = 0;
    void Add(double v);
  };

 private:
  struct Totals {
    double cpu_sum = 0, io_sum = 0, gpu_sum = 0, mem_sum = 0, host_cpu = -1;
    int cpu_n = 0, io_n = 0, gpu_n = 0, mem_n = 0;
  };
  // (GPU or core index, or -1 for the host totals; kind): kind 0 cpu,
  // 1 io_wait, 2 GPU utilisation, 3 GPU memory, 4 one core's cpu.
  using Metrics = std::map<std::pair<int, int>, std::unique_ptr<Histogram>>;
  struct Host {
    std::map<int64_t, Totals> open;  // sample times still being grouped
    int64_t closed_until = INT64_MIN;
    Metrics metrics;
  };
  static void Close(const Totals& t, Metrics& metrics);
  bool per_core_ = false;
  std::map<int, Host> hosts_;
};

}  // namespace trainwatch::rules
