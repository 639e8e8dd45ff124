#pragma once
// The rule flags of `trainwatch run` (--rule, --rules, --no-rules,
// --rules-profile, --step-metric): what they mean for the job record, checked
// before the job starts.

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::cli {

struct RulesFlags {
  std::vector<std::string> rules;  // --rule NAME[:param=value,...]
  std::string rules_file;          // --rules FILE.json
  bool no_rules = false;
  std::string profile;             // --rules-profile
  std::string step_metric;         // --step-metric
};

void AddRulesFlags(CLI::App* cmd, RulesFlags* flags);

struct RulesSetup {
  std::vector<model::RuleConfiguration> configurations;  // validated; empty: none run
  std::string profile;                                   // "" or "sagemaker_compat"
  std::string step_metric;
};

// The configurations the flags ask for (the default set when none is named
// and --no-rules is not given), validated; `definitions` give the step
// metric's default (a definition named step, train:step or global_step; else
// "step", what the Python client sends).
absl::StatusOr<RulesSetup> LoadRulesFlags(const RulesFlags& flags,
                                          const std::vector<model::MetricDefinition>& definitions);

}  // namespace trainwatch::cli
