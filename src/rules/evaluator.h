#pragma once
// JobEvaluator: one job's configured rules, fed its inputs in time order, and
// what they concluded as SageMaker-shaped statuses with findings. No threads,
// no I/O: the live engine (rules/engine.h) and replay (rules/replay.h) both
// drive one, so a live run and its replay agree.
//
// Statuses (spec/rules.md §3.4, §4): a rule starts InProgress; its first issue
// makes it IssuesFound (latched: later findings are still recorded), with the
// first issue's message as StatusDetails; when the job ends, a rule without
// issues becomes NoIssuesFound (Stopped when the job was stopped); a rule that
// cannot be built or fails gets Error with the reason, and the others go on.
// In the sagemaker_compat profile a rule stops at its first issue.
//
// Findings: every finding counts (findings_total); one that repeats a
// (reason, subject) of the same rule within `repeat_quiet_ms` of data time is
// not recorded again, so a rule that fires every second for an hour records
// it a dozen times, not 3,600. Recorded findings go to Outcome::findings (the
// engine writes them to the job's rules log stream) and the first
// kMaxStoredFindings into the status.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "model/job_record.h"
#include "model/rule_result.h"
#include "rules/catalog.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// An action a recorded issue asks for ("StopTraining", "exec:...", ...).
struct ActionRequest {
  std::string job;
  std::string action;
  model::RuleFinding finding;
};

struct Outcome {
  std::vector<model::RuleFinding> findings;  // recorded now, in order
  std::vector<ActionRequest> actions;
  bool statuses_changed = false;
};

class JobEvaluator {
 public:
  static constexpr int64_t kDefaultRepeatQuietMs = 300'000;

  // Builds the job's configured rules (job.rule_configurations, profile
  // job.rules_profile). `now_ms` stamps the initial statuses.
  // `environment`: what rules may read besides the job (another job's data).
  JobEvaluator(const model::JobRecord& job, int64_t now_ms,
               int64_t repeat_quiet_ms = kDefaultRepeatQuietMs,
               const RuleEnvironment& environment = {});

  const std::string& job() const { return job_; }
  // The host whose record holds the statuses (the first record seen).
  int status_host() const { return status_host_; }
  bool ended() const { return ended_; }

  // One input of the job, in time order. A kMetric input of the job's step
  // metric is also fed as a kStep input. Every input carries the step of its
  // time (the last step metric at or before it), so an input that arrives
  // after a step metric of a later time (live, a profiler sample taken before
  // a line but delivered after it) gets the step replay gives it.
  void Feed(const Input& input, Outcome* out);
  // The job's record changed: Stopping marks active rules Stopping; a
  // terminal status ends every rule (OnEnd at the record's end time).
  void JobChanged(const model::JobRecord& job, Outcome* out);
  // Ends every rule at `end_ms` as if the job ended with `status`.
  void End(model::JobStatus status, int64_t end_ms, Outcome* out);

  const std::vector<model::RuleStatus>& statuses() const { return statuses_; }

 private:
  struct Active {
    std::unique_ptr<Rule> rule;  // null: Error, stopped at its first issue (compat), or idle
    // Set for a rule that cannot run here (a step rule in a job without a
    // step metric): the warning recorded when the job ends.
    std::optional<Finding> idle_warning;
    std::vector<std::string> actions;
    std::map<std::pair<std::string, std::string>, int64_t> last_recorded_ms;
  };
  void Apply(size_t i, Verdict verdict, Outcome* out);
  void Fail(size_t i, const std::string& why, int64_t t_ms, Outcome* out);
  void FeedAll(const Input& input, Outcome* out);

  std::string job_;
  int status_host_ = 1;
  std::string step_metric_;
  bool compat_ = false;
  int64_t repeat_quiet_ms_;
  bool ended_ = false;
  // The step metric's recent values, (t_ms, step) in feed order, and the step
  // before the oldest kept one.
  static constexpr size_t kStepHistory = 1024;
  std::deque<std::pair<int64_t, int64_t>> steps_;
  int64_t step_before_history_ = -1;
  int64_t StepAt(int64_t t_ms) const;
  std::vector<Active> active_;
  std::vector<model::RuleStatus> statuses_;
};

}  // namespace trainwatch::rules
