#pragma once
// Rule configurations as users write them, checked before a job starts:
//
//   trainwatch run --rule LowGPUUtilization:threshold_p95=60,action=StopTraining
//   trainwatch run --rules rules.json        (SageMaker's RuleConfigurations)
//   CreateTrainingJob {"DebugRuleConfigurations": [...], "ProfilerRuleConfigurations": [...]}
//
// and the default set that runs when a job configures none. Every error names
// the rule, the parameter, the valid choices (nearest first) and the accepted
// range, so a bad configuration refuses to start instead of failing later.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/rule_result.h"
#include "nlohmann/json.hpp"
#include "rules/params.h"

namespace trainwatch::rules {

// "NAME[:param=value,param=value...]". A value may hold commas ("metrics=a,b"):
// a comma starts a new parameter only when "identifier=" follows it. Keys that
// are not the rule's parameters:
//   name=CONFIG_NAME      the configuration's name (default: the rule's name)
//   action=ACTION         repeatable; see ValidateAction
absl::StatusOr<model::RuleConfiguration> ParseRuleFlag(std::string_view flag);

// SageMaker's RuleConfigurations: a JSON array of {RuleConfigurationName,
// RuleEvaluatorImage (ignored), InstanceType/VolumeSizeInGB (ignored),
// RuleParameters {"rule_to_invoke": NAME, param: "string", ...}}, or an object
// with DebugRuleConfigurations and/or ProfilerRuleConfigurations arrays.
// RuleParameters may also carry "action" (as --rule) and SageMaker's
// "action_json" (a JSON list of {"name": "stoptraining"|"email"|"sms", ...}:
// stoptraining becomes StopTraining; email and sms are refused, as trainwatch
// sends no mail). `where` names the source in errors ("rules.json").
absl::StatusOr<std::vector<model::RuleConfiguration>> ParseRuleConfigurations(
    const nlohmann::json& j, std::string_view where);

// The rules that run when a job configures none: every rule of the catalog's
// default set, with its default parameters.
std::vector<model::RuleConfiguration> DefaultRuleConfigurations();

// The metric whose value is the step number when the user names none: a
// definition named step, train:step or global_step ("" when none is).
std::string DefaultStepMetric(const std::vector<model::MetricDefinition>& definitions);

// "default" or "sagemaker_compat"; InvalidArgument naming the choices.
absl::StatusOr<Profile> ParseProfile(std::string_view name);

// Checks each configuration as the engine will build it (rule, parameters,
// actions) and that names are unique; names a configuration that has none.
absl::Status ValidateRuleConfigurations(std::vector<model::RuleConfiguration>* configs,
                                        Profile profile);

// Actions: "StopTraining", "exec:/absolute/path/to/program",
// "webhook:http://host[:port]/path", "signal:SIGUSR1" (SIGUSR1, SIGUSR2,
// SIGINT, SIGTERM, SIGHUP, SIGQUIT). InvalidArgument saying which forms exist.
absl::Status ValidateAction(std::string_view action);

}  // namespace trainwatch::rules
