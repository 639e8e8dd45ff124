#pragma once
// JobMetrics: a job's metric definitions applied to its lines. The one place where
// the job layer uses extract/: it owns the Extractor, knows the series each
// definition writes to (spec/aws-api.md §5.1: namespace /aws/sagemaker/TrainingJobs,
// the definition's Name, dimension TrainingJobName, unit None), and remembers the
// last value of each definition for FinalMetricDataList (§5.4).
//
// A match whose value is NaN or ±Inf (`loss: nan`) makes no datapoint (the
// store refuses them) but is counted in model/job_events.h's
// NonFiniteMetricValues series of that definition, so that the rules see it.
//
// Thread-compatible: Extract runs on the line thread; the rest is read after it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/series.h"

namespace trainwatch::extract {
class Extractor;
}

namespace trainwatch::job {

struct DefinitionStats {
  std::string name;
  uint64_t values = 0;    // datapoints produced
  uint64_t rejected = 0;  // matches whose capture was not a number (spec/extraction.md)
};

class JobMetrics {
 public:
  // InvalidArgument naming the definition when one is invalid (spec/extraction.md
  // "Definitions"), or when a name cannot be a CloudWatch metric name.
  // `step_metric`: the job's step metric; when a definition names it, its
  // datapoints also go to host `host_index`'s own step series
  // (model/job_events.h kHostStepMetric), the last of series().
  static absl::StatusOr<std::unique_ptr<JobMetrics>> Create(
      std::string_view job_name, std::vector<model::MetricDefinition> definitions,
      bool sagemaker_escaped, int host_index = 1, std::string_view step_metric = {});
  ~JobMetrics();

  // series()[i] is where definition i's datapoints go; after the n definitions'
  // series come, for each definition i, its non-finite counts at n + 3i + k
  // (k: 0 NaN, 1 +Inf, 2 -Inf); then the host's step series, when the step
  // metric is one of the definitions.
  const std::vector<model::SeriesKey>& series() const { return series_; }
  // Appends (series index, value) for each datapoint of the line, in definition
  // order, and remembers them as the latest values; then (non-finite series
  // index, 1) for each match whose value was NaN or ±Inf. A step metric value
  // is appended twice: to its definition's series and to the host's.
  void Extract(int64_t t_ms, std::string_view line, std::vector<std::pair<size_t, double>>* out);
  // The last value and its time of each definition that produced one, in definition
  // order.
  std::vector<model::FinalMetric> FinalMetrics() const;
  std::vector<DefinitionStats> Stats() const;

 private:
  JobMetrics() = default;

  std::unique_ptr<extract::Extractor> extractor_;
  std::vector<model::MetricDefinition> definitions_;
  std::vector<model::SeriesKey> series_;
  std::vector<std::optional<model::FinalMetric>> last_;
  std::vector<uint64_t> values_;
  std::optional<size_t> step_definition_;  // the step metric's definition
};

}  // namespace trainwatch::job
