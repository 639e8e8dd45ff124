// MaxInitializationTime and StepOutlier: the rules over the job's steps
// (rules/profiler_rules.h).

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/log_rules.h"
#include "rules/profiler_rules.h"

namespace trainwatch::rules {

namespace {

using prof::Seconds;

constexpr std::string_view kDefineStep =
    "define a step metric so trainwatch sees the steps, e.g. --metric 'step=step (\\d+)'";

Finding NotStartedFinding(const MaxInitParams& p, int64_t elapsed_ms, int64_t t_ms) {
  Finding f;
  f.reason = "not_started";
  f.subject = "job";
  f.t_ms = t_ms;
  f.observed = static_cast<double>(elapsed_ms) / 1000;
  f.threshold = p.threshold_s;
  f.message = absl::StrFormat(
      "No training step was reported within %s of the job's first data (none after %s): the "
      "training loop has not started, or no step metric is defined.",
      Seconds(p.threshold_s), Seconds(f.observed));
  f.recommendation = absl::StrFormat(
      "Look in the job's log for what it does before training (downloading data, compiling, "
      "waiting for other hosts to join). If it is training, %s.",
      kDefineStep);
  return f;
}

}  // namespace

Verdict OnInput(const MaxInitParams& p, MaxInitState& s, const Input& in) {
  if (in.signal != Signal::kTick && !s.started) {
    s.started = true;
    s.first_ms = in.t_ms;
  }
  if (in.signal == Signal::kStep) {
    const bool first = !s.saw_step;
    s.saw_step = true;
    return first && !s.fired ? Verdict::Ok() : Verdict::Pending();
  }
  if (s.saw_step || s.fired || !s.started) return Verdict::Pending();
  const int64_t elapsed = in.t_ms - s.first_ms;
  if (static_cast<double>(elapsed) < p.threshold_s * 1000) return Verdict::Pending();
  s.fired = true;
  Finding f = NotStartedFinding(p, elapsed, in.t_ms);
  f.step = in.step;
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const MaxInitParams& p, MaxInitState& s, int64_t end_ms) {
  if (s.saw_step || s.fired) return Verdict::Ok();
  if (s.started && static_cast<double>(end_ms - s.first_ms) >= p.threshold_s * 1000) {
    s.fired = true;
    return Verdict::Issue(NotStartedFinding(p, end_ms - s.first_ms, end_ms));
  }
  std::string what(kDefineStep);
  what[0] = 'D';
  return {Verdict::kOk,
          {NoDataFinding("the job reported no training step", what + ".", end_ms)}};
}

namespace {

struct Outliers {
  int64_t count = 0;
  int64_t extreme_step = -1;
  double extreme = 0;
};

Finding StepFinding(const StepOutlierParams& p, int host, const Input& in, bool slow,
                    const Outliers& o, size_t n, double center, double spread) {
  Finding f;
  f.reason = slow ? "slow_steps" : "fast_steps";
  f.subject = "steps" + prof::OnHost(host);
  f.step = in.step >= 0 ? in.step : std::llround(in.value);
  f.t_ms = in.t_ms;
  f.observed = static_cast<double>(o.count);
  f.threshold = static_cast<double>(p.n_outliers);
  const double limit = slow ? center + p.stddev * spread : center - p.stddev * spread;
  const std::string how =
      p.compat ? absl::StrFormat("mean %s + %g x standard deviation %s", Seconds(center),
                                 p.stddev, Seconds(spread))
               : absl::StrFormat("median %s %s %g x robust spread %s", Seconds(center),
                                 slow ? "+" : "-", p.stddev, Seconds(spread));
  f.message = absl::StrFormat(
      "%d of the last %d steps%s were %s than %s per step (%s), more than %d; the %s took %s "
      "(step %d).",
      o.count, n, prof::OnHost(host), slow ? "slower" : "faster", Seconds(limit), how,
      p.n_outliers, slow ? "slowest" : "fastest", Seconds(o.extreme), o.extreme_step);
  f.recommendation =
      slow ? "Look at what happens at those steps: checkpoints, evaluation, garbage collection, "
             "data-loader stalls (too few workers, slow storage), or another process competing "
             "for the GPU or CPU. Slow steps at a regular period point to periodic work."
           : "Steps much faster than usual can mean skipped work: empty or truncated batches, an "
             "optimizer skipping updates after a NaN/Inf loss (mixed-precision loss scaling), or "
             "steps of another phase counted with the training steps.";
  return f;
}

}  // namespace

Verdict OnInput(const StepOutlierParams& p, StepOutlierState& s, const Input& in) {
  if (in.signal != Signal::kStep) return Verdict::Pending();
  s.saw_step = true;
  StepOutlierState::Host& h = s.hosts[in.host];
  const int64_t step = std::llround(in.value);
  if (h.first_step < 0 || step < h.last_step) {  // the first step, or a restart
    if (h.first_step < 0) h.first_step = step;
    h.last_step = step;
    h.last_ms = in.t_ms;
    return Verdict::Pending();
  }
  if (step == h.last_step) return Verdict::Pending();
  const double duration =
      static_cast<double>(in.t_ms - h.last_ms) / 1000 / static_cast<double>(step - h.last_step);
  h.last_step = step;
  h.last_ms = in.t_ms;
  if (step - h.first_step <= p.warmup_steps) return Verdict::Pending();
  h.sorted.Insert(duration, h.first_seq + h.durations.size());
  h.durations.emplace_back(step, duration);
  if (h.durations.size() > kMaxStepDurations) {
    h.sorted.Erase(h.durations.front().second, h.first_seq);
    h.durations.pop_front();
    ++h.first_seq;
  }
  const size_t n = h.durations.size();
  if (p.compat ? n <= static_cast<size_t>(p.min_steps) : n < static_cast<size_t>(p.min_steps)) {
    return Verdict::Pending();
  }
  if (!prof::Due(h.last_eval, in.t_ms)) return Verdict::Pending();

  double center = 0, spread = 0;
  Outliers slow, fast;
  if (p.compat) {
    for (const auto& [st, d] : h.durations) center += d;
    center /= static_cast<double>(n);
    for (const auto& [st, d] : h.durations) spread += (d - center) * (d - center);
    spread = std::sqrt(spread / static_cast<double>(n));  // population σ, as numpy
    const double hi = center + p.stddev * spread;
    for (const auto& [st, d] : h.durations) {
      if (d > hi) {
        ++slow.count;
        if (slow.extreme_step < 0 || d > slow.extreme) slow = {slow.count, st, d};
      }
    }
  } else {
    // Median and MAD from the ordered durations (O(log^2 n), every second).
    center = h.sorted.Quantile(0.5);
    // At least 1 % of the median: identical durations would otherwise make
    // every change an outlier.
    spread = std::max(1.4826 * h.sorted.QuantileOfDeviations(center, 0.5), 0.01 * center);
    const double hi = center + p.stddev * spread;
    const double lo = center - p.stddev * spread;
    // The extreme of each side is the first (oldest) step with that duration.
    auto step_of = [&](uint64_t seq) { return h.durations[seq - h.first_seq].first; };
    slow.count = static_cast<int64_t>(n - h.sorted.CountAtMost(hi));
    if (slow.count > 0) {
      const double max = h.sorted.Select(n - 1).first;
      const auto first_max = h.sorted.Select(h.sorted.CountLess(max));
      slow.extreme = max;
      slow.extreme_step = step_of(first_max.second);
    }
    fast.count = static_cast<int64_t>(h.sorted.CountLess(lo));
    if (fast.count > 0) {
      const auto min = h.sorted.Select(0);
      fast.extreme = min.first;
      fast.extreme_step = step_of(min.second);
    }
  }
  std::vector<Finding> findings;
  const bool slow_now = slow.count > p.n_outliers;
  const bool fast_now = fast.count > p.n_outliers;
  if (slow_now && !h.firing_slow) {
    findings.push_back(StepFinding(p, in.host, in, true, slow, n, center, spread));
  }
  if (fast_now && !h.firing_fast) {
    findings.push_back(StepFinding(p, in.host, in, false, fast, n, center, spread));
  }
  h.firing_slow = slow_now;
  h.firing_fast = fast_now;
  return prof::MakeVerdict(true, std::move(findings));
}

Verdict OnEnd(const StepOutlierParams&, StepOutlierState& s, int64_t end_ms) {
  if (!s.saw_step) {
    std::string what(kDefineStep);
    what[0] = 'D';
    return {Verdict::kOk,
            {NoDataFinding("the job reported no training step", what + ".", end_ms)}};
  }
  return Verdict::Ok();
}

}  // namespace trainwatch::rules
