#include "rules/inputs.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "model/job_events.h"
#include "profiler/metric_names.h"

namespace trainwatch::rules {

namespace {

namespace pm = profiler::metric;

std::optional<int> ParseIndex(std::string_view text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<SeriesSignal> SignalOfSeries(const model::SeriesKey& key) {
  if (key.ns == model::kJobEventsNamespace) {
    if (key.metric == model::kHostStepMetric) {
      if (key.FindDimension(profiler::kHostDim) == nullptr) return std::nullopt;
      return SeriesSignal{Signal::kHostStep, -1, {}};
    }
    const std::string* metric = key.FindDimension(model::kMetricNameDim);
    if (key.metric != model::kNonFiniteMetricValues || metric == nullptr) return std::nullopt;
    return SeriesSignal{Signal::kNonFinite, -1, *metric};
  }
  if (key.ns == model::kTensorsNamespace) {
    const std::string* tensor = key.FindDimension(model::kTensorDim);
    const std::string* collection = key.FindDimension(model::kCollectionDim);
    std::optional<TensorStat> stat = ParseTensorStat(key.metric);
    if (tensor == nullptr || !stat) return std::nullopt;
    SeriesSignal signal{Signal::kTensor, static_cast<int>(*stat), *tensor,
                        collection != nullptr ? *collection : std::string()};
    if (*stat == TensorStat::kChannelMean || *stat == TensorStat::kTokenFraction) {
      const std::string* part = key.FindDimension(
          *stat == TensorStat::kChannelMean ? model::kChannelDim : model::kTokenDim);
      std::optional<int> n = part != nullptr ? ParseIndex(*part) : std::nullopt;
      if (!n) return std::nullopt;  // a per-part statistic without its part says nothing
      signal.part = *n;
    }
    if (const std::string* rank = key.FindDimension("Rank")) {
      std::optional<int> r = ParseIndex(*rank);
      if (!r) return std::nullopt;
      signal.rank = *r;
    }
    return signal;
  }
  if (key.ns == model::kPredictionsNamespace) {
    const std::string* label = key.FindDimension(model::kLabelDim);
    const std::string* predicted = key.FindDimension(model::kPredictedDim);
    if (key.metric != model::kPredictionCountMetric || label == nullptr || predicted == nullptr) {
      return std::nullopt;
    }
    std::optional<int> l = ParseIndex(*label), p = ParseIndex(*predicted);
    if (!l || !p) return std::nullopt;
    return SeriesSignal{Signal::kPrediction, *l, {}, {}, *p};
  }
  if (key.ns == profiler::kProfilerNamespace) {
    const std::string* core = key.FindDimension(profiler::kCoreDim);
    const std::string* gpu = key.FindDimension(profiler::kGpuDim);
    auto indexed = [](Signal s, const std::string* dim) -> std::optional<SeriesSignal> {
      std::optional<int> i = ParseIndex(*dim);
      if (!i) return std::nullopt;
      return SeriesSignal{s, *i, {}};
    };
    const std::string_view m = key.metric;
    if (core != nullptr) {
      if (m == pm::kHostCPUUtilization) return indexed(Signal::kCoreCpu, core);
      if (m == pm::kCPUIOWait) return indexed(Signal::kCoreIoWait, core);
      return std::nullopt;
    }
    if (gpu != nullptr) {
      if (m == pm::kGpuUtil) return indexed(Signal::kGpuUtil, gpu);
      if (m == pm::kGpuMemUtil) return indexed(Signal::kGpuMemUtil, gpu);
      if (m == pm::kGpuMemUsed) return indexed(Signal::kGpuMemUsedBytes, gpu);
      if (m == pm::kGpuMemTotal) return indexed(Signal::kGpuMemTotalBytes, gpu);
      return std::nullopt;
    }
    if (key.dimensions.size() != 1) return std::nullopt;  // {Host} only
    if (m == pm::kHostCPUUtilization) return SeriesSignal{Signal::kHostCpu, -1, {}};
    if (m == pm::kJobCPU) return SeriesSignal{Signal::kJobCpu, -1, {}};
    if (m == pm::kJobProcesses) return SeriesSignal{Signal::kJobProcesses, -1, {}};
    if (m == pm::kCPUCores) return SeriesSignal{Signal::kCpuCores, -1, {}};
    return std::nullopt;
  }
  if (key.ns == profiler::kSageMakerNamespace && key.FindDimension(profiler::kHostDim) != nullptr) {
    return std::nullopt;  // instance metrics: the finer trainwatch/Profiler ones are read
  }
  // A metric of the job: extracted from its log, or sent by the client.
  if (key.FindDimension(model::kTrainingJobNameDim) != nullptr) {
    return SeriesSignal{Signal::kMetric, -1, key.metric};
  }
  return std::nullopt;
}

std::optional<OwnedInput> SeriesInput(const model::SeriesKey& key) {
  std::optional<SeriesSignal> signal = SignalOfSeries(key);
  if (!signal) return std::nullopt;
  std::optional<model::JobHost> job = model::JobOfSeries(key);
  if (!job) return std::nullopt;
  OwnedInput in;
  in.job = std::move(job->job);
  in.input.signal = signal->signal;
  in.input.index = signal->index;
  in.input.host = job->host_index;
  in.name = std::move(signal->name);
  in.collection = std::move(signal->collection);
  in.input.predicted = signal->predicted;
  in.input.part = signal->part;
  in.input.rank = signal->rank;
  if (signal->signal == Signal::kNonFinite) {
    in.input.value = std::numeric_limits<double>::quiet_NaN();
    const std::string* v = key.FindDimension(model::kValueDim);
    if (v != nullptr && *v == "+Inf") in.input.value = std::numeric_limits<double>::infinity();
    if (v != nullptr && *v == "-Inf") in.input.value = -std::numeric_limits<double>::infinity();
  }
  return in;
}

void AppendSampleInputs(const model::SampleBatch& batch, std::vector<OwnedInput>* out,
                        const std::function<bool(const std::string& job)>& wanted) {
  for (const model::SeriesSamples& series : batch.series) {
    const std::optional<OwnedInput> base = SeriesInput(series.key);
    if (!base || (wanted && !wanted(base->job))) continue;
    const bool non_finite = base->input.signal == Signal::kNonFinite;
    auto add = [&](int64_t t_ms, double value) {
      OwnedInput in = *base;
      in.input.t_ms = t_ms;
      if (!non_finite) in.input.value = value;
      out->push_back(std::move(in));
    };
    for (const model::Sample& s : series.samples) add(s.t_ms, s.value);
    for (const model::WeightedSample& s : series.weighted) add(s.t_ms, s.value);
    for (const model::StatisticSet& s : series.statistic_sets) {
      if (s.sample_count > 0) add(s.t_ms, s.sum / s.sample_count);
    }
  }
}

std::string RulesLogStream(std::string_view job) { return std::string(job) + "/rules"; }

std::optional<model::JobHost> JobOfLogStream(const model::LogStreamId& stream) {
  if (stream.group != model::kTrainingJobsLogGroup) return std::nullopt;
  // "<job>/algo-<n>-<epoch seconds>"
  std::string_view s = stream.stream;
  const size_t dash = s.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  if (!ParseIndex(s.substr(dash + 1))) return std::nullopt;
  return model::ParseHostName(s.substr(0, dash));
}

void AppendLogInputs(const model::LogBatch& batch, std::vector<OwnedInput>* out) {
  std::optional<model::JobHost> job = JobOfLogStream(batch.stream);
  if (!job) return;
  for (const model::LogEvent& e : batch.events) {
    OwnedInput in;
    in.job = job->job;
    in.input.signal = Signal::kLogLine;
    in.input.t_ms = e.t_ms;
    in.input.host = job->host_index;
    out->push_back(std::move(in));
  }
}

}  // namespace trainwatch::rules
