#pragma once
// Rules over the metrics a job produces (extracted from its log lines or sent
// by the client) and over its output itself: spec/rules.md §5.8-§5.12, and the
// rules beyond Debugger. Each is a Params/State pair and its OnInput/OnEnd
// (rules/rule.h); LogRuleInfos() (rules/catalog.h) lists them.

#include <cstdint>
#include <string>
#include <vector>

#include "rules/params.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// ExplodingTensor (§5.2) over metrics: a match whose value is NaN or ±Inf
// (`loss: nan`) is an issue. The store refuses non-finite values, so the job
// reports such a match as a kNonFinite input instead of a datapoint.
struct ExplodingTensorParams {
  bool only_nan = false;             // ±Inf is not an issue
  std::vector<std::string> metrics;  // empty: every metric
};
struct ExplodingTensorState {
  bool saw_metric = false;
};
ExplodingTensorParams MakeExplodingTensorParams(const ParamValues& values);
Verdict OnInput(const ExplodingTensorParams& p, ExplodingTensorState& s, const Input& in);
Verdict OnEnd(const ExplodingTensorParams& p, ExplodingTensorState& s, int64_t end_ms);

// Finding for a rule that saw none of its input by the end of the job
// (spec/rules.md §4: never a silent NoIssuesFound).
Finding NoDataFinding(std::string_view what_was_missing, std::string_view recommendation,
                      int64_t t_ms);

}  // namespace trainwatch::rules
