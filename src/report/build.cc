// BuildReport: one pass over the job's stored inputs (what the rules see) for
// the statistics, and the chart read of query/ for the charts.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "profiler/metric_names.h"
#include "report/report.h"
#include "rules/profiler_common.h"
#include "rules/replay.h"
#include "rules/rule.h"
#include "rules/system_usage.h"
#include "util/status_macros.h"

namespace trainwatch::report {

namespace {

// Below these the job counts as idle at a sample time: its processes use
// less than 5 % of one core and every GPU is under 5 %.
constexpr double kIdleJobCpuPercent = 5;
constexpr double kIdleGpuPercent = 5;
constexpr size_t kSlowestSteps = 10;
constexpr int kHistogramBuckets = 30;

// The statistics gathered in the one pass over the inputs.
class Pass {
 public:
  explicit Pass(const model::JobRecord& job) : job_(job), usage_(/*per_core=*/true) {}

  void Add(const rules::Input& in) {
    usage_.Add(in);
    switch (in.signal) {
      case rules::Signal::kCpuCores:
        cores_by_host_[in.host] = std::max(cores_by_host_[in.host], static_cast<int>(in.value));
        break;
      case rules::Signal::kHostCpu:
        host_cpu_sum_ += in.value;
        ++host_cpu_n_;
        break;
      case rules::Signal::kJobCpu: {
        job_cpu_percent_samples_ += std::max(0.0, in.value);
        job_cpu_hosts_.insert(in.host);
        // Idle: the job's CPU low and every GPU of its host low (as last seen).
        bool gpus_idle = true;
        for (const auto& [key, util] : last_gpu_) {
          if (key.first == in.host && util >= kIdleGpuPercent) gpus_idle = false;
        }
        if (in.value < kIdleJobCpuPercent && gpus_idle) ++idle_samples_;
        break;
      }
      case rules::Signal::kGpuUtil:
        last_gpu_[{in.host, in.index}] = in.value;
        gpu_util_sum_ += in.value;
        ++gpu_util_n_;
        break;
      case rules::Signal::kGpuMemUtil:
        gpu_mem_max_ = std::max(gpu_mem_max_, in.value);
        break;
      case rules::Signal::kMetric:
        if (!first_metric_ms_) first_metric_ms_ = in.t_ms;
        last_metric_ms_ = in.t_ms;
        if (!job_.step_metric.empty() && in.name == job_.step_metric) AddStep(in);
        break;
      default:
        break;
    }
  }

  void Finish(JobReport* r) {
    const int64_t interval_ms = std::max<int64_t>(job_.profiling_interval_ms, 1);
    Efficiency& e = r->efficiency;
    const double hours = static_cast<double>(r->phases.end_ms - r->phases.start_ms) / 3.6e6;
    // A job on several hosts has the cores of them all (its CPU is theirs summed).
    int cores = 0;
    for (const auto& [host, n] : cores_by_host_) cores += n;
    e.cpu_cores = cores;
    e.cpu_core_hours = cores * hours;
    e.job_cpu_hours = job_cpu_percent_samples_ / 100 * static_cast<double>(interval_ms) / 3.6e6;
    e.host_cpu_mean = host_cpu_n_ > 0 ? host_cpu_sum_ / static_cast<double>(host_cpu_n_) : 0;
    e.gpus = static_cast<int>(last_gpu_.size());
    e.gpu_hours = e.gpus * hours;
    e.gpu_util_mean = gpu_util_n_ > 0 ? gpu_util_sum_ / static_cast<double>(gpu_util_n_) : 0;
    e.gpu_memory_max = gpu_mem_max_;
    // Idle samples are counted per host: the mean host's idle time.
    r->phases.idle_ms = idle_samples_ * interval_ms /
                        std::max<int64_t>(static_cast<int64_t>(job_cpu_hosts_.size()), 1);

    if (first_step_ms_) {
      r->phases.loop_start_ms = first_step_ms_;
      r->phases.loop_end_ms = last_step_ms_;
      r->phases.loop_from_steps = true;
    } else if (first_metric_ms_) {
      r->phases.loop_start_ms = first_metric_ms_;
      r->phases.loop_end_ms = last_metric_ms_;
    }
    if (!job_.step_metric.empty()) r->step_times = Steps();

    for (const rules::UsageStats& u : usage_.Summary()) {
      UsageRow row;
      row.host = u.host;
      row.unit = "%";
      row.count = u.count;
      row.p50 = u.p50;
      row.p95 = u.p95;
      row.max = u.max;
      row.min = u.min;
      if (u.metric == "cpu") {
        row.resource = "CPU";
      } else if (u.metric == "io_wait") {
        row.resource = "I/O wait";
      } else if (u.metric == "gpu") {
        row.resource = "GPU (mean of the GPUs)";
      } else if (u.metric == "gpu_memory") {
        row.resource = "GPU memory (mean of the GPUs)";
      } else if (u.metric.rfind("core ", 0) == 0) {
        row.resource = "CPU " + u.metric;
      } else {
        row.resource = u.metric;  // "GPU 0", "GPU 0 memory"
      }
      r->usage.push_back(std::move(row));
    }
  }

