#pragma once
// Replay: a stored job's data fed through rules offline, by the same
// functions and the same JobEvaluator as the live engine, so that users can
// tune thresholds on past jobs (`trainwatch rules replay JOB`). The inputs
// are what the live engine saw: the job's metrics and non-finite events
// (dimension TrainingJobName), its hosts' profiler series and its output
// lines, merged in time order, with a clock tick every tick_ms of data time
// for the time-driven rules. Only what the raw tier still holds can be
// replayed (retention: docs/store.md).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/rule_result.h"
#include "query/reader.h"
#include "rules/reference.h"

namespace trainwatch::rules {

struct ReplayOptions {
  // Empty: the job's own configurations and profile.
  std::vector<model::RuleConfiguration> configurations;
  std::optional<std::string> profile;
  int64_t tick_ms = 200;  // as the live engine's default
  // Data is read this much at a time (memory stays bounded for long jobs).
  int64_t slice_ms = 3'600'000;
  // Called after each slice with the data time reached (progress).
  std::function<void(int64_t t_ms)> progress;
  // What rules may read besides the job (SimilarAcrossRuns).
  RuleEnvironment environment = {};
};

struct ReplayResult {
  std::vector<model::RuleStatus> statuses;
  std::vector<model::RuleFinding> findings;  // recorded findings, in order
  int64_t inputs = 0;                        // inputs fed (ticks not counted)
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};

class JobEvaluator;
struct Input;

// Every input the live engine saw from `job`'s stored data, from its
// creation up to end_ms (a little past it: data written as the job ended), in
// time order (ties by series): its metrics, its hosts' profiler series, its
// output lines. No ticks. Reads slice_ms of data at a time and calls
// `progress` (when set) after each slice. What the report and replay share.
// `metrics` and `logs` are read from a thread of its own (the next slice
// while this one is fed): they must be thread-safe as query/reader.h says,
// so not a reader Snapshot() made.
absl::Status ForEachStoredInput(const model::JobRecord& job, query::MetricsReader& metrics,
                                query::LogsReader& logs, int64_t end_ms, int64_t slice_ms,
                                const std::function<void(int64_t t_ms)>& progress,
                                absl::FunctionRef<void(const Input&)> visit);

// Replay's core: feeds `job`'s stored inputs from its creation up to end_ms
// (with ticks) into `evaluator`, appending the findings it records to
// *findings when not null; does not end the rules. Also how the live engine
// rebuilds a job's rule state when a server starts (Engine::Watch).
absl::Status FeedStoredInputs(const model::JobRecord& job, query::MetricsReader& metrics,
                              query::LogsReader& logs, const ReplayOptions& options,
                              int64_t end_ms, JobEvaluator* evaluator,
                              std::vector<model::RuleFinding>* findings, int64_t* inputs);

// InvalidArgument for configurations that do not build (the same errors as
// ValidateRuleConfigurations); the readers' errors.
absl::StatusOr<ReplayResult> ReplayJob(const model::JobRecord& job, query::MetricsReader& metrics,
                                       query::LogsReader& logs, const ReplayOptions& options);

}  // namespace trainwatch::rules
