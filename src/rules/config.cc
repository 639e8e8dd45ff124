#include "rules/config.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rules/catalog.h"
#include "util/status_macros.h"

namespace trainwatch::rules {

namespace {

constexpr std::string_view kActionForms =
    "StopTraining, exec:/path/to/program, webhook:http://host:port/path, signal:SIGUSR1";

bool IsIdentifierStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `text` starts with "identifier=".
bool StartsWithKey(std::string_view text) {
  if (text.empty() || !IsIdentifierStart(text[0])) return false;
  size_t i = 1;
  while (i < text.size() && IsIdentifierChar(text[i])) ++i;
  return i < text.size() && text[i] == '=';
}

std::string Trim(std::string_view s) {
  std::string out(s);
  absl::StripAsciiWhitespace(&out);
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(absl::string_view(a.data(), a.size()),
                                absl::string_view(b.data(), b.size()));
}

}  // namespace

absl::Status ValidateAction(std::string_view action) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("action \"%s\" %s; actions are: %s", action, why, kActionForms));
  };
  if (action == "StopTraining") return absl::OkStatus();
  if (EqualsIgnoreCase(action, "stoptraining")) return bad("is spelled StopTraining");
  const size_t colon = action.find(':');
  if (colon == std::string_view::npos) return bad("is not one of them");
  const std::string_view kind = action.substr(0, colon);
  const std::string_view arg = action.substr(colon + 1);
  if (kind == "exec") {
    if (arg.empty() || arg[0] != '/') return bad("needs an absolute program path");
    return absl::OkStatus();
  }
  if (kind == "webhook") {
    if (!absl::StartsWith(absl::string_view(arg.data(), arg.size()), "http://") ||
        arg.size() <= 7) {
      return bad("needs an http:// URL (https is not supported: send it to a local relay)");
    }
    return absl::OkStatus();
  }
  if (kind == "signal") {
    static constexpr std::string_view kSignals[] = {"SIGUSR1", "SIGUSR2", "SIGINT",
                                                    "SIGTERM", "SIGHUP",  "SIGQUIT"};
    if (std::find(std::begin(kSignals), std::end(kSignals), arg) == std::end(kSignals)) {
      return bad("names a signal that is not one of SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGHUP, "
                 "SIGQUIT");
    }
    return absl::OkStatus();
  }
  return bad("is not one of them");
}

absl::StatusOr<model::RuleConfiguration> ParseRuleFlag(std::string_view flag) {
  model::RuleConfiguration config;
  const size_t colon = flag.find(':');
  config.rule = Trim(flag.substr(0, colon));
  if (config.rule.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--rule \"%s\": give a rule name first, e.g. --rule LowGPUUtilization:threshold_p95=60 "
        "(trainwatch rules list shows them)",
        flag));
  }
  if (colon != std::string_view::npos) {
    std::string_view rest = flag.substr(colon + 1);
    // Split on commas that start a new "key=".
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == ',' && StartsWithKey(rest.substr(i + 1))) {
        parts.push_back(rest.substr(start, i - start));
        start = i + 1;
      }
    }
    parts.push_back(rest.substr(start));
    for (std::string_view part : parts) {
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--rule \"%s\": \"%s\" is not param=value; write --rule %s:param=value,param=value",
            flag, part, config.rule));
      }
      std::string key = Trim(part.substr(0, eq));
      std::string value(part.substr(eq + 1));
      if (key == "name") {
        config.name = Trim(value);
      } else if (key == "action") {
        config.actions.push_back(Trim(value));
      } else if (!config.parameters.emplace(key, value).second) {
        return absl::InvalidArgumentError(
            absl::StrFormat("--rule \"%s\": parameter %s is given twice", flag, key));
      }
    }
  }
  return config;
}

