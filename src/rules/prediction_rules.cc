#include "rules/prediction_rules.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "rules/catalog.h"
#include "rules/log_rules.h"
#include "rules/log_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::Num;

namespace {
constexpr double kNoMax = std::numeric_limits<double>::infinity();
}  // namespace

// -------------------------------------------------------------- ClassImbalance

namespace {

Verdict NoPredictions(int64_t end_ms) {
  Finding f = NoDataFinding(
      "the job logged no predictions",
      "Log each step's true and predicted classes with the Python client: "
      "run.log_predictions(labels, predictions) (docs/python.md).",
      end_ms);
  return {Verdict::kOk, {std::move(f)}};
}

// A finding about the step whose last input was `last`.
Finding PredictionFinding(std::string_view reason, const Input& last, std::string subject,
                          double observed, double threshold) {
  Finding f;
  f.reason = std::string(reason);
  f.subject = std::move(subject);
  f.step = last.step;
  f.t_ms = last.t_ms;
  f.observed = observed;
  f.threshold = threshold;
  return f;
}

Verdict JudgeClassBalance(const ClassImbalanceParams& p, ClassImbalanceState& s) {
  if (s.total < static_cast<double>(p.samples) || s.count.empty()) return Verdict::Pending();
  Verdict v = Verdict::Ok();
  auto issue = [&v](Finding f) {
    v.kind = Verdict::kIssue;
    v.findings.push_back(std::move(f));
  };
  auto [rarest, most] = std::minmax_element(
      s.count.begin(), s.count.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  const double ratio = most->second / rarest->second;
  if (ratio > p.threshold_imbalance && !s.imbalance_reported) {
    s.imbalance_reported = true;
    Finding f = PredictionFinding("imbalance", s.last, absl::StrFormat("class %d", rarest->first),
                                  ratio, p.threshold_imbalance);
    f.message = absl::StrFormat(
        "The classes are imbalanced: class %d has %s samples, class %d only %s (%s times fewer, "
        "limit %s)%s.",
        most->first, Num(most->second), rarest->first, Num(rarest->second), Num(ratio),
        Num(p.threshold_imbalance), AtStep(s.last.step));
    f.recommendation =
        "Balance the training data: resample (over-sample the rare classes, under-sample the "
        "frequent ones), weight the loss by class, or collect more samples of the rare classes.";
    issue(std::move(f));
  }
  for (const auto& [label, count] : s.count) {
    const double error = 1 - s.correct[label] / count;
    if (error <= p.threshold_misprediction || s.misprediction_reported[label]) continue;
    s.misprediction_reported[label] = true;
    Finding f = PredictionFinding("misprediction", s.last, absl::StrFormat("class %d", label),
                                  error, p.threshold_misprediction);
    f.message = absl::StrFormat(
        "Class %d is mispredicted %s%% of the time (limit %s%%)%s.", label, Num(100 * error),
        Num(100 * p.threshold_misprediction), AtStep(s.last.step));
    f.recommendation =
        "The model does not learn this class: check its labels, give it more samples or a "
        "larger weight in the loss.";
    issue(std::move(f));
  }
  return v;
}

}  // namespace

Verdict OnInput(const ClassImbalanceParams& p, ClassImbalanceState& s, const Input& in) {
  if (in.signal != Signal::kPrediction) return Verdict::Pending();
  s.seen = true;
  Verdict v = Verdict::Pending();
  if (s.step_t_ms >= 0 && in.t_ms != s.step_t_ms) v = JudgeClassBalance(p, s);  // the step ended
  s.step_t_ms = in.t_ms;
  s.last = in;
  s.last.name = {};
  s.last.collection = {};
  s.count[in.index] += in.value;
  if (in.index == in.predicted) s.correct[in.index] += in.value;
  s.total += in.value;
  return v;
}

Verdict OnEnd(const ClassImbalanceParams& p, ClassImbalanceState& s, int64_t end_ms) {
  if (!s.seen) return NoPredictions(end_ms);
  Verdict v = JudgeClassBalance(p, s);
  if (v.kind == Verdict::kPending) {
    Finding f = NoDataFinding(
        absl::StrFormat("the job logged %s samples, fewer than samples=%d", Num(s.total), p.samples),
        "Log more predictions, or lower samples=.", end_ms);
    return {Verdict::kOk, {std::move(f)}};
  }
  return v;
}

// ------------------------------------------------------------------- Confusion

namespace {

Verdict JudgeConfusion(const ConfusionParams& p, ConfusionState& s) {
  std::map<int, double> column;  // predicted class -> samples
  for (const auto& [cell, n] : s.matrix) column[cell.second] += n;
  Verdict v = Verdict::Ok();
  for (const auto& [predicted, total] : column) {
    if (total <= 0) continue;
    for (const auto& [cell, n] : s.matrix) {
      if (cell.second != predicted) continue;
      const double share = n / total;
      const bool diagonal = cell.first == predicted;
      if (diagonal ? share >= p.min_diag : share <= p.max_off_diag) continue;
      Finding f = PredictionFinding(diagonal ? "low_diagonal" : "high_off_diagonal", s.last,
                                    absl::StrFormat("class %d", predicted), share,
                                    diagonal ? p.min_diag : p.max_off_diag);
      f.message =
          diagonal
              ? absl::StrFormat("Of the samples predicted as class %d, only %s%% were class %d "
                                "(at least %s%% wanted)%s.",
                                predicted, Num(100 * share), predicted, Num(100 * p.min_diag),
                                AtStep(s.last.step))
              : absl::StrFormat("Of the samples predicted as class %d, %s%% were class %d (at "
                                "most %s%% wanted)%s.",
                                predicted, Num(100 * share), cell.first, Num(100 * p.max_off_diag),
                                AtStep(s.last.step));
      f.recommendation =
          "The model confuses these classes: look at their samples and labels, add samples that "
          "tell them apart, or weight them in the loss.";
      v.kind = Verdict::kIssue;
      v.findings.push_back(std::move(f));
    }
  }
  s.matrix.clear();
  return v;
}

}  // namespace

Verdict OnInput(const ConfusionParams& p, ConfusionState& s, const Input& in) {
  if (in.signal != Signal::kPrediction) return Verdict::Pending();
  s.seen = true;
  Verdict v = Verdict::Pending();
  if (s.step_t_ms >= 0 && in.t_ms != s.step_t_ms) v = JudgeConfusion(p, s);  // the step ended
  s.step_t_ms = in.t_ms;
  s.last = in;
  s.last.name = {};
  s.last.collection = {};
  s.matrix[{in.index, in.predicted}] += in.value;
  return v;
}

Verdict OnEnd(const ConfusionParams& p, ConfusionState& s, int64_t end_ms) {
  if (!s.seen) return NoPredictions(end_ms);
  return JudgeConfusion(p, s);
}
// --------------------------------------------------------------------- catalog

std::vector<RuleInfo> PredictionRuleInfos() {
  std::vector<RuleInfo> out;
  out.push_back(RuleInfo{
      .name = "ClassImbalance",
      .family = RuleFamily::kDebug,
      .summary = "the classes are imbalanced, or a class is mostly mispredicted",
      .watches = "true and predicted classes (run.log_predictions), accumulated",
      .params = {{"threshold_imbalance", ParamType::kNumber, "10", "", 1, kNoMax,
                  "most frequent class over the rarest above this is an issue"},
                 {"threshold_misprediction", ParamType::kNumber, "0.7", "", 0, 1,
                  "a class's share of wrong predictions above this is an issue"},
                 {"samples", ParamType::kInteger, "500", "", 1, kNoMax,
                  "samples seen before judging"}},
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        ClassImbalanceParams p{v.Number("threshold_imbalance"),
                               v.Number("threshold_misprediction"), v.Integer("samples")};
        return std::make_unique<PureRule<ClassImbalanceParams, ClassImbalanceState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "Confusion",
      .family = RuleFamily::kDebug,
      .summary = "a step's confusion matrix is far from diagonal",
      .watches = "true and predicted classes (run.log_predictions), per step",
      .params = {{"min_diag", ParamType::kNumber, "0.9", "", 0, 1,
                  "share of a predicted class that must be right"},
                 {"max_off_diag", ParamType::kNumber, "0.1", "", 0, 1,
                  "share of a predicted class that may be any one other class"}},
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        ConfusionParams p{v.Number("min_diag"), v.Number("max_off_diag")};
        return std::make_unique<PureRule<ConfusionParams, ConfusionState>>(p);
      }});
  return out;
}

}  // namespace trainwatch::rules
