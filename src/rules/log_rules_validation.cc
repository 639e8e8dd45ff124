// Overfit (spec/rules.md §5.9) and Overtraining (§5.10): rules over a training
// and a validation metric.

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

OverfitParams MakeOverfitParams(const ParamValues& values) {
  OverfitParams p;
  p.train_metric = values.String("train_metric");
  p.validation_metric = values.String("validation_metric");
  p.start_step = values.Integer("start_step");
  p.patience = values.Integer("patience");
  p.ratio_threshold = values.Number("ratio_threshold");
  return p;
}

namespace {

// Judges the open evaluation round against the training values before it, and
// starts the next one.
Verdict CloseRound(const OverfitParams& p, OverfitState& s, int64_t t_ms) {
  const double mean_val = s.val_sum / static_cast<double>(s.val_count);
  const double mean_train = s.train_sum / static_cast<double>(s.train_count);
  const int64_t val_count = s.val_count;
  const int64_t train_count = s.train_count;
  s.val_sum = s.train_sum = 0;
  s.val_count = s.train_count = 0;
  if (s.round_step < p.start_step) return Verdict::Pending();
  ++s.rounds;
  const double r = (mean_val - mean_train) / std::max(std::abs(mean_train), kEpsilon);
  if (r <= p.ratio_threshold) {
    s.streak = 0;
    return Verdict::Ok();
  }
  ++s.streak;
  if (s.streak != p.patience) return Verdict::Ok();  // once per streak
  Finding f;
  f.reason = "overfit";
  f.subject = p.validation_metric;
  f.step = s.round_step;
  f.t_ms = t_ms;
  f.observed = r;
  f.threshold = p.ratio_threshold;
  f.message = absl::StrFormat(
      "%s averaged %s over the evaluation round%s (%d values), %s %% above %s's average %s "
      "before it (%d values): (validation - train) / train = %s, above ratio_threshold %s for %d "
      "round(s) in a row (patience %d).",
      p.validation_metric, Num(mean_val), AtStep(s.round_step), val_count, Num(100 * r),
      p.train_metric, Num(mean_train), train_count, Num(r), Num(p.ratio_threshold), s.streak,
      p.patience);
  f.recommendation =
      "The model fits the training data at the expense of unseen data: add regularisation "
      "(dropout, weight decay), augment or enlarge the data, or stop earlier and keep the "
      "checkpoint with the best validation loss.";
  return Verdict::Issue(std::move(f));
}

}  // namespace

Verdict OnInput(const OverfitParams& p, OverfitState& s, const Input& in) {
  if (IsValueOf(in, p.train_metric)) {
    s.saw_train = true;
    Verdict verdict = s.val_count > 0 ? CloseRound(p, s, in.t_ms) : Verdict::Pending();
    ++s.train_values;
    s.train_sum += in.value;
    ++s.train_count;
    return verdict;
  }
  if (IsValueOf(in, p.validation_metric)) {
    s.saw_validation = true;
    if (s.train_count == 0) return Verdict::Pending();  // no training values to compare with
    s.val_sum += in.value;
    ++s.val_count;
    s.round_step = in.step >= 0 ? in.step : s.train_values;
    return Verdict::Pending();
  }
  return Verdict::Pending();
}

Verdict OnEnd(const OverfitParams& p, OverfitState& s, int64_t end_ms) {
  Verdict verdict = s.val_count > 0 ? CloseRound(p, s, end_ms) : Verdict::Pending();
  if (verdict.kind == Verdict::kPending) verdict.kind = Verdict::kOk;
  if (!s.saw_train) {
    verdict.findings.push_back(MetricNoData(p.train_metric, "its training loss", end_ms));
  }
  if (!s.saw_validation) {
    verdict.findings.push_back(MetricNoData(p.validation_metric, "its validation loss", end_ms));
  }
  if (s.saw_train && s.saw_validation && s.rounds == 0) {
    Finding f = MetricNoData(p.validation_metric, "its validation loss", end_ms);
    f.message = absl::StrFormat(
        "No evaluation round (%s values after %s values) at or after start_step %d, so "
        "overfitting was never checked.",
        p.validation_metric, p.train_metric, p.start_step);
    f.recommendation = "Evaluate during training (not only before it), or lower start_step.";
    verdict.findings.push_back(std::move(f));
  }
  return verdict;
}

OvertrainingParams MakeOvertrainingParams(const ParamValues& values) {
  OvertrainingParams p;
  p.train_metric = values.String("train_metric");
  p.validation_metric = values.String("validation_metric");
  p.patience_train = values.Integer("patience_train");
  p.patience_validation = values.Integer("patience_validation");
  p.delta = values.Number("delta");
  return p;
}

namespace {

Verdict Track(const OvertrainingParams& p, OvertrainingState::Track& t, bool validation,
              const Input& in) {
  if (!t.seen || in.value < t.best - p.delta) {
    t.seen = true;
    t.best = in.value;
    t.best_step = in.step;
    t.since_best = 0;
    return Verdict::Ok();
  }
  ++t.since_best;
  const int64_t patience = validation ? p.patience_validation : p.patience_train;
  if (t.since_best != patience) return Verdict::Ok();  // once per plateau
  Finding f;
  f.reason = validation ? "validation_plateau" : "training_plateau";
  f.subject = std::string(in.name);
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = static_cast<double>(t.since_best);
  f.threshold = static_cast<double>(patience);
  f.message = absl::StrFormat(
      "%s has not improved on its best %s%s by more than delta %s for %d values in a row "
      "(%s %d); now %s%s.",
      in.name, Num(t.best), AtStep(t.best_step), Num(p.delta), t.since_best,
      validation ? "patience_validation" : "patience_train", patience, Num(in.value),
      AtStep(in.step));
  f.recommendation =
      validation ? "The validation loss has stopped improving: stop training and keep the best "
                   "checkpoint; more epochs are unlikely to help on unseen data."
                 : "The training loss has plateaued: stop training to save compute (early "
                   "stopping), or lower the learning rate to make further progress.";
  return Verdict::Issue(std::move(f));
}

}  // namespace

Verdict OnInput(const OvertrainingParams& p, OvertrainingState& s, const Input& in) {
  if (IsValueOf(in, p.train_metric)) return Track(p, s.train, false, in);
  if (IsValueOf(in, p.validation_metric)) return Track(p, s.validation, true, in);
  return Verdict::Pending();
}

Verdict OnEnd(const OvertrainingParams& p, OvertrainingState& s, int64_t end_ms) {
  Verdict verdict = Verdict::Ok();
  if (!s.train.seen) {
    verdict.findings.push_back(MetricNoData(p.train_metric, "its training loss", end_ms));
  }
  if (!s.validation.seen) {
    verdict.findings.push_back(MetricNoData(p.validation_metric, "its validation loss", end_ms));
  }
  return verdict;
}

}  // namespace trainwatch::rules
