#pragma once
// Inputs for the log rules' tests.

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "rules/rule.h"

namespace trainwatch::rules::testing {

// A metric value (kNonFinite when NaN or ±Inf), as the engine feeds it.
inline Input Metric(std::string_view name, double v, int64_t t_ms, int64_t step = -1) {
  Input in;
  in.signal = std::isfinite(v) ? Signal::kMetric : Signal::kNonFinite;
  in.name = name;
  in.value = v;
  in.t_ms = t_ms;
  in.step = step;
  return in;
}

inline Input Signalled(Signal signal, int64_t t_ms, double value = 0, int64_t step = -1) {
  Input in;
  in.signal = signal;
  in.t_ms = t_ms;
  in.value = value;
  in.step = step;
  return in;
}

// The findings of every verdict, in order.
inline std::vector<Finding> FindingsOf(const std::vector<Verdict>& verdicts) {
  std::vector<Finding> out;
  for (const Verdict& v : verdicts) out.insert(out.end(), v.findings.begin(), v.findings.end());
  return out;
}

}  // namespace trainwatch::rules::testing