 private:
  void AddStep(const rules::Input& in) {
    const int64_t step = static_cast<int64_t>(in.value);
    if (!first_step_ms_) first_step_ms_ = in.t_ms;
    if (last_step_ >= 0 && step > last_step_ && in.t_ms >= last_step_ms_) {
      // Steps printed every n steps: each of the n took a share.
      const double per_step = static_cast<double>(in.t_ms - last_step_ms_) /
                              static_cast<double>(step - last_step_);
      durations_.push_back({per_step, step, in.t_ms});
    }
    if (step > last_step_) {
      last_step_ = step;
      last_step_ms_ = in.t_ms;
    }
  }

  StepTimes Steps() {
    StepTimes s;
    s.steps = static_cast<int64_t>(durations_.size());
    if (durations_.empty()) return s;
    std::vector<double> ms;
    ms.reserve(durations_.size());
    double sum = 0;
    for (const Duration& d : durations_) {
      ms.push_back(d.ms);
      sum += d.ms;
    }
    const double lo = *std::min_element(ms.begin(), ms.end());
    s.max_ms = *std::max_element(ms.begin(), ms.end());
    s.p50_ms = rules::prof::Quantile(ms, 0.5);
    s.p95_ms = rules::prof::Quantile(ms, 0.95);
    s.p99_ms = rules::prof::Quantile(ms, 0.99);
    s.mean_ms = sum / static_cast<double>(ms.size());
    // Buckets from the fastest step to a little past p99: the outliers pile
    // up in the last bucket instead of squeezing the rest into one.
    const double hi = std::max(lo + 1, std::min(s.max_ms, s.p99_ms * 1.5));
    const double width = (hi - lo) / kHistogramBuckets;
    for (int i = 0; i <= kHistogramBuckets; ++i) s.edges_ms.push_back(lo + width * i);
    s.counts.assign(kHistogramBuckets, 0);
    for (double v : ms) {
      const int b = std::min(kHistogramBuckets - 1, static_cast<int>((v - lo) / width));
      ++s.counts[static_cast<size_t>(std::max(b, 0))];
    }
    std::vector<Duration> slow = durations_;
    const size_t n = std::min(kSlowestSteps, slow.size());
    std::partial_sort(slow.begin(), slow.begin() + static_cast<std::ptrdiff_t>(n), slow.end(),
                      [](const Duration& a, const Duration& b) { return a.ms > b.ms; });
    for (size_t i = 0; i < n; ++i) s.slowest.push_back({slow[i].step, slow[i].t_ms, slow[i].ms});
    return s;
  }

  struct Duration {
    double ms;
    int64_t step;
    int64_t t_ms;
  };

