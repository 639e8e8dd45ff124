#pragma once
// Helpers the log_rules_*.cc files share (not part of the rules' interface).

#include <cstdint>
#include <string>
#include <string_view>

#include "rules/rule.h"

namespace trainwatch::rules::log_internal {

// Guards divisions by a value that may be zero (a loss of exactly 0).
inline constexpr double kEpsilon = 1e-12;

// A number as a person reads it: up to 6 significant digits ("0.02", "1800").
std::string Num(double v);

// " at step 17", or "" when the step is unknown (-1).
std::string AtStep(int64_t step);

// "45 s", "1860 s (31 min)", "9000 s (2.5 h)".
std::string Seconds(double seconds);

// A finite value of the metric `name` (kNonFinite inputs are ExplodingTensor's).
inline bool IsValueOf(const Input& in, std::string_view name) {
  return in.signal == Signal::kMetric && in.name == name;
}

// NoDataFinding about a metric the job never produced.
Finding MetricNoData(std::string_view metric, std::string_view rule_needs, int64_t t_ms);

}  // namespace trainwatch::rules::log_internal
