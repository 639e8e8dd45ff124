#include "cli/rules_flags.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "rules/config.h"

namespace trainwatch::cli {

void AddRulesFlags(CLI::App* cmd, RulesFlags* flags) {
  cmd->add_option("--rule", flags->rules,
                  "a rule to run, with parameters and actions (repeatable): "
                  "NAME[:param=value,...,action=StopTraining|exec:PROG|webhook:URL|signal:SIG]; "
                  "`trainwatch rules list` shows them (default: the default set)")
      ->type_name("NAME[:P=V,...]")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--rules", flags->rules_file,
                  "SageMaker RuleConfigurations JSON file (a list, or an object with "
                  "DebugRuleConfigurations / ProfilerRuleConfigurations)")
      ->type_name("FILE");
  cmd->add_flag("--no-rules", flags->no_rules, "run no rules (not even the default set)");
  cmd->add_option("--rules-profile", flags->profile,
                  "default (trainwatch's defaults, windows in seconds) or sagemaker_compat "
                  "(SageMaker's shipped defaults; a rule ends at its first issue)")
      ->type_name("PROFILE");
  cmd->add_option("--step-metric", flags->step_metric,
                  "the metric whose value is the step number, for rules that need steps "
                  "(default: a definition named step, train:step or global_step; else step, the "
                  "name the Python client sends it under)")
      ->type_name("NAME");
}

absl::StatusOr<RulesSetup> LoadRulesFlags(const RulesFlags& flags,
                                          const std::vector<model::MetricDefinition>& definitions) {
  RulesSetup setup;
  absl::StatusOr<rules::Profile> profile = rules::ParseProfile(flags.profile);
  if (!profile.ok()) return profile.status();
  if (*profile == rules::Profile::kSageMakerCompat) setup.profile = flags.profile;
  if (flags.no_rules && (!flags.rules.empty() || !flags.rules_file.empty())) {
    return absl::InvalidArgumentError("--no-rules cannot be combined with --rule or --rules");
  }
  if (!flags.rules_file.empty()) {
    std::ifstream in(flags.rules_file, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(
          absl::StrFormat("cannot read --rules file \"%s\"", flags.rules_file));
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s is not valid JSON", flags.rules_file));
    }
    absl::StatusOr<std::vector<model::RuleConfiguration>> parsed =
        rules::ParseRuleConfigurations(j, flags.rules_file);
    if (!parsed.ok()) return parsed.status();
    setup.configurations = std::move(*parsed);
  }
  for (const std::string& flag : flags.rules) {
    absl::StatusOr<model::RuleConfiguration> c = rules::ParseRuleFlag(flag);
    if (!c.ok()) return c.status();
    setup.configurations.push_back(std::move(*c));
  }
  if (setup.configurations.empty() && !flags.no_rules) {
    setup.configurations = rules::DefaultRuleConfigurations();
  }
  if (absl::Status s = rules::ValidateRuleConfigurations(&setup.configurations, *profile);
      !s.ok()) {
    std::string message(s.message());
    if (message.find("trainwatch rules list") == std::string::npos) {
      message += " (trainwatch rules list shows every rule and its parameters)";
    }
    return absl::InvalidArgumentError(message);
  }
  // A definition named step, train:step or global_step; else "step", the name
  // under which the Python client sends the step (docs/python.md). A name no
  // definition gives may be sent by the process itself, through the client.
  setup.step_metric = flags.step_metric;
  if (setup.step_metric.empty()) setup.step_metric = rules::DefaultStepMetric(definitions);
  if (setup.step_metric.empty()) setup.step_metric = "step";
  return setup;
}

}  // namespace trainwatch::cli
