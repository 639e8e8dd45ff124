// trainwatch metrics NAME: a job's metrics — the ones its log lines produced and
// the profiler's — as statistics per period, like GetMetricStatistics.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "model/log_event.h"
#include "nlohmann/json.hpp"
#include "query/periods.h"
#include "query/statistic.h"
#include "query/store_reader.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

constexpr std::string_view kProfilerNamespace = "trainwatch/Profiler";

struct MetricsFlags {
  std::string name;
  std::string metric;
  std::string period;
  std::vector<std::string> stats;
  std::string format = "table";
  std::string start;
  std::string end;
  bool all = false;
};

// One series of the job, and how to label it when a metric has several
// (per core, per GPU, ...).
struct JobSeries {
  std::string ns;
  std::string metric;
  std::vector<model::Dimension> dimensions;
  std::string label;  // the dimensions beyond the job's own, "Core=3"
};

absl::StatusOr<std::vector<JobSeries>> FindSeries(query::MetricsReader& reader,
                                                  const model::JobRecord& job,
                                                  const std::string& metric,
                                                  bool include_profiler = true) {
  struct Scope {
    std::string_view ns;
    std::string dimension;
    std::string value;
  };
  std::vector<Scope> scopes = {{model::kTrainingJobsNamespace, "TrainingJobName", job.name}};
  // Every host of a job spread over several (their series differ in Host).
  const std::vector<model::JobRecord> hosts = model::HostRecords(job);
  for (const model::JobRecord& host : hosts) {
    scopes.push_back({model::kTrainingJobsNamespace, "Host", host.HostName()});
    scopes.push_back({kProfilerNamespace, "Host", host.HostName()});
  }
  std::vector<JobSeries> out;
  for (const Scope& scope : scopes) {
    if (!include_profiler && scope.ns == kProfilerNamespace) continue;
    query::ListMetricsQuery request;
    request.ns = std::string(scope.ns);
    if (!metric.empty()) request.metric = metric;
    request.dimensions = {{scope.dimension, scope.value}};
    while (true) {
      auto page = reader.ListMetrics(request);
      if (!page.ok()) return page.status();
      for (const query::MetricId& info : *page) {
        // ListMetrics matches metrics that have at least these dimensions.
        std::vector<std::string> extra;
        for (const model::Dimension& d : info.dimensions) {
          if (d.name != scope.dimension) extra.push_back(d.name + "=" + d.value);
        }
        if (hosts.size() > 1 && scope.dimension == "Host") {
          extra.insert(extra.begin(), "Host=" + scope.value);
        }
        out.push_back({info.ns, info.metric, info.dimensions, absl::StrJoin(extra, ",")});
      }
      if (page->size() < request.limit) break;
      request.after = page->back();
    }
  }
  return out;
}

// The smallest CloudWatch period that keeps a query to about 300 datapoints
// and that the tier serving `start_ms` can answer (spec/aws-api.md §4.2).
int64_t AutoPeriodS(int64_t start_ms, int64_t end_ms, int64_t now_ms) {
  const int64_t age_ms = now_ms - start_ms;
  int64_t min_period = 1;
  if (age_ms > 63LL * 86400000) {
    min_period = 3600;
  } else if (age_ms > 15LL * 86400000) {
    min_period = 300;
  } else if (age_ms > 3LL * 3600000) {
    min_period = 60;
  }
  const int64_t want = std::max<int64_t>(1, (end_ms - start_ms) / 1000 / 300);
  for (int64_t p : {1, 5, 10, 20, 30}) {
    if (p >= min_period && p >= want) return p;
  }
  int64_t p = 60;
  while (p < want || p < min_period || p % min_period != 0) p += 60;
  return p;
}

// Statistics of one series of the job, every unit apart, in time order.
absl::StatusOr<std::vector<query::StatisticsBucket>> Statistics(
    query::MetricsReader& reader, const JobSeries& series, int64_t start_ms, int64_t end_ms,
    int64_t period_s, int64_t now_ms, const std::vector<query::Statistic>& stats) {
  query::StatisticsQuery q;
  q.metric = {series.ns, series.metric, series.dimensions};
  q.start_ms = start_ms;
  q.end_ms = end_ms;
  q.period_s = period_s;
  q.now_ms = now_ms;
  q.statistics = stats;
  return reader.GetStatistics(q);
}

