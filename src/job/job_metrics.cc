#include "job/job_metrics.h"

#include "absl/strings/str_format.h"
#include "extract/extractor.h"
#include "model/log_event.h"
#include "util/status_macros.h"

namespace trainwatch::job {

JobMetrics::~JobMetrics() = default;

absl::StatusOr<std::unique_ptr<JobMetrics>> JobMetrics::Create(
    std::string_view job_name, std::vector<model::MetricDefinition> definitions,
    bool sagemaker_escaped) {
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
  extractor_->ExtractLine(line, [&](size_t index, double value) {
    out->emplace_back(index, value);
    last_[index] = model::FinalMetric{definitions_[index].name, value, t_ms};
    ++values_[index];
  });
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
