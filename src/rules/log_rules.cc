#include "rules/log_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "rules/catalog.h"
#include "rules/log_rules_internal.h"

namespace trainwatch::rules {

namespace log_internal {

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

std::string AtStep(int64_t step) {
  return step >= 0 ? absl::StrFormat(" at step %d", step) : std::string();
}

std::string Seconds(double seconds) {
  if (seconds < 120) return Num(seconds) + " s";
  if (seconds < 7200) {
    return absl::StrFormat("%.0f s (%s min)", seconds, Num(std::round(seconds / 6) / 10));
  }
  return absl::StrFormat("%.0f s (%s h)", seconds, Num(std::round(seconds / 360) / 10));
}

Finding MetricNoData(std::string_view metric, std::string_view rule_needs, int64_t t_ms) {
  Finding f = NoDataFinding(absl::StrFormat("the job produced no metric named %s", metric),
                            absl::StrFormat("Define a metric (--metric NAME=REGEX) that extracts "
                                            "%s from the training output, or name the metric "
                                            "this rule should read.",
                                            rule_needs),
                            t_ms);
  f.subject = std::string(metric);
  return f;
}

}  // namespace log_internal

namespace {

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string name(part);
    absl::StripAsciiWhitespace(&name);
    out.push_back(std::move(name));
  }
  return out;
}

bool Watches(const std::vector<std::string>& metrics, std::string_view name) {
  return metrics.empty() || std::find(metrics.begin(), metrics.end(), name) != metrics.end();
}

std::string ValueText(double v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "+Inf" : "-Inf";
}

}  // namespace

Finding NoDataFinding(std::string_view what_was_missing, std::string_view recommendation,
                      int64_t t_ms) {
  Finding f;
  f.reason = "no_data";
  f.subject = "job";
  f.t_ms = t_ms;
  f.message = absl::StrFormat("No data: %s, so this rule could not check anything.",
                              what_was_missing);
  f.recommendation = std::string(recommendation);
  f.severity = Severity::kWarning;
  return f;
}

ExplodingTensorParams MakeExplodingTensorParams(const ParamValues& values) {
  ExplodingTensorParams p;
  p.only_nan = values.Bool("only_nan");
  p.metrics = SplitList(values.String("metrics"));
  p.tensors = MakeTensorSelection(values, "");
  return p;
}

namespace {

// A tensor's NaN or ±Inf elements at a step.
Verdict ExplodingTensorOnTensor(const ExplodingTensorParams& p, ExplodingTensorState& s,
                                const Input& in) {
  const auto stat = static_cast<TensorStat>(in.index);
  const bool nan = stat == TensorStat::kNan;
  if (!nan && stat != TensorStat::kPosInf && stat != TensorStat::kNegInf) {
    return Verdict::Pending();
  }
  if (!p.tensors.Selects(in)) return Verdict::Pending();
  s.saw_metric = true;
  if (in.value <= 0 || (p.only_nan && !nan)) return Verdict::Ok();
  Finding f;
  f.reason = nan ? "nan" : "infinite";
  f.subject = std::string(in.name);
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = in.value;
  f.threshold = 0;
  f.message = absl::StrFormat("%s (%s) had %s %s value%s%s.", in.name, in.collection,
                              log_internal::Num(in.value), nan ? "NaN" : stat == TensorStat::kPosInf ? "+Inf" : "-Inf",
                              in.value == 1 ? "" : "s", log_internal::AtStep(in.step));
  f.recommendation =
      "The values have diverged: lower the learning rate, clip gradients "
      "(torch.nn.utils.clip_grad_norm_), check the input data for NaN/Inf, or use a numerically "
      "stable loss (e.g. log-softmax with NLL).";
  return Verdict::Issue(std::move(f));
}

}  // namespace

