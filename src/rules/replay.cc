#include "rules/replay.h"

#include <algorithm>
#include <functional>
#include <future>
#include <queue>
#include <utility>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "profiler/metric_names.h"
#include "rules/config.h"
#include "rules/evaluator.h"
#include "rules/inputs.h"
#include "util/status_macros.h"

namespace trainwatch::rules {

namespace {

// One stored series (or one host's output lines) of a slice: the input each
// of its samples becomes, and their times (and values), in time order.
struct Source {
  OwnedInput base;
  bool fixed_value = false;  // kNonFinite, kLogLine: base's value, not the sample's
  std::vector<model::Sample> samples;
};

// The job's stored series of [start_ms, end_ms) that become inputs, each
// in time order. Series no rule takes are not read.
absl::StatusOr<std::vector<Source>> ReadSeriesSlice(const model::JobRecord& job,
                                                    query::MetricsReader& metrics,
                                                    int64_t start_ms, int64_t end_ms) {
  std::vector<query::ListMetricsQuery> queries;
  query::ListMetricsQuery by_job;
  by_job.dimensions.push_back({std::string(model::kTrainingJobNameDim), job.name});
  queries.push_back(by_job);
  for (const model::JobRecord& host : model::HostRecords(job)) {
    query::ListMetricsQuery by_host;
    by_host.ns = std::string(profiler::kProfilerNamespace);
    by_host.dimensions.push_back({std::string(profiler::kHostDim), host.HostName()});
    queries.push_back(by_host);
  }
  const query::MetricsReader::SeriesFilter wanted = [&](const model::SeriesKey& key) {
    std::optional<OwnedInput> base = SeriesInput(key);
    return base && base->job == job.name;
  };
  std::vector<Source> out;
  for (const query::ListMetricsQuery& q : queries) {
    TW_ASSIGN_OR_RETURN(std::vector<query::RawSeries> raw,
                        metrics.ReadRaw(q, start_ms, end_ms, wanted));
    for (query::RawSeries& series : raw) {
      std::optional<OwnedInput> base = SeriesInput(series.key);
      if (!base || base->job != job.name || series.samples.empty()) continue;
      Source source;
      source.fixed_value = base->input.signal == Signal::kNonFinite;
      source.base = std::move(*base);
      source.samples = std::move(series.samples);
      out.push_back(std::move(source));
    }
  }
  return out;
}

// The job's output lines of [start_ms, end_ms), one source per host.
absl::Status ReadLinesSlice(const model::JobRecord& job, query::LogsReader& logs,
                            int64_t start_ms, int64_t end_ms, std::vector<Source>* out) {
  for (const model::JobRecord& host : model::HostRecords(job)) {
    if (host.log_stream.empty()) continue;
    query::LogReadQuery q;
    q.stream = {std::string(model::kTrainingJobsLogGroup), host.log_stream};
    q.forward = true;
    q.start_ms = start_ms;
    q.end_ms = end_ms;
    q.limit = 10000;
    Source lines;
    while (true) {
      absl::StatusOr<std::vector<query::StoredLogEvent>> page = logs.ReadLogStream(q);
      if (absl::IsNotFound(page.status())) break;  // the job printed nothing
      if (!page.ok()) return page.status();
      for (const query::StoredLogEvent& e : *page) lines.samples.push_back({e.position.t_ms, 0});
      if (page->size() < q.limit) break;
      q.from = page->back().position;
      q.from->seq += 1;
    }
    std::vector<OwnedInput> one;
    AppendLogInputs({q.stream, {{0, ""}}}, &one);
    if (one.empty() || one[0].job != job.name || lines.samples.empty()) continue;
    lines.base = std::move(one[0]);
    lines.fixed_value = true;
    out->push_back(std::move(lines));
  }
  return absl::OkStatus();
}

// One slice read and put in order: its sources, and the source of each of
// its inputs in turn (a k-way merge by (time, source): the order a stable
// sort of the sources' inputs, concatenated, would give).
struct Slice {
  std::vector<Source> sources;
  std::vector<uint32_t> order;
};

absl::StatusOr<Slice> ReadSlice(const model::JobRecord& job, query::MetricsReader& metrics,
                                query::LogsReader& logs, int64_t start_ms, int64_t end_ms) {
  Slice slice;
  TW_ASSIGN_OR_RETURN(slice.sources, ReadSeriesSlice(job, metrics, start_ms, end_ms));
  // Series first, then lines: ties in time go in this order.
  TW_RETURN_IF_ERROR(ReadLinesSlice(job, logs, start_ms, end_ms, &slice.sources));
  const std::vector<Source>& sources = slice.sources;
  size_t total = 0;
  for (const Source& source : sources) total += source.samples.size();
  slice.order.reserve(total);
  std::vector<size_t> next(sources.size(), 0);
  using Head = std::pair<int64_t, uint32_t>;  // (time of the next sample, source)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (size_t i = 0; i < sources.size(); ++i) {
    heads.push({sources[i].samples[0].t_ms, static_cast<uint32_t>(i)});
  }
  while (!heads.empty()) {
    const uint32_t i = heads.top().second;
    heads.pop();
    slice.order.push_back(i);
    if (++next[i] < sources[i].samples.size()) heads.push({sources[i].samples[next[i]].t_ms, i});
  }
  return slice;
}

}  // namespace

