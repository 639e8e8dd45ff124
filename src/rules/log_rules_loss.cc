// LossNotDecreasing (spec/rules.md §5.8) and LossSpike (beyond Debugger): rules
// over one loss metric's values.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/log_rules.h"
#include "rules/log_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::IsValueOf;
using log_internal::kEpsilon;
using log_internal::MetricNoData;
using log_internal::Num;

LossNotDecreasingParams MakeLossNotDecreasingParams(const ParamValues& values) {
  LossNotDecreasingParams p;
  p.metric = values.String("metric");
  p.num_steps = values.Integer("num_steps");
  p.diff_percent = values.Number("diff_percent");
  p.increase_threshold_percent = values.Number("increase_threshold_percent");
  return p;
}

namespace {

Finding NotDecreasing(const LossNotDecreasingParams& p, const LossNotDecreasingState::Point& ref,
                      int64_t step, double value, double improvement, int64_t t_ms) {
  Finding f;
  f.reason = "not_decreasing";
  f.subject = p.metric;
  f.step = step;
  f.t_ms = t_ms;
  f.observed = improvement;
  f.threshold = p.diff_percent;
  const std::string change = improvement > 0   ? absl::StrFormat("fell %s %%", Num(improvement))
                             : improvement < 0 ? absl::StrFormat("rose %s %%", Num(-improvement))
                                               : std::string("did not change");
  f.message = absl::StrFormat(
      "%s %s from step %d to step %d (needed a fall of at least %s %% every %d steps): %s -> %s.",
      p.metric, change, ref.step, step, Num(p.diff_percent), p.num_steps, Num(ref.value),
      Num(value));
  f.recommendation =
      "The loss has stopped improving: lower the learning rate or use a schedule, check that the "
      "data is shuffled and the labels are right, or stop training if the model has converged.";
  return f;
}

Finding Diverging(const LossNotDecreasingParams& p, const LossNotDecreasingState& s, int64_t step,
                  double value, double limit, int64_t t_ms) {
  Finding f;
  f.reason = "diverging";
  f.subject = p.metric;
  f.step = step;
  f.t_ms = t_ms;
  f.observed = value;
  f.threshold = limit;
  const double above = 100 * (value - s.min_value) / std::max(std::abs(s.min_value), kEpsilon);
  f.message = absl::StrFormat(
      "%s rose to %s at step %d, %s %% above its lowest value %s (step %d); the limit is %s %% "
      "above it (%s).",
      p.metric, Num(value), step, Num(above), Num(s.min_value), s.min_step,
      Num(p.increase_threshold_percent), Num(limit));
  f.recommendation =
      "The loss is climbing away from its best: lower the learning rate, clip gradients, or look "
      "for bad batches in the input data.";
  return f;
}

}  // namespace

Verdict OnInput(const LossNotDecreasingParams& p, LossNotDecreasingState& s, const Input& in) {
  if (!IsValueOf(in, p.metric)) return Verdict::Pending();
  // Without steps from the engine, the metric's datapoints are the steps.
  const int64_t step = in.step >= 0 ? in.step : s.datapoints;
  ++s.datapoints;
  if (!s.history.empty() && step < s.history.back().step) {
    // A restart from a checkpoint: compare only values of the new run.
    s.history.clear();
    s.last_check = -1;
    s.have_min = false;
    s.diverging = false;
  }
  const int64_t reach = step - p.num_steps;  // the reference is the newest step <= reach
  while (s.history.size() >= 2 && s.history[1].step <= reach) s.history.pop_front();

  Verdict verdict;
  if (!s.history.empty() && s.history.front().step <= reach &&
      (s.last_check < 0 || step >= s.last_check + p.num_steps)) {
    s.last_check = step;
    const LossNotDecreasingState::Point& ref = s.history.front();
    const double improvement =
        100 * (ref.value - in.value) / std::max(std::abs(ref.value), kEpsilon);
    if (improvement < p.diff_percent) {
      verdict.kind = Verdict::kIssue;
      verdict.findings.push_back(NotDecreasing(p, ref, step, in.value, improvement, in.t_ms));
    } else {
      verdict.kind = Verdict::kOk;
    }
  }
  if (s.have_min) {
    // |min| so that a negative loss's limit lies above it too.
    const double limit = s.min_value + std::abs(s.min_value) * p.increase_threshold_percent / 100;
    if (in.value > limit) {
      if (!s.diverging) {
        verdict.kind = Verdict::kIssue;
        verdict.findings.push_back(Diverging(p, s, step, in.value, limit, in.t_ms));
      }
      s.diverging = true;
    } else {
      s.diverging = false;
    }
  }
  if (!s.have_min || in.value < s.min_value) {
    s.have_min = true;
    s.min_value = in.value;
    s.min_step = step;
  }
  if (!s.history.empty() && s.history.back().step == step) {
    s.history.back().value = in.value;  // the newest value at a step stands for it
  } else {
    s.history.push_back({step, in.value});
  }
  return verdict;
}

