#include "rules/catalog.h"

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace trainwatch::rules {

std::string_view RuleFamilyName(RuleFamily family) {
  return family == RuleFamily::kProfiler ? "profiler" : "debug";
}

const std::vector<RuleInfo>& BuiltinRules() {
  static const std::vector<RuleInfo>* const rules = [] {
    auto* all = new std::vector<RuleInfo>(ProfilerRuleInfos());
    for (RuleInfo& info : LogRuleInfos()) all->push_back(std::move(info));
    for (RuleInfo& info : TensorRuleInfos()) all->push_back(std::move(info));
    for (RuleInfo& info : PredictionRuleInfos()) all->push_back(std::move(info));
    return all;
  }();
  return *rules;
}

const RuleInfo* FindRule(std::string_view name) {
  for (const RuleInfo& info : BuiltinRules()) {
    if (absl::EqualsIgnoreCase(absl::string_view(info.name.data(), info.name.size()),
                                absl::string_view(name.data(), name.size()))) {
      return &info;
    }
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<Rule>> MakeRule(std::string_view name,
                                               const std::map<std::string, std::string>& params,
                                               Profile profile,
                                               const RuleEnvironment& environment) {
  const RuleInfo* info = FindRule(name);
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const RuleInfo& r : BuiltinRules()) names.emplace_back(r.name);
    const std::vector<std::string> nearest = NearestFirst(name, names);
    return absl::NotFoundError(absl::StrFormat(
        "no built-in rule \"%s\"; did you mean \"%s\"? Rules: %s (trainwatch rules list "
        "describes each)",
        name, nearest.front(), absl::StrJoin(nearest, ", ")));
  }
  absl::StatusOr<ParamValues> values = ParseParams(info->name, info->params, params, profile);
  if (!values.ok()) return values.status();
  if (info->check) {
    if (absl::Status s = info->check(*values); !s.ok()) return s;
  }
  return info->make_in_environment ? info->make_in_environment(*values, environment)
                                   : info->make(*values);
}

}  // namespace trainwatch::rules
