#pragma once
// What the engine feeds the rules, made from what a job produces: the samples
// of its series (by namespace, metric and dimensions: profiler/metric_names.h,
// model/job_events.h) and the lines of its log streams. Pure functions, used
// by the live engine and by replay alike, so both see the same inputs.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// An Input that owns its metric name (Input::name is a view).
struct OwnedInput {
  std::string job;
  Input input;
  std::string name;
  std::string collection;

  // The input, its name and collection pointing into this object.
  Input AsInput() const {
    Input in = input;
    in.name = name;
    in.collection = collection;
    return in;
  }
};

// The Input signal a series' samples become (nullopt: the rules do not read
// it), with the core or GPU index and, for metrics, the name.
struct SeriesSignal {
  Signal signal;
  int index = -1;
  std::string name;
  std::string collection = {};
  int predicted = -1;
  int part = -1;  // Input::part
  int rank = 0;   // Input::rank
};
std::optional<SeriesSignal> SignalOfSeries(const model::SeriesKey& key);

// The input every sample of a series becomes, but for its time and value
// (a kNonFinite input's value is already set: NaN or +-Inf by the Value
// dimension, whatever the sample's); nullopt for a series the rules do not
// read or that belongs to no job.
std::optional<OwnedInput> SeriesInput(const model::SeriesKey& key);

// Appends one input per sample of every series the rules read (statistic
// sets count as their average), in batch order.
// `wanted` (when given) picks the jobs whose series become inputs: the
// others cost a look at each series' key, not a copy per sample.
void AppendSampleInputs(const model::SampleBatch& batch, std::vector<OwnedInput>* out,
                        const std::function<bool(const std::string& job)>& wanted = nullptr);

// The log stream the engine writes a job's findings to, in the job's log
// group: "<job>/rules".
std::string RulesLogStream(std::string_view job);
// The job whose output a log stream carries ("<job>/algo-<n>-<epoch s>"), or
// nullopt (another group, or the job's rules stream).
std::optional<model::JobHost> JobOfLogStream(const model::LogStreamId& stream);

// Appends one kLogLine input per event of a job's output stream.
void AppendLogInputs(const model::LogBatch& batch, std::vector<OwnedInput>* out);

}  // namespace trainwatch::rules
