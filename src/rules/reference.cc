#include "rules/reference.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "model/job_record.h"
#include "model/log_event.h"
#include "rules/inputs.h"

namespace trainwatch::rules {

std::string TensorStatisticKey(std::string_view tensor, std::string_view collection, int stat,
                               int part) {
  std::string key = absl::StrFormat("%s|%s|%d", tensor, collection, stat);
  if (part >= 0) key += absl::StrFormat("|%d", part);
  return key;
}

ReferenceLoader StoreReferenceLoader(query::MetricsReader* metrics, query::JobsReader* jobs) {
  return [metrics, jobs](const std::string& name,
                         const TensorWanted& want) -> absl::StatusOr<ReferenceRun> {
    absl::StatusOr<std::optional<model::JobRecord>> record = jobs->GetJob(name);
    if (!record.ok()) return record.status();
    if (!record->has_value()) {
      return absl::NotFoundError(absl::StrFormat("there is no job %s", name));
    }
    const model::JobRecord& job = **record;
    ReferenceRun run;
    run.ended = model::IsTerminal(job.status);
    const int64_t start = job.creation_ms - 60'000;
    const int64_t end = std::numeric_limits<int64_t>::max();
    const query::DimensionFilter of_job{std::string(model::kTrainingJobNameDim), job.name};
    // Its steps: the step current at each time.
    std::vector<model::Sample> steps;
    if (!job.step_metric.empty()) {
      query::ListMetricsQuery q;
      q.ns = std::string(model::kTrainingJobsNamespace);
      q.metric = job.step_metric;
      q.dimensions = {of_job};
      absl::StatusOr<std::vector<query::RawSeries>> read = metrics->ReadRaw(
          q, start, end, [](const model::SeriesKey& key) { return key.dimensions.size() == 1; });
      if (!read.ok()) return read.status();
      for (const query::RawSeries& s : *read) {
        steps.insert(steps.end(), s.samples.begin(), s.samples.end());
      }
      std::sort(steps.begin(), steps.end(),
                [](const model::Sample& a, const model::Sample& b) { return a.t_ms < b.t_ms; });
    }
    const auto step_at = [&steps](int64_t t) -> int64_t {
      auto it = std::upper_bound(steps.begin(), steps.end(), t,
                                 [](int64_t v, const model::Sample& s) { return v < s.t_ms; });
      if (it == steps.begin()) return -1;
      const double step = std::prev(it)->value;
      return step >= 0 && step < 9.0e15 ? static_cast<int64_t>(step) : -1;
    };
    query::ListMetricsQuery q;
    q.ns = std::string(model::kTensorsNamespace);
    q.dimensions = {of_job};
    absl::StatusOr<std::vector<query::RawSeries>> read =
        metrics->ReadRaw(q, start, end, [&want](const model::SeriesKey& key) {
          const std::string* rank = key.FindDimension("Rank");
          const std::string* tensor = key.FindDimension(model::kTensorDim);
          const std::string* collection = key.FindDimension(model::kCollectionDim);
          return tensor != nullptr && (rank == nullptr || *rank == "0") &&
                 (!want || want(*tensor, collection != nullptr ? *collection : ""));
        });
    if (!read.ok()) return read.status();
    for (const query::RawSeries& s : *read) {
      std::optional<SeriesSignal> signal = SignalOfSeries(s.key);
      if (!signal || signal->signal != Signal::kTensor) continue;
      std::map<int64_t, double>& by_step = run.values[TensorStatisticKey(
          signal->name, signal->collection, signal->index, signal->part)];
      for (const model::Sample& sample : s.samples) {
        const int64_t step = step_at(sample.t_ms);
        if (step < 0) continue;
        by_step[step] = sample.value;
        run.last_step = std::max(run.last_step, step);
      }
    }
    return run;
  };
}

}  // namespace trainwatch::rules