  const model::JobRecord& job_;
  rules::SystemUsage usage_;
  std::map<int, int> cores_by_host_;
  std::set<int> job_cpu_hosts_;  // hosts that reported the job's CPU
  double host_cpu_sum_ = 0;
  int64_t host_cpu_n_ = 0;
  double job_cpu_percent_samples_ = 0;
  int64_t idle_samples_ = 0;
  std::map<std::pair<int, int>, double> last_gpu_;  // (host, GPU) -> last utilisation
  double gpu_util_sum_ = 0;
  int64_t gpu_util_n_ = 0;
  double gpu_mem_max_ = 0;
  std::optional<int64_t> first_metric_ms_;
  int64_t last_metric_ms_ = 0;
  std::optional<int64_t> first_step_ms_;
  int64_t last_step_ = -1;
  int64_t last_step_ms_ = 0;
  std::vector<Duration> durations_;
};

// Exact quantiles of a few host-level series the rules do not read (memory,
// network, disk), from their raw samples.
absl::Status AddRawUsage(const model::JobRecord& job, query::MetricsReader& metrics,
                         int64_t start_ms, int64_t end_ms, JobReport* r) {
  struct Resource {
    std::string_view metric;
    const char* name;
    const char* unit;
  };
  static constexpr Resource kResources[] = {
      {profiler::metric::kMemoryUsedPercent, "Memory", "%"},
      {profiler::metric::kNetRxBytes, "Network receive", "B/s"},
      {profiler::metric::kNetTxBytes, "Network transmit", "B/s"},
      {profiler::metric::kDiskReadBytes, "Disk read", "B/s"},
      {profiler::metric::kDiskWriteBytes, "Disk write", "B/s"},
  };
  for (const model::JobRecord& host : model::HostRecords(job)) {
    for (const Resource& res : kResources) {
      query::ListMetricsQuery q;
      q.ns = std::string(profiler::kProfilerNamespace);
      q.metric = std::string(res.metric);
      q.dimensions.push_back({std::string(profiler::kHostDim), host.HostName()});
      TW_ASSIGN_OR_RETURN(std::vector<query::RawSeries> raw,
                          metrics.ReadRaw(q, start_ms, end_ms + 1, {}));
      std::vector<double> values;
      for (const query::RawSeries& s : raw) {
        if (s.key.dimensions.size() != 1) continue;  // per device or interface
        for (const model::Sample& sample : s.samples) {
          values.push_back(sample.value);
        }
      }
      if (values.empty()) continue;
      UsageRow row;
      row.host = host.host_index;
      row.resource = res.name;
      row.unit = res.unit;
      row.count = static_cast<int64_t>(values.size());
      // As the rules' percentiles (numpy's linear interpolation).
      row.p50 = rules::prof::Quantile(values, 0.5);
      row.p95 = rules::prof::Quantile(values, 0.95);
      row.max = *std::max_element(values.begin(), values.end());
      row.min = *std::min_element(values.begin(), values.end());
      r->usage.push_back(std::move(row));
    }
  }
  return absl::OkStatus();
}

// One chart line of a series over the job, through the chart read.
absl::StatusOr<std::optional<ChartLine>> ReadLine(query::MetricsReader& metrics,
                                                  const query::MetricId& id, std::string label,
                                                  int64_t start_ms, int64_t end_ms, int width) {
  query::ChartQuery q;
  q.metric = id;
  q.start_ms = start_ms;
  q.end_ms = end_ms + 1;
  q.width = width;
  TW_ASSIGN_OR_RETURN(query::ChartAnswer answer, metrics.Chart(q));
  if (answer.y.empty()) return std::nullopt;
  ChartLine line;
  line.label = std::move(label);
  line.t_ms = std::move(answer.t);
  line.values = std::move(answer.y);
  return line;
}

// The job's own metrics (dimension TrainingJobName only), one chart each,
// and its hosts' SageMaker instance metrics, one chart per metric with a
// line per host.
absl::Status AddCharts(const model::JobRecord& job, query::MetricsReader& metrics,
                       const ReportOptions& options, JobReport* r) {
  const int width = std::clamp(options.chart_width, 1, query::kMaxChartWidth);
  // What the charts' time axis shows: from the start of training, as Summary.
  const int64_t start = r->phases.start_ms, end = r->phases.end_ms;
  query::ListMetricsQuery by_job;
  by_job.ns = std::string(model::kTrainingJobsNamespace);
  by_job.dimensions.push_back({std::string(model::kTrainingJobNameDim), job.name});
  by_job.limit = 10000;
  TW_ASSIGN_OR_RETURN(std::vector<query::MetricId> ids, metrics.ListMetrics(by_job));
  for (const query::MetricId& id : ids) {
    if (id.dimensions.size() != 1) continue;  // NaN events and the like
    TW_ASSIGN_OR_RETURN(std::optional<ChartLine> line,
                        ReadLine(metrics, id, id.metric, start, end, width));
    if (!line) continue;
    r->metric_charts.push_back({id.metric, "None", {std::move(*line)}});
  }
  // SageMaker's instance metrics, titled with what they measure (docs/profiler.md).
  struct SystemChart {
    std::string_view metric;
    const char* title;
    const char* unit;
  };
  static constexpr SystemChart kSystem[] = {
      {profiler::metric::kCPUUtilization, "CPU of the job's processes (CPUUtilization)",
       "% of one core"},
      {profiler::metric::kMemoryUtilization, "Memory in use (MemoryUtilization)", "%"},
      {profiler::metric::kGPUUtilization, "GPU busy, summed over the GPUs (GPUUtilization)",
       "% of one GPU"},
      {profiler::metric::kGPUMemoryUtilization,
       "GPU memory used, summed over the GPUs (GPUMemoryUtilization)", "% of one GPU"},
      {profiler::metric::kDiskUtilization,
       "Fullness of the working directory's filesystem (DiskUtilization)", "%"}};
  const std::vector<model::JobRecord> hosts = model::HostRecords(job);
  for (const SystemChart& system : kSystem) {
    const std::string_view metric = system.metric;
    Chart chart{system.title, system.unit, {}};
    for (const model::JobRecord& host : hosts) {
      query::MetricId id;
      id.ns = std::string(profiler::kSageMakerNamespace);
      id.metric = std::string(metric);
      id.dimensions.push_back({std::string(profiler::kHostDim), host.HostName()});
      TW_ASSIGN_OR_RETURN(std::optional<ChartLine> line,
                          ReadLine(metrics, id, absl::StrFormat("algo-%d", host.host_index),
                                   start, end, width));
      if (line) chart.lines.push_back(std::move(*line));
    }
    if (!chart.lines.empty()) r->system_charts.push_back(std::move(chart));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobReport> BuildReport(const model::JobRecord& job, query::MetricsReader& metrics,
                                      query::LogsReader& logs, const ReportOptions& options) {
  JobReport r;
  r.job = job;
  r.generated_ms = options.generated_ms;
  r.rules = job.rule_statuses;
  r.phases.start_ms = job.training_start_ms.value_or(job.creation_ms);
  // A job still running ends now; one that ended before its training did, when
  // it was last written.
  r.phases.end_ms = job.training_end_ms.value_or(
      options.now_ms > 0 && !model::IsTerminal(job.status) ? options.now_ms
                                                             : job.last_modified_ms);
  r.phases.end_ms = std::max(r.phases.end_ms, r.phases.start_ms);

  Pass pass(job);
  TW_RETURN_IF_ERROR(rules::ForEachStoredInput(job, metrics, logs, r.phases.end_ms,
                                               /*slice_ms=*/3'600'000, options.progress,
                                               [&](const rules::Input& in) { pass.Add(in); }));
  pass.Finish(&r);
  TW_RETURN_IF_ERROR(AddRawUsage(job, metrics, job.creation_ms, r.phases.end_ms, &r));
  TW_RETURN_IF_ERROR(AddCharts(job, metrics, options, &r));

  for (const model::FinalMetric& m : job.final_metrics) {
    r.final_metrics.push_back({m.name, m.value, m.t_ms});
  }
  if (r.final_metrics.empty()) {
    // Still running (or the record has none): each metric's newest value.
    for (const Chart& c : r.metric_charts) {
      for (const ChartLine& line : c.lines) {
        if (!line.values.empty()) {
          r.final_metrics.push_back({c.title, line.values.back(), line.t_ms.back()});
        }
      }
    }
  }
  if (job.step_metric.empty()) {
    r.notes.push_back(
        "The job names no step metric (trainwatch run --step-metric), so step times are not "
        "measured and the training loop is bounded by its first and last metric datapoint.");
  }
  return r;
}

}  // namespace trainwatch::report