absl::StatusOr<std::vector<model::RuleConfiguration>> ParseRuleConfigurations(
    const nlohmann::json& j, std::string_view where) {
  std::vector<const nlohmann::json*> lists;
  if (j.is_array()) {
    lists.push_back(&j);
  } else if (j.is_object()) {
    for (const char* key : {"ProfilerRuleConfigurations", "DebugRuleConfigurations"}) {
      if (j.contains(key)) {
        if (!j[key].is_array()) {
          return absl::InvalidArgumentError(absl::StrFormat("%s: %s must be a list", where, key));
        }
        lists.push_back(&j[key]);
      }
    }
    if (lists.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: expected a list of rule configurations, or an object with "
          "DebugRuleConfigurations / ProfilerRuleConfigurations",
          where));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected a JSON list of rule configurations", where));
  }
  std::vector<model::RuleConfiguration> out;
  for (const nlohmann::json* list : lists) {
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json& item = (*list)[i];
      const std::string at = absl::StrFormat("%s: rule configuration %d", where, out.size() + 1);
      if (!item.is_object()) return absl::InvalidArgumentError(at + " must be an object");
      model::RuleConfiguration config;
      if (item.contains("RuleConfigurationName")) {
        if (!item["RuleConfigurationName"].is_string()) {
          return absl::InvalidArgumentError(at + ": RuleConfigurationName must be a string");
        }
        config.name = item["RuleConfigurationName"].get<std::string>();
      }
      const nlohmann::json params =
          item.contains("RuleParameters") ? item["RuleParameters"] : nlohmann::json::object();
      if (!params.is_object()) {
        return absl::InvalidArgumentError(at + ": RuleParameters must be an object of strings");
      }
      for (const auto& [key, value] : params.items()) {
        if (!value.is_string()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: RuleParameters.%s must be a string (SageMaker's parameters are all strings, "
              "e.g. \"%s\")",
              at, key, value.dump()));
        }
        const std::string v = value.get<std::string>();
        if (key == "rule_to_invoke") {
          config.rule = v;
        } else if (key == "action") {
          config.actions.push_back(Trim(v));
        } else if (key == "action_json") {
          nlohmann::json actions = nlohmann::json::parse(v, nullptr, false);
          if (!actions.is_array() && !actions.is_object()) {
            return absl::InvalidArgumentError(at + ": action_json must be a JSON list of actions");
          }
          if (actions.is_object()) actions = nlohmann::json::array({actions});
          for (const nlohmann::json& a : actions) {
            const std::string name =
                a.is_object() && a.contains("name") && a["name"].is_string()
                    ? absl::AsciiStrToLower(a["name"].get<std::string>())
                    : "";
            if (name == "stoptraining") {
              config.actions.push_back("StopTraining");
            } else {
              return absl::InvalidArgumentError(absl::StrFormat(
                  "%s: action_json action \"%s\" is not supported (trainwatch sends no email or "
                  "SMS); use action=webhook:URL or action=exec:PROGRAM",
                  at, name));
            }
          }
        } else {
          config.parameters[key] = v;
        }
      }
      if (config.rule.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: RuleParameters.rule_to_invoke is missing; name the built-in rule, e.g. "
            "{\"rule_to_invoke\": \"LossNotDecreasing\"}",
            at));
      }
      out.push_back(std::move(config));
    }
  }
  return out;
}

std::vector<model::RuleConfiguration> DefaultRuleConfigurations() {
  std::vector<model::RuleConfiguration> out;
  for (const RuleInfo& info : BuiltinRules()) {
    if (info.in_default_set) out.push_back({std::string(info.name), std::string(info.name), {}, {}});
  }
  return out;
}

std::string DefaultStepMetric(const std::vector<model::MetricDefinition>& definitions) {
  for (const char* name : {"step", "train:step", "global_step"}) {
    for (const model::MetricDefinition& d : definitions) {
      if (d.name == name) return name;
    }
  }
  return "";
}

absl::StatusOr<Profile> ParseProfile(std::string_view name) {
  if (name.empty() || name == ProfileName(Profile::kDefault)) return Profile::kDefault;
  if (name == ProfileName(Profile::kSageMakerCompat)) return Profile::kSageMakerCompat;
  return absl::InvalidArgumentError(absl::StrFormat(
      "rules profile \"%s\" is not one; choose default (trainwatch's defaults, windows in "
      "seconds) or sagemaker_compat (SageMaker's shipped defaults, first issue ends the rule)",
      name));
}

absl::Status ValidateRuleConfigurations(std::vector<model::RuleConfiguration>* configs,
                                        Profile profile) {
  std::set<std::string> names;
  for (model::RuleConfiguration& config : *configs) {
    absl::StatusOr<std::unique_ptr<Rule>> rule =
        MakeRule(config.rule, config.parameters, profile);
    if (!rule.ok()) return absl::InvalidArgumentError(rule.status().message());
    const RuleInfo* info = FindRule(config.rule);
    config.rule = std::string(info->name);  // the canonical spelling
    if (config.name.empty()) {
      config.name = config.rule;
      for (int n = 2; names.count(config.name) > 0; ++n) {
        config.name = absl::StrFormat("%s-%d", config.rule, n);
      }
    }
    if (config.name.size() > 256) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rule configuration name \"%s...\" is longer than 256 characters", config.name.substr(0, 40)));
    }
    if (!names.insert(config.name).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "two rule configurations are named \"%s\"; give each its own name (name=...)",
          config.name));
    }
    // SageMaker's StalledTrainingRule has its own stop switch.
    auto stop = config.parameters.find("stop_training_on_fire");
    bool stop_on_fire = false;
    if (stop != config.parameters.end() && absl::SimpleAtob(stop->second, &stop_on_fire) &&
        stop_on_fire &&
        std::find(config.actions.begin(), config.actions.end(), "StopTraining") ==
            config.actions.end()) {
      config.actions.push_back("StopTraining");
    }
    for (const std::string& action : config.actions) {
      absl::Status s = ValidateAction(action);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("rule %s: %s", config.name, s.message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::rules
