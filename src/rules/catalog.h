#pragma once
// The built-in rules: name, family, what each watches, its parameters, and how
// to make one from the user's strings. `trainwatch rules list`, the
// configuration checks and the engine all read this one table.
//
//   absl::StatusOr<std::unique_ptr<Rule>> rule =
//       MakeRule("LowGPUUtilization", {{"threshold_p95", "60"}}, Profile::kDefault);
//
// Each family's file registers its rules: profiler_rules.cc (spec/rules.md §6)
// log_rules.cc (§5.2, §5.8-§5.12 and the rules beyond Debugger) and
// tensor_rules.cc and prediction_rules.cc (the model rules over what the
// Python client sends: tensor statistics, a classifier's predictions).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rules/params.h"
#include "rules/reference.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// SageMaker files a rule under ProfilerRuleConfigurations or
// DebugRuleConfigurations; DescribeTrainingJob reports each family apart.
enum class RuleFamily : uint8_t { kProfiler, kDebug };
std::string_view RuleFamilyName(RuleFamily family);  // "profiler", "debug"

struct RuleInfo {
  std::string_view name;      // "CPUBottleneck"
  RuleFamily family;
  std::string_view summary;   // one line: what it detects
  std::string_view watches;   // one line: its inputs ("GPUUtilization per GPU")
  std::vector<ParamSpec> params;
  bool in_default_set = false;  // runs when the user configures no rules
  // Reads kStep inputs only: for a job without a step metric it cannot tell
  // "no step yet" from "no step metric", so it does not run and says so.
  bool needs_steps = false;
  // Checks the parameters together, after each was checked alone (null: none).
  std::function<absl::Status(const ParamValues&)> check = nullptr;
  // Builds the rule from checked parameters.
  std::function<std::unique_ptr<Rule>(const ParamValues&)> make;
  // Instead of make, for a rule that reads its environment (another job).
  std::function<std::unique_ptr<Rule>(const ParamValues&, const RuleEnvironment&)>
      make_in_environment = nullptr;
};

// Every built-in rule, profiler rules first, each family in a fixed order.
const std::vector<RuleInfo>& BuiltinRules();

// The rule of that name (case-insensitive, as SageMaker's rule_to_invoke), or
// nullptr.
const RuleInfo* FindRule(std::string_view name);

// NotFound for an unknown name: `no built-in rule "LowGPUUtilisation"; did you
// mean "LowGPUUtilization"? Rules: ...` (nearest first); ParseParams's errors
// for bad parameters.
absl::StatusOr<std::unique_ptr<Rule>> MakeRule(std::string_view name,
                                               const std::map<std::string, std::string>& params,
                                               Profile profile,
                                               const RuleEnvironment& environment = {});

// The family files' tables (catalog.cc joins them).
std::vector<RuleInfo> ProfilerRuleInfos();
std::vector<RuleInfo> LogRuleInfos();
std::vector<RuleInfo> TensorRuleInfos();
std::vector<RuleInfo> PredictionRuleInfos();

}  // namespace trainwatch::rules