// Without --metric: one line per metric of the job over the whole job.
int PrintOverview(query::MetricsReader& reader, const model::JobRecord& job, int64_t start_ms,
                  int64_t end_ms, int64_t now_ms, const std::string& format, bool all) {
  auto series = FindSeries(reader, job, "", all);
  if (!series.ok()) return ReportError(series.status(), 1);
  struct Row {
    std::string metric, label, unit;
    double count = 0, min = 0, max = 0, avg = 0;
    std::optional<double> last;
  };
  std::vector<Row> rows;
  // One period that spans the whole range (at most two buckets once the
  // start is rounded down to the minute), combined into one row per unit.
  const int64_t period_s = ((end_ms - start_ms) / 1000 / 60 + 1) * 60;
  for (const JobSeries& s : *series) {
    using Kind = query::Statistic::Kind;
    auto stats = Statistics(reader, s, start_ms, end_ms, period_s, now_ms,
                            {{Kind::kSampleCount, 0, "SampleCount"},
                             {Kind::kMinimum, 0, "Minimum"},
                             {Kind::kMaximum, 0, "Maximum"},
                             {Kind::kSum, 0, "Sum"}});
    if (!stats.ok()) return ReportError(stats.status(), 1);
    std::vector<Row> by_unit;
    for (const query::StatisticsBucket& d : *stats) {
      const double count = d.values[0].value_or(0), min = d.values[1].value_or(0),
                   max = d.values[2].value_or(0), sum = d.values[3].value_or(0);
      auto row = std::find_if(by_unit.begin(), by_unit.end(),
                              [&](const Row& r) { return r.unit == d.unit; });
      if (row == by_unit.end()) {
        by_unit.push_back(Row{});
        row = by_unit.end() - 1;
        row->metric = s.metric;
        row->label = s.label;
        row->unit = d.unit;
        row->min = min;
        row->max = max;
      }
      row->min = std::min(row->min, min);
      row->max = std::max(row->max, max);
      row->count += count;
      row->avg += sum;  // the sum, divided below
    }
    for (Row& row : by_unit) {
      row.avg /= row.count;
      auto key = model::MakeSeriesKey(s.ns, s.metric, s.dimensions, row.unit);
      if (key.ok()) {
        auto last = reader.LastValue(*key);
        if (last.ok() && last->has_value()) row.last = (*last)->value;
      }
      rows.push_back(std::move(row));
    }
  }
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) {
      nlohmann::json j = {{"metric", r.metric}, {"count", r.count}, {"min", r.min},
                          {"max", r.max},       {"average", r.avg}};
      if (!r.label.empty()) j["dimensions"] = r.label;
      if (r.last) j["last"] = *r.last;
      out.push_back(j);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  const char* sep = format == "csv" ? "," : "  ";
  if (format == "csv") {
    std::printf("metric,dimensions,datapoints,last,min,max,average\n");
  } else {
    std::printf("%-32s %-16s %10s %14s %14s %14s %14s\n", "METRIC", "DIMENSIONS", "DATAPOINTS",
                "LAST", "MIN", "MAX", "AVERAGE");
  }
  for (const Row& r : rows) {
    std::string last = r.last ? FormatDouble(*r.last) : "-";
    if (format == "csv") {
      std::printf("%s%s%s%s%s%s%s%s%s%s%s%s%s\n", r.metric.c_str(), sep, r.label.c_str(), sep,
                  FormatDouble(r.count).c_str(), sep, last.c_str(), sep,
                  FormatDouble(r.min).c_str(), sep, FormatDouble(r.max).c_str(), sep,
                  FormatDouble(r.avg).c_str());
    } else {
      std::string last_short = r.last ? absl::StrFormat("%.6g", *r.last) : "-";
      std::printf("%-32s %-16s %10s %14s %14.6g %14.6g %14.6g\n", r.metric.c_str(),
                  r.label.empty() ? "-" : r.label.c_str(), FormatDouble(r.count).c_str(),
                  last_short.c_str(), r.min, r.max, r.avg);
    }
  }
  if (rows.empty()) std::fprintf(stderr, "job %s has no datapoints yet\n", job.name.c_str());
  std::fflush(stdout);
  if (!all && format == "table") {
    std::fprintf(stderr,
                 "(the profiler's finer series, per core, device, interface and GPU: "
                 "trainwatch metrics %s --all)\n",
                 job.name.c_str());
  }
  return 0;
}

