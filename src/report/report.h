#pragma once
// The job report (`trainwatch report JOB`, written into the job's folder when
// it ends, offered by the dashboard): what happened in a training job and
// what to do about it, in the spirit of SageMaker's profiler report
// (spec/rules.md §8.1): summary and timeline, where the time went, metric
// charts, system utilisation statistics, step times and outliers, the rules
// that fired with their recommendations, final metrics, and efficiency.
//
//   query::StoreReader reader(db);
//   absl::StatusOr<report::JobReport> r = report::BuildReport(job, reader, reader, {});
//   std::string html = report::RenderHtml(*r);   // one self-contained file
//   std::string json = report::RenderJson(*r);   // the same content as data
//
// Everything is read through query/ (charts through MetricsReader::Chart, the
// statistics from the inputs the rules see: rules::ForEachStoredInput), so
// the report says what the dashboard and the rules say.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/rule_result.h"
#include "query/reader.h"

namespace trainwatch::report {

// One line of a chart: points as the chart read gives them (per pixel
// column its first, lowest, highest and last point), so the drawn line shows
// every spike.
struct ChartLine {
  std::string label;  // "train:loss", "GPU 0", "core 3"
  std::vector<int64_t> t_ms;
  std::vector<double> values;
};

struct Chart {
  std::string title;  // the metric
  std::string unit;   // "Percent", "None", ...
  std::vector<ChartLine> lines;
};

// p50/p95/max (and min) of one resource over the job.
struct UsageRow {
  int host = 1;
  std::string resource;  // "CPU", "CPU core 3", "I/O wait", "GPU 0", "GPU 0 memory", "Memory", ...
  std::string unit;      // "%" or "B/s"
  int64_t count = 0;
  double p50 = 0, p95 = 0, max = 0, min = 0;
};

struct StepTimes {
  int64_t steps = 0;  // step durations measured
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
  // Histogram of step durations: counts over [edges[i], edges[i+1]); the
  // last bucket also holds what is above its upper edge.
  std::vector<double> edges_ms;
  std::vector<int64_t> counts;
  struct Slow {
    int64_t step = 0;
    int64_t t_ms = 0;  // when the step ended
    double duration_ms = 0;
  };
  std::vector<Slow> slowest;  // the slowest steps, slowest first (at most 10)
};

// Where the job's wall time went.
struct Phases {
  int64_t start_ms = 0, end_ms = 0;  // the job's training start and end (or now)
  // The training loop: first and last step (or first and last metric
  // datapoint when the job names no step metric: loop_from_steps false).
  std::optional<int64_t> loop_start_ms, loop_end_ms;
  bool loop_from_steps = false;
  int64_t idle_ms = 0;  // sampled time with the job's CPU and every GPU idle (Efficiency)
};

struct Efficiency {
  int cpu_cores = 0;      // the host's (largest seen)
  double cpu_core_hours = 0;  // cores x duration
  double job_cpu_hours = 0;   // what the job's processes used (core-hours)
  double host_cpu_mean = 0;   // percent
  int gpus = 0;
  double gpu_hours = 0;       // GPUs x duration
  double gpu_util_mean = 0;   // percent, over every GPU and sample
  double gpu_memory_max = 0;  // percent
};

struct FinalMetric {
  std::string name;
  double value = 0;
  int64_t t_ms = 0;
};

struct JobReport {
  model::JobRecord job;
  int64_t generated_ms = 0;
  Phases phases;
  std::vector<FinalMetric> final_metrics;
  std::vector<Chart> metric_charts;  // the job's own metrics
  std::vector<Chart> system_charts;  // CPU, memory, GPU utilisation and memory
  std::vector<UsageRow> usage;
  std::optional<StepTimes> step_times;  // absent without a step metric
  Efficiency efficiency;
  std::vector<model::RuleStatus> rules;  // the job's rule statuses, with findings
  // What the report could not include, in plain words (e.g. data no longer
  // in the raw tier), shown at the top.
  std::vector<std::string> notes;
};

struct ReportOptions {
  int chart_width = 720;  // pixel columns per chart
  int64_t now_ms = 0;     // for a job still running: the end of its data (0: the record's time)
  int64_t generated_ms = 0;
  // Called with the data time reached while reading (long jobs).
  std::function<void(int64_t t_ms)> progress;
};

// NotFound-free: the caller has the record. Errors are the readers'.
absl::StatusOr<JobReport> BuildReport(const model::JobRecord& job, query::MetricsReader& metrics,
                                      query::LogsReader& logs, const ReportOptions& options);

// One HTML file that opens offline: styles and charts (SVG) inline, no script,
// light and dark by the reader's preference.
std::string RenderHtml(const JobReport& report);

// The same content as JSON (times in ms since the epoch).
std::string RenderJson(const JobReport& report);

}  // namespace trainwatch::report
