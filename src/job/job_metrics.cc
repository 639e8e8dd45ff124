#include "job/job_metrics.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "extract/extractor.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "util/status_macros.h"

namespace trainwatch::job {

JobMetrics::~JobMetrics() = default;

absl::StatusOr<std::unique_ptr<JobMetrics>> JobMetrics::Create(
    std::string_view job_name, std::vector<model::MetricDefinition> definitions,
    bool sagemaker_escaped, int host_index, std::string_view step_metric) {
  std::unique_ptr<JobMetrics> metrics(new JobMetrics());
  for (const model::MetricDefinition& d : definitions) {
    absl::StatusOr<model::SeriesKey> key =
        model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), d.name,
                             {{"TrainingJobName", std::string(job_name)}}, "None");
    if (!key.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metric definition \"%s\": %s", d.name, key.status().message()));
    }
    metrics->series_.push_back(*std::move(key));
  }
  for (const model::MetricDefinition& d : definitions) {
    for (std::string_view value : {"NaN", "+Inf", "-Inf"}) {
      absl::StatusOr<model::SeriesKey> key = model::MakeSeriesKey(
          std::string(model::kJobEventsNamespace), std::string(model::kNonFiniteMetricValues),
          {{std::string(model::kTrainingJobNameDim), std::string(job_name)},
           {std::string(model::kMetricNameDim), d.name},
           {std::string(model::kValueDim), std::string(value)}},
          "Count");
      if (!key.ok()) return key.status();
      metrics->series_.push_back(*std::move(key));
    }
  }
  for (size_t i = 0; i < definitions.size(); ++i) {
    if (step_metric.empty() || definitions[i].name != step_metric) continue;
    absl::StatusOr<model::SeriesKey> key = model::MakeSeriesKey(
        std::string(model::kJobEventsNamespace), std::string(model::kHostStepMetric),
        {{"Host", absl::StrFormat("%s/algo-%d", job_name, host_index)}}, "None");
    if (!key.ok()) return key.status();
    metrics->series_.push_back(*std::move(key));
    metrics->step_definition_ = i;
    break;
  }
  extract::ExtractOptions options;
  options.sagemaker_escaped = sagemaker_escaped;
  TW_ASSIGN_OR_RETURN(metrics->extractor_, extract::Extractor::Create(definitions, options));
  metrics->last_.resize(definitions.size());
  metrics->values_.assign(definitions.size(), 0);
  metrics->definitions_ = std::move(definitions);
  return metrics;
}

void JobMetrics::Extract(int64_t t_ms, std::string_view line,
                         std::vector<std::pair<size_t, double>>* out) {
  if (definitions_.empty()) return;
  for (const extract::ExtractedValue& v : extractor_->Extract(line)) {
    out->emplace_back(v.definition, v.value);
    if (step_definition_ == v.definition) out->emplace_back(series_.size() - 1, v.value);
    last_[v.definition] = model::FinalMetric{definitions_[v.definition].name, v.value, t_ms};
    ++values_[v.definition];
  }
  for (const extract::ExtractedValue& v : extractor_->non_finite()) {
    const size_t kind = std::isnan(v.value) ? 0 : v.value > 0 ? 1 : 2;
    out->emplace_back(definitions_.size() + 3 * v.definition + kind, 1.0);
  }
}

std::vector<model::FinalMetric> JobMetrics::FinalMetrics() const {
  std::vector<model::FinalMetric> out;
  for (const auto& last : last_) {
    if (last) out.push_back(*last);
  }
  return out;
}

std::vector<DefinitionStats> JobMetrics::Stats() const {
  std::vector<DefinitionStats> out;
  for (size_t i = 0; i < definitions_.size(); ++i) {
    out.push_back({definitions_[i].name, values_[i], extractor_->rejected(i)});
  }
  return out;
}

}  // namespace trainwatch::job
