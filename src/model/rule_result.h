#pragma once
// What the rule engine records about a job: which rules were configured (as
// the user wrote them: SageMaker's RuleConfigurations, `trainwatch run
// --rule`), each rule's evaluation status in SageMaker's vocabulary, and the
// findings behind it. Rules (src/rules) produce them, the store keeps them with
// the job, describe / DescribeTrainingJob / the dashboard show them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::model {

enum class FindingSeverity : uint8_t { kIssue, kWarning };
std::string_view FindingSeverityName(FindingSeverity severity);  // "issue", "warning"

// One thing a rule found (spec/rules.md §10.8).
struct RuleFinding {
  std::string rule;            // the configuration name (RuleConfigurationName)
  std::string reason;          // short tag: "underutilized", "nan", "stalled", "no_data"
  std::string subject;         // "GPU 0", "core 3", "train:loss", "host", "job"
  int64_t step = -1;           // -1: not tied to a step
  int64_t t_ms = 0;            // when the evidence was complete (data time)
  double observed = 0;         // the value that decided (may be NaN/±Inf)
  double threshold = 0;        // what it was compared with
  std::string message;         // what was seen, in plain words, with units
  std::string recommendation;  // what to do about it
  FindingSeverity severity = FindingSeverity::kIssue;
  friend bool operator==(const RuleFinding& a, const RuleFinding& b);
};

// A configured rule. `parameters` are strings, as SageMaker's RuleParameters
// are (rule_to_invoke and the trainwatch-level keys removed).
struct RuleConfiguration {
  std::string name;  // RuleConfigurationName, unique within the job
  std::string rule;  // the built-in rule it runs
  std::map<std::string, std::string> parameters;
  // "StopTraining", "exec:/path/prog", "webhook:http://host/path", "signal:SIGUSR1".
  std::vector<std::string> actions;
  friend bool operator==(const RuleConfiguration&, const RuleConfiguration&) = default;
};

// SageMaker's RuleEvaluationStatus values.
enum class RuleStatusKind : uint8_t {
  kInProgress,
  kNoIssuesFound,
  kIssuesFound,
  kError,
  kStopping,
  kStopped
};
std::string_view RuleStatusName(RuleStatusKind status);  // "InProgress", ...
std::optional<RuleStatusKind> ParseRuleStatus(std::string_view name);

struct RuleStatus {
  std::string configuration_name;
  std::string rule;     // the built-in rule
  std::string family;   // "profiler" or "debug": which list DescribeTrainingJob puts it in
  RuleStatusKind status = RuleStatusKind::kInProgress;
  std::string details;  // StatusDetails: the first issue or the error, <= 1024 characters
  int64_t last_modified_ms = 0;
  // Every finding up to kMaxStoredFindings (the first ones; all of them are
  // also in the job's "rules" log stream), and how many there were in all.
  std::vector<RuleFinding> findings;
  int64_t findings_total = 0;
  friend bool operator==(const RuleStatus&, const RuleStatus&) = default;
};

// Whether a rule that found no issue could check nothing: it said so with a
// "no_data" warning (spec/rules.md §4: never a silent pass). Summaries count
// these apart from the rules that checked and found nothing.
bool CheckedNothing(const RuleStatus& status);
// How many of its findings were issues: findings_total less the warnings
// among the findings kept.
int64_t IssueCount(const RuleStatus& status);

inline constexpr size_t kMaxStoredFindings = 100;
inline constexpr size_t kMaxStatusDetailsChars = 1024;

}  // namespace trainwatch::model