Verdict OnEnd(const LossNotDecreasingParams& p, LossNotDecreasingState& s, int64_t end_ms) {
  if (s.datapoints == 0) {
    return {Verdict::kOk, {MetricNoData(p.metric, "its loss values", end_ms)}};
  }
  if (s.last_check < 0) {
    Finding f = MetricNoData(p.metric, "its loss values", end_ms);
    f.message = absl::StrFormat(
        "%s never spanned num_steps=%d steps (%d values), so its decrease was never checked.",
        p.metric, p.num_steps, s.datapoints);
    f.recommendation = "Run longer, log the loss more often, or lower num_steps.";
    return {Verdict::kOk, {std::move(f)}};
  }
  return Verdict::Ok();
}

LossSpikeParams MakeLossSpikeParams(const ParamValues& values) {
  LossSpikeParams p;
  p.metric = values.String("metric");
  p.k = values.Number("k");
  p.window = values.Integer("window");
  p.min_values = std::min(values.Integer("min_values"), p.window);
  return p;
}

namespace {

// The median of v (reordered). O(n).
double MedianOf(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace

Verdict OnInput(const LossSpikeParams& p, LossSpikeState& s, const Input& in) {
  if (!IsValueOf(in, p.metric)) return Verdict::Pending();
  s.saw_metric = true;
  Verdict verdict;
  const size_t n = s.ring.size();
  if (n >= static_cast<size_t>(p.min_values)) {
    s.scratch.assign(s.ring.begin(), s.ring.end());
    const double median = MedianOf(s.scratch);
    double limit = 0;
    double scale = 0;  // for a median <= 0 only
    bool judge = true;
    if (median > 0) {
      limit = p.k * median;
    } else {
      for (double& x : s.scratch) x = std::abs(x - median);
      scale = std::max(1.4826 * MedianOf(s.scratch), std::abs(median));
      judge = scale > 0;
      limit = median + p.k * scale;
    }
    s.judged = s.judged || judge;
    if (judge && in.value > limit) {
      if (!s.spiking) {
        Finding f;
        f.reason = "spike";
        f.subject = p.metric;
        f.step = in.step;
        f.t_ms = in.t_ms;
        f.observed = in.value;
        f.threshold = limit;
        if (median > 0) {
          f.message = absl::StrFormat(
              "%s jumped to %s%s: %s x the median %s of the previous %d values (limit %s x, %s).",
              p.metric, Num(in.value), AtStep(in.step), Num(in.value / median), Num(median), n,
              Num(p.k), Num(limit));
        } else {
          f.message = absl::StrFormat(
              "%s jumped to %s%s, above the limit %s: the median %s of the previous %d values "
              "plus %s x their spread %s.",
              p.metric, Num(in.value), AtStep(in.step), Num(limit), Num(median), n, Num(p.k),
              Num(scale));
        }
        f.recommendation =
            "A sudden loss spike usually means a bad batch, a learning rate too high (or a "
            "warm-up that ended) or numeric trouble: look at the data at that step, lower the "
            "learning rate or clip gradients.";
        verdict = Verdict::Issue(std::move(f));
      }
      s.spiking = true;
    } else {
      s.spiking = false;
      if (judge) verdict.kind = Verdict::kOk;
    }
  }
  if (n < static_cast<size_t>(p.window)) {
    s.ring.push_back(in.value);
  } else {
    s.ring[s.next] = in.value;
    s.next = (s.next + 1) % s.ring.size();
  }
  return verdict;
}

Verdict OnEnd(const LossSpikeParams& p, LossSpikeState& s, int64_t end_ms) {
  if (!s.saw_metric) {
    return {Verdict::kOk, {MetricNoData(p.metric, "its loss values", end_ms)}};
  }
  if (!s.judged) {
    Finding f = MetricNoData(p.metric, "its loss values", end_ms);
    f.message = absl::StrFormat(
        "%s never had min_values=%d earlier values to compare with (or they were all 0), so no "
        "value was judged for spikes.",
        p.metric, p.min_values);
    f.recommendation = "Log the loss more often, or lower min_values.";
    return {Verdict::kOk, {std::move(f)}};
  }
  return Verdict::Ok();
}

}  // namespace trainwatch::rules