Verdict OnInput(const ExplodingTensorParams& p, ExplodingTensorState& s, const Input& in) {
  if (in.signal == Signal::kTensor) return ExplodingTensorOnTensor(p, s, in);
  if (in.signal != Signal::kMetric && in.signal != Signal::kNonFinite) return Verdict::Pending();
  if (!Watches(p.metrics, in.name)) return Verdict::Pending();
  s.saw_metric = true;
  if (std::isfinite(in.value)) return Verdict::Ok();
  if (p.only_nan && !std::isnan(in.value)) return Verdict::Ok();
  Finding f;
  f.reason = std::isnan(in.value) ? "nan" : "infinite";
  f.subject = std::string(in.name);
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = in.value;
  f.threshold = 0;
  f.message = absl::StrFormat("%s was %s", in.name, ValueText(in.value));
  if (in.step >= 0) f.message += absl::StrFormat(" at step %d", in.step);
  f.message += ".";
  f.recommendation =
      "The values have diverged: lower the learning rate, clip gradients, check the input data "
      "for NaN/Inf, or use a numerically stable loss (e.g. log-softmax with NLL).";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const ExplodingTensorParams& p, ExplodingTensorState& s, int64_t end_ms) {
  if (!s.saw_metric) {
    return {Verdict::kOk,
            {NoDataFinding(p.metrics.empty() ? "the job produced no metric"
                                             : "the job produced none of the watched metrics",
                           "Define metrics (--metric NAME=REGEX) that match the training "
                           "output, or name the metrics to watch in metrics=.",
                           end_ms)}};
  }
  return Verdict::Ok();
}