int RunMetrics(const MetricsFlags& flags, const GlobalOptions& options) {
  if (flags.format != "table" && flags.format != "csv" && flags.format != "json") {
    return ReportError(absl::InvalidArgumentError(
        absl::StrFormat("--format \"%s\": want table, csv or json", flags.format)));
  }
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.name);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.name, data_dir));
  const model::JobRecord& record = **job;
  // Every read of the command from one state of the data.
  query::StoreReader store_reader(**db);
  auto snapshot = store_reader.Snapshot();
  if (!snapshot.ok()) return ReportError(snapshot.status(), 1);
  query::MetricsReader& reader = **snapshot;
  const int64_t now_ms = (*db)->clock().NowMs();

  // The job's whole life by default: from its creation to its end (or now).
  int64_t start_ms = record.creation_ms;
  int64_t end_ms = (record.training_end_ms ? *record.training_end_ms : now_ms) + 1000;
  if (!flags.start.empty()) {
    auto t = ParseTimeFlag("--start", flags.start, now_ms);
    if (!t.ok()) return ReportError(t.status());
    start_ms = *t;
  }
  if (!flags.end.empty()) {
    auto t = ParseTimeFlag("--end", flags.end, now_ms);
    if (!t.ok()) return ReportError(t.status());
    end_ms = *t;
  }
  if (end_ms <= start_ms) {
    return ReportError(RangeOutOfOrder(start_ms, end_ms, !flags.start.empty(),
                                       "the job's creation", !flags.end.empty(),
                                       record.training_end_ms ? "the job's end" : "now"));
  }
  if (flags.metric.empty()) {
    return PrintOverview(reader, record, start_ms, end_ms, now_ms, flags.format, flags.all);
  }

  auto series = FindSeries(reader, record, flags.metric);
  if (!series.ok()) return ReportError(series.status(), 1);
  if (series->empty()) {
    return ReportError(absl::NotFoundError(absl::StrFormat(
                           "job %s has no metric \"%s\"; `trainwatch metrics %s` lists its "
                           "metrics",
                           record.name, flags.metric, record.name)),
                       1);
  }
  int64_t period_s;
  if (flags.period.empty()) {
    period_s = AutoPeriodS(start_ms, end_ms, now_ms);
  } else {
    auto p = util::ParseDurationMs(flags.period);
    if (!p.ok()) return ReportError(p.status());
    if (*p % 1000 != 0 || *p == 0) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--period \"%s\": want whole seconds: 1, 5, 10, 20, 30 or a multiple of 60",
          flags.period)));
    }
    period_s = *p / 1000;
  }
  if (query::RequestedDatapoints(start_ms, end_ms, period_s, now_ms) >
      query::kMaxStatisticsDatapoints) {
    return ReportError(absl::InvalidArgumentError(absl::StrFormat(
        "--period %d s over that range gives %d datapoints, more than %d a query answers; give "
        "a longer --period (or leave it out for about 300 datapoints), or a shorter --start/--end",
        period_s, query::RequestedDatapoints(start_ms, end_ms, period_s, now_ms),
        query::kMaxStatisticsDatapoints)));
  }
  std::vector<std::string> stat_names = flags.stats;
  if (stat_names.empty()) stat_names = {"Average"};
  std::vector<query::Statistic> stats;
  for (const std::string& name : stat_names) {
    std::optional<query::Statistic> stat = query::ParseStatistic(name);
    if (!stat) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--stat \"%s\": want Average, Minimum, Maximum, Sum, SampleCount or a percentile "
          "such as p99 or p99.9",
          name)));
    }
    stats.push_back(*std::move(stat));
  }

  nlohmann::json json_out = nlohmann::json::array();
  for (const JobSeries& s : *series) {
    auto datapoints = Statistics(reader, s, start_ms, end_ms, period_s, now_ms, stats);
    if (!datapoints.ok()) return ReportError(datapoints.status());
    for (const query::StatisticsBucket& d : *datapoints) {
      nlohmann::json row = {{"timestamp", util::FormatIso8601Ms(d.t_ms)}, {"unit", d.unit}};
      for (size_t i = 0; i < stats.size(); ++i) {
        if (d.values[i]) row[stats[i].name] = *d.values[i];
      }
      if (!s.label.empty()) row["dimensions"] = s.label;
      json_out.push_back(row);
    }
  }

  if (flags.format == "json") {
    std::printf("%s\n", json_out.dump(2).c_str());
    return 0;
  }
  const bool csv = flags.format == "csv";
  const bool labelled = series->size() > 1;
  std::string header = csv ? "timestamp" : absl::StrFormat("%-26s", "TIMESTAMP");
  if (labelled) header += csv ? ",dimensions" : absl::StrFormat(" %-20s", "DIMENSIONS");
  for (const std::string& stat : stat_names) {
    header += csv ? "," + stat : absl::StrFormat(" %16s", stat);
  }
  std::printf("%s\n", header.c_str());
  for (const nlohmann::json& row : json_out) {
    std::string line = csv ? row["timestamp"].get<std::string>()
                           : absl::StrFormat("%-26s", row["timestamp"].get<std::string>());
    if (labelled) {
      std::string label = row.contains("dimensions") ? row["dimensions"].get<std::string>() : "";
      line += csv ? "," + label : absl::StrFormat(" %-20s", label);
    }
    for (const std::string& stat : stat_names) {
      std::string value = row.contains(stat) ? FormatDouble(row[stat].get<double>()) : "";
      line += csv ? "," + value : absl::StrFormat(" %16s", value.empty() ? "-" : value);
    }
    std::printf("%s\n", line.c_str());
  }
  if (json_out.empty()) {
    std::fprintf(stderr, "no datapoints for %s in that time range at a %d s period\n",
                 flags.metric.c_str(), static_cast<int>(period_s));
  }
  return 0;
}

}  // namespace

void RegisterMetricsCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<MetricsFlags>();
  CLI::App* cmd = root.add_subcommand(
      "metrics", "a job's metrics (from its log lines and the profiler): statistics per period");
  cmd->add_option("name", flags->name, "the job's name")->required();
  cmd->add_option("--metric", flags->metric,
                  "one metric (e.g. train:loss, CPUUtilization, GPUUtilization); without it, a "
                  "summary of every metric of the job");
  cmd->add_flag("--all", flags->all,
                "without --metric: also the profiler's finer series (per core, device, GPU...)");
  cmd->add_option("--period", flags->period,
                  "seconds per datapoint: 1, 5, 10, 20, 30 or a multiple of 60 (default: about "
                  "300 datapoints over the range)");
  cmd->add_option("--stat", flags->stats,
                  "Average (default), Minimum, Maximum, Sum, SampleCount or a percentile such as "
                  "p99 or p99.9 (repeatable)");
  CLI::Option* format = cmd->add_option("--format", flags->format, "table (default), csv or json");
  // As describe, rules and admin compact take it.
  cmd->add_flag_callback("--json", [flags] { flags->format = "json"; }, "the same as --format json")
      ->excludes(format);
  cmd->add_option("--start", flags->start,
                  "from this time (default: the job's start; ISO-8601, epoch seconds, now-1h)");
  cmd->add_option("--end", flags->end, "until this time, exclusive (default: the job's end)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch metrics mnist-7\n"
      "  trainwatch metrics mnist-7 --metric train:loss --stat Minimum --stat p90\n"
      "  trainwatch metrics mnist-7 --metric CPUUtilization --period 1 --stat Maximum --format csv\n"
      "  trainwatch metrics mnist-7 --metric CoreUtilization --period 60");
  cmd->callback([flags, options, exit_code] { *exit_code = RunMetrics(*flags, *options); });
}

}  // namespace trainwatch::cli
