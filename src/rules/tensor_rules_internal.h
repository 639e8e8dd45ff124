#pragma once
// What the files of the tensor rules share (tensor_rules.cc, the rules of a
// run's inputs and course, the catalog): not for use elsewhere.

#include <limits>
#include <string_view>
#include <vector>

#include "rules/params.h"
#include "rules/rule.h"
#include "rules/tensor_rules.h"

namespace trainwatch::rules::tensor_internal {

inline constexpr double kNoMax = std::numeric_limits<double>::infinity();

// Whether `in` is the statistic `stat` of a tensor.
bool IsStat(const Input& in, TensorStat stat);
// A finding about the input's tensor at its step.
Finding TensorFinding(std::string_view reason, const Input& in, double observed, double threshold);
// The "no data" warning of a rule that saw none of its tensors' `statistic`.
Verdict NoTensors(const TensorSelection& selection, std::string_view statistic, int64_t end_ms);
// The selection parameters every tensor rule takes, then the rule's own.
std::vector<ParamSpec> WithSelection(std::vector<ParamSpec> own);

}  // namespace trainwatch::rules::tensor_internal