std::vector<RuleInfo> LogRuleInfos() {
  std::vector<RuleInfo> out;
  out.push_back(RuleInfo{
      .name = "ExplodingTensor",
      .family = RuleFamily::kDebug,
      .summary = "a metric became NaN or infinite (the model diverged)",
      .watches = "every metric the job produces, including matches whose value is nan/inf, and "
                 "the NaN/Inf counts of its tensors (trainwatch.torch.watch)",
      .params = {{"only_nan", ParamType::kBool, "false", "", 0, 0,
                  "report NaN only, not +Inf/-Inf"},
                 {"metrics", ParamType::kString, "", "", 0, 0,
                  "comma-separated metric names to watch; empty: every metric"},
                 {"collection_names", ParamType::kString, "", "", 0, 0,
                  "comma-separated tensor collections to watch (trainwatch.torch.watch); "
                  "with tensor_regex empty too: every tensor"},
                 {"tensor_regex", ParamType::kRegex, "", "", 0, 0,
                  "watch the tensors whose name this regex finds"}},
      .in_default_set = true,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<ExplodingTensorParams, ExplodingTensorState>>(
            MakeExplodingTensorParams(v));
      }});
  out.push_back(RuleInfo{
      .name = "LossNotDecreasing",
      .family = RuleFamily::kDebug,
      .summary = "the loss stopped going down (or climbs away from its best)",
      .watches = "one loss metric (train:loss by default) and the step it was logged at",
      .params = {{"metric", ParamType::kString, "train:loss", "", 0, 0,
                  "the loss metric to watch (a metric name the job produces)"},
                 {"num_steps", ParamType::kInteger, "10", "", 1, 100000,
                  "steps between checks; each check compares with the newest value at least "
                  "this many steps older (the metric's values count as steps when the job "
                  "reports none)"},
                 {"diff_percent", ParamType::kNumber, "0.1", "", 0, 100,
                  "the least the loss must fall between checks, in percent of the older value"},
                 {"increase_threshold_percent", ParamType::kNumber, "5", "", 0, 100000,
                  "how far, in percent of its lowest value, the loss may rise before it counts "
                  "as diverging"}},
      .in_default_set = false,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<LossNotDecreasingParams, LossNotDecreasingState>>(
            MakeLossNotDecreasingParams(v));
      }});
  out.push_back(RuleInfo{
      .name = "Overfit",
      .family = RuleFamily::kDebug,
      .summary = "the validation loss pulls away from the training loss",
      .watches = "a training and a validation loss metric (train:loss, validation:loss)",
      .params = {{"train_metric", ParamType::kString, "train:loss", "", 0, 0,
                  "the training loss metric"},
                 {"validation_metric", ParamType::kString, "validation:loss", "", 0, 0,
                  "the validation loss metric; a run of its values after training values is one "
                  "evaluation round"},
                 {"start_step", ParamType::kInteger, "0", "", 0,
                  std::numeric_limits<double>::infinity(),
                  "judge only evaluation rounds from this step on"},
                 {"patience", ParamType::kInteger, "1", "", 1, 100000,
                  "evaluation rounds in a row above ratio_threshold before it fires"},
                 {"ratio_threshold", ParamType::kNumber, "0.1", "", 0, 1000,
                  "the most (validation - train) / train may be in a round (0.1: 10 % above)"}},
      .in_default_set = false,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<OverfitParams, OverfitState>>(MakeOverfitParams(v));
      }});
  out.push_back(RuleInfo{
      .name = "Overtraining",
      .family = RuleFamily::kDebug,
      .summary = "training goes on after the training or validation loss stopped improving",
      .watches = "a training and a validation loss metric (train:loss, validation:loss)",
      .params = {{"train_metric", ParamType::kString, "train:loss", "", 0, 0,
                  "the training loss metric"},
                 {"validation_metric", ParamType::kString, "validation:loss", "", 0, 0,
                  "the validation loss metric"},
                 {"patience_train", ParamType::kInteger, "5", "", 1, 100000,
                  "training loss values in a row without a new best before it fires"},
                 {"patience_validation", ParamType::kInteger, "10", "", 1, 100000,
                  "validation loss values in a row without a new best before it fires"},
                 {"delta", ParamType::kNumber, "0.01", "", 0,
                  std::numeric_limits<double>::infinity(),
                  "the least a value must be below the best so far to count as a new best "
                  "(in the loss's units)"}},
      .in_default_set = false,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<OvertrainingParams, OvertrainingState>>(
            MakeOvertrainingParams(v));
      }});
  out.push_back(RuleInfo{
      .name = "StalledTrainingRule",
      .family = RuleFamily::kDebug,
      .summary = "the job stopped producing anything (a hang)",
      .watches = "every log line, metric and step of the job, against the engine's clock",
      .params = {{"threshold", ParamType::kSeconds, "1800", "", 1, 7 * 86400,
                  "how long the job may print no line, metric or step before it counts as "
                  "stalled"},
                 {"stop_training_on_fire", ParamType::kBool, "false", "", 0, 0,
                  "stop the job when it fires (SageMaker's parameter; the engine acts on it)"},
                 {"training_job_name_prefix", ParamType::kString, "", "", 0, 0,
                  "SageMaker's name prefix of the job to stop; accepted for compatibility "
                  "(trainwatch stops the watched job by its ID)"}},
      .in_default_set = true,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<StalledTrainingParams, StalledTrainingState>>(
            MakeStalledTrainingParams(v));
      }});
  out.push_back(RuleInfo{
      .name = "LossSpike",
      .family = RuleFamily::kDebug,
      .summary = "the loss jumped far above its recent median (a bad batch, a learning-rate "
                 "jump)",
      .watches = "one loss metric (train:loss by default)",
      .params = {{"metric", ParamType::kString, "train:loss", "", 0, 0,
                  "the loss metric to watch (a metric name the job produces)"},
                 {"k", ParamType::kNumber, "3", "", 1, 1000,
                  "a spike is a value above k times the median of the last window values (for "
                  "a median <= 0: the median plus k times the values' spread)"},
                 {"window", ParamType::kInteger, "50", "", 3, 100000,
                  "how many previous values the running median covers"},
                 {"min_values", ParamType::kInteger, "20", "", 3, 100000,
                  "values needed before any is judged (at most window)"}},
      .in_default_set = false,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<LossSpikeParams, LossSpikeState>>(MakeLossSpikeParams(v));
      }});
  return out;
}

}  // namespace trainwatch::rules
