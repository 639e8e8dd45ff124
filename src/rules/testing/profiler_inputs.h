#pragma once
// Synthetic inputs for the profiler rules' tests (not linked into the product).

#include <cstdint>
#include <vector>

#include "rules/rule.h"

namespace trainwatch::rules::testing {

inline Input In(Signal signal, int64_t t_ms, double value, int index = -1, int host = 1) {
  Input in;
  in.signal = signal;
  in.t_ms = t_ms;
  in.value = value;
  in.index = index;
  in.host = host;
  return in;
}
inline Input Tick(int64_t t_ms) { return In(Signal::kTick, t_ms, 0); }
inline Input StepAt(int64_t step, int64_t t_ms, int host = 1) {
  Input in = In(Signal::kStep, t_ms, static_cast<double>(step), -1, host);
  in.step = step;
  return in;
}

// Feeds the inputs in order; returns every finding the rule reported.
template <class P, class S>
std::vector<Finding> Feed(const P& p, S& s, const std::vector<Input>& inputs) {
  std::vector<Finding> out;
  for (const Input& in : inputs) {
    Verdict v = OnInput(p, s, in);
    for (Finding& f : v.findings) out.push_back(std::move(f));
  }
  return out;
}

// Feeds the inputs, then ends the job at `end_ms`; every finding.
template <class P, class S>
std::vector<Finding> FeedAndEnd(const P& p, S& s, const std::vector<Input>& inputs,
                                int64_t end_ms) {
  std::vector<Finding> out = Feed(p, s, inputs);
  Verdict v = OnEnd(p, s, end_ms);
  for (Finding& f : v.findings) out.push_back(std::move(f));
  return out;
}

}  // namespace trainwatch::rules::testing
