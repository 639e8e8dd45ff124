#include "rules/log_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "rules/catalog.h"

namespace trainwatch::rules {

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
  return p;
}

Verdict OnInput(const ExplodingTensorParams& p, ExplodingTensorState& s, const Input& in) {
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
      .watches = "every metric the job produces, including matches whose value is nan/inf",
      .params = {{"only_nan", ParamType::kBool, "false", "", 0, 0,
                  "report NaN only, not +Inf/-Inf"},
                 {"metrics", ParamType::kString, "", "", 0, 0,
                  "comma-separated metric names to watch; empty: every metric"}},
      .in_default_set = true,
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        return std::make_unique<PureRule<ExplodingTensorParams, ExplodingTensorState>>(
            MakeExplodingTensorParams(v));
      }});
  return out;
}

}  // namespace trainwatch::rules