absl::Status ForEachStoredInput(const model::JobRecord& job, query::MetricsReader& metrics,
                                query::LogsReader& logs, int64_t end_ms, int64_t slice_ms,
                                const std::function<void(int64_t t_ms)>& progress,
                                absl::FunctionRef<void(const Input&)> visit) {
  // A little past the end: data written as the job ended.
  const int64_t read_end = end_ms + 1;
  slice_ms = std::max<int64_t>(slice_ms, 1);
  // The next slice is read, decoded and put in order on a thread of its own
  // while this one is fed (reading was over a third of a replay's time): two
  // slices in memory at most.
  auto read = [&job, &metrics, &logs, read_end, slice_ms](int64_t start) {
    return ReadSlice(job, metrics, logs, start, std::min(read_end, start + slice_ms));
  };
  std::future<absl::StatusOr<Slice>> pending;
  if (job.creation_ms < read_end) pending = std::async(std::launch::async, read, job.creation_ms);
  for (int64_t start = job.creation_ms; start < read_end; start += slice_ms) {
    const int64_t end = std::min(read_end, start + slice_ms);
    absl::StatusOr<Slice> slice = pending.get();
    if (end < read_end) pending = std::async(std::launch::async, read, end);
    if (!slice.ok()) return slice.status();  // ~future waits for the read in flight
    const std::vector<Source>& sources = slice->sources;
    std::vector<Input> bases;
    bases.reserve(sources.size());
    for (const Source& source : sources) bases.push_back(source.base.AsInput());
    std::vector<size_t> cursor(sources.size(), 0);
    for (const uint32_t i : slice->order) {
      const Source& source = sources[i];
      const model::Sample& sample = source.samples[cursor[i]++];
      Input& in = bases[i];
      in.t_ms = sample.t_ms;
      if (!source.fixed_value) in.value = sample.value;
      visit(in);
    }
    if (progress) progress(end);
  }
  return absl::OkStatus();
}

absl::Status FeedStoredInputs(const model::JobRecord& job, query::MetricsReader& metrics,
                              query::LogsReader& logs, const ReplayOptions& options,
                              int64_t end_ms, JobEvaluator* evaluator,
                              std::vector<model::RuleFinding>* findings, int64_t* inputs) {
  const int64_t tick_ms = std::max<int64_t>(options.tick_ms, 1);
  int64_t next_tick = job.creation_ms + tick_ms;
  Outcome out;
  auto collect = [&] {
    if (findings != nullptr) {
      for (model::RuleFinding& f : out.findings) findings->push_back(std::move(f));
    }
    out = Outcome{};
  };
  auto tick_until = [&](int64_t t_ms) {
    Input tick;
    tick.signal = Signal::kTick;
    for (; next_tick <= t_ms && !evaluator->ended(); next_tick += tick_ms) {
      tick.t_ms = next_tick;
      evaluator->Feed(tick, &out);
    }
  };
  TW_RETURN_IF_ERROR(ForEachStoredInput(job, metrics, logs, end_ms, options.slice_ms,
                                        options.progress, [&](const Input& in) {
                                          tick_until(in.t_ms);
                                          evaluator->Feed(in, &out);
                                          if (inputs != nullptr) ++*inputs;
                                          collect();
                                        }));
  tick_until(end_ms);
  collect();
  return absl::OkStatus();
}

absl::StatusOr<ReplayResult> ReplayJob(const model::JobRecord& job, query::MetricsReader& metrics,
                                       query::LogsReader& logs, const ReplayOptions& options) {
  model::JobRecord configured = job;
  if (!options.configurations.empty()) configured.rule_configurations = options.configurations;
  if (options.profile) configured.rules_profile = *options.profile;
  TW_ASSIGN_OR_RETURN(Profile profile, ParseProfile(configured.rules_profile));
  TW_RETURN_IF_ERROR(ValidateRuleConfigurations(&configured.rule_configurations, profile));

  ReplayResult result;
  result.start_ms = job.creation_ms;
  result.end_ms = model::IsTerminal(job.status)
                      ? job.training_end_ms.value_or(job.last_modified_ms)
                      : job.last_modified_ms;
  JobEvaluator evaluator(configured, job.creation_ms, JobEvaluator::kDefaultRepeatQuietMs,
                         options.environment);
  TW_RETURN_IF_ERROR(FeedStoredInputs(job, metrics, logs, options, result.end_ms, &evaluator,
                                      &result.findings, &result.inputs));
  Outcome out;
  evaluator.JobChanged(job, &out);
  for (model::RuleFinding& f : out.findings) result.findings.push_back(std::move(f));
  result.statuses = evaluator.statuses();
  return result;
}

}  // namespace trainwatch::rules
