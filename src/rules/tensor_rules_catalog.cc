// The tensor rules' catalog entries (rules/catalog.h): names, parameters,
// defaults and the checks of parameters taken together.
#include "rules/tensor_rules.h"

#include <memory>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "rules/catalog.h"
#include "rules/tensor_rules_internal.h"

namespace trainwatch::rules {

using tensor_internal::kNoMax;
using tensor_internal::WithSelection;

namespace {

// token_values and token_thresholds_percent, paired by position.
absl::StatusOr<std::vector<std::pair<int, double>>> ParseTokenThresholds(const ParamValues& v) {
  std::vector<std::string> tokens = absl::StrSplit(v.String("token_values"), ',',
                                                   absl::SkipWhitespace());
  std::vector<std::string> percents = absl::StrSplit(v.String("token_thresholds_percent"), ',',
                                                     absl::SkipWhitespace());
  if (tokens.empty() || tokens.size() != percents.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rule NLPSequenceRatio pairs token_values with token_thresholds_percent by position: "
        "got %d token ids (\"%s\") and %d percents (\"%s\"); give one percent per token id, "
        "e.g. token_values=0,1 token_thresholds_percent=50,10",
        tokens.size(), v.String("token_values"), percents.size(),
        v.String("token_thresholds_percent")));
  }
  std::vector<std::pair<int, double>> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int token;
    double percent;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(tokens[i]), &token) || token < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rule NLPSequenceRatio: token_values item %d, \"%s\", is not a token id (an integer "
          "from 0)",
          i + 1, tokens[i]));
    }
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(percents[i]), &percent) ||
        !(percent >= 0 && percent <= 100)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rule NLPSequenceRatio: token_thresholds_percent item %d, \"%s\", is not a percent "
          "from 0 to 100",
          i + 1, percents[i]));
    }
    out.emplace_back(token, percent);
  }
  return out;
}

}  // namespace

std::vector<RuleInfo> TensorRuleInfos() {
  std::vector<RuleInfo> out;
  out.push_back(RuleInfo{
      .name = "VanishingGradient",
      .family = RuleFamily::kDebug,
      .summary = "a gradient's mean |g| fell below the threshold (the layers before it stop "
                 "learning)",
      .watches = "abs_mean of the tensors of collection gradients (trainwatch.torch.watch)",
      .params = WithSelection({{"threshold", ParamType::kNumber, "1e-7", "", 0, kNoMax,
                                 "mean |g| below this is vanishing"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        VanishingGradientParams p{MakeTensorSelection(v, "gradients"), v.Number("threshold")};
        return std::make_unique<PureRule<VanishingGradientParams, VanishingGradientState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "DeadRelu",
      .family = RuleFamily::kDebug,
      .summary = "most units of a ReLU layer are dead (never positive)",
      .watches = "dead_fraction of ReLU outputs (trainwatch.torch.watch, collection activations)",
      .params = WithSelection({{"threshold_layer", ParamType::kNumber, "50", "", 0, 100,
                                 "percent of a layer's units dead for an issue"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        UnitActivityParams p{MakeTensorSelection(v, ""), TensorStat::kDeadFraction,
                             v.Number("threshold_layer")};
        return std::make_unique<PureRule<UnitActivityParams, UnitActivityState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "SaturatedActivation",
      .family = RuleFamily::kDebug,
      .summary = "most units of a tanh/sigmoid layer sit in the flat regions",
      .watches = "saturated_fraction of tanh/sigmoid inputs (trainwatch.torch.watch)",
      .params = WithSelection({{"threshold_layer", ParamType::kNumber, "50", "", 0, 100,
                                 "percent of a layer's units saturated for an issue"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        UnitActivityParams p{MakeTensorSelection(v, ""), TensorStat::kSaturatedFraction,
                             v.Number("threshold_layer")};
        return std::make_unique<PureRule<UnitActivityParams, UnitActivityState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "TensorVariance",
      .family = RuleFamily::kDebug,
      .summary = "a tensor's variance is above max_threshold or below min_threshold",
      .watches = "variance of the selected tensors (trainwatch.torch.watch)",
      .params = WithSelection({{"max_threshold", ParamType::kNumber, "", "", 0, kNoMax,
                                 "variance above this is an issue (set this or min_threshold)"},
                                {"min_threshold", ParamType::kNumber, "", "", 0, kNoMax,
                                 "variance below this is an issue"}}),
      .check = [](const ParamValues& v) -> absl::Status {
        if (v.Has("max_threshold") || v.Has("min_threshold")) return absl::OkStatus();
        return absl::InvalidArgumentError(
            "rule TensorVariance needs max_threshold or min_threshold (e.g. max_threshold=10, "
            "min_threshold=1e-5): with neither it can never find anything");
      },
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        TensorVarianceParams p;
        p.selection = MakeTensorSelection(v, "");
        if (v.Has("max_threshold")) p.max_threshold = v.Number("max_threshold");
        if (v.Has("min_threshold")) p.min_threshold = v.Number("min_threshold");
        return std::make_unique<PureRule<TensorVarianceParams, TensorVarianceState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "UnchangedTensor",
      .family = RuleFamily::kDebug,
      .summary = "a weight stopped changing over num_steps saved steps",
      .watches = "norm and update_norm of the weights at each optimizer step "
                 "(trainwatch.torch.watch with the optimizer)",
      .params = WithSelection({{"num_steps", ParamType::kInteger, "3", "", 2, kNoMax,
                                 "saved steps over which the weight did not change"},
                                {"rtol", ParamType::kNumber, "1e-5", "", 0, kNoMax,
                                 "relative tolerance (of ||W||)"},
                                {"atol", ParamType::kNumber, "1e-8", "", 0, kNoMax,
                                 "absolute tolerance"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        UnchangedTensorParams p{MakeTensorSelection(v, "weights"), v.Integer("num_steps"),
                                v.Number("rtol"), v.Number("atol")};
        return std::make_unique<PureRule<UnchangedTensorParams, UnchangedTensorState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "WeightUpdateRatio",
      .family = RuleFamily::kDebug,
      .summary = "a weight's update is too large or too small for its size",
      .watches = "update_ratio of the weights at each optimizer step (trainwatch.torch.watch "
                 "with the optimizer)",
      .params = WithSelection({{"large_threshold", ParamType::kNumber, "10", "", 0, kNoMax,
                                 "||dW||/||W|| above this is an issue"},
                                {"small_threshold", ParamType::kNumber, "1e-8", "", 0, kNoMax,
                                 "||dW||/||W|| below this is an issue"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        WeightUpdateRatioParams p;
        p.selection = MakeTensorSelection(v, "weights");
        p.large_threshold = v.Number("large_threshold");
        p.small_threshold = v.Number("small_threshold");
        return std::make_unique<PureRule<WeightUpdateRatioParams, WeightUpdateRatioState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "AllZero",
      .family = RuleFamily::kDebug,
      .summary = "a tensor is all (or mostly) zeros",
      .watches = "zeros and count of the selected tensors (trainwatch.torch.watch)",
      .params = WithSelection({{"threshold", ParamType::kNumber, "100", "", 0, 100,
                                 "percent of zero values for an issue"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        AllZeroParams p{MakeTensorSelection(v, ""), v.Number("threshold")};
        return std::make_unique<PureRule<AllZeroParams, AllZeroState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "PoorWeightInitialization",
      .family = RuleFamily::kDebug,
      .summary = "at the first steps: layers' activation inputs of very different variance, "
                 "gradients of almost no spread, or a loss that does not fall",
      .watches = "variance of the activation inputs, p5/p95 of the gradients and the recorded "
                 "loss at the first steps (trainwatch.torch.watch)",
      .params = {{"activation_inputs_regex", ParamType::kRegex, ":input$", "", 0, 0,
                  "the activation inputs compared (collection activations; the hook names a "
                  "module's input <module>:input)"},
                 {"threshold", ParamType::kNumber, "10", "", 1, kNoMax,
                  "largest over smallest variance of the layers' activation inputs"},
                 {"distribution_range", ParamType::kNumber, "0.001", "", 0, kNoMax,
                  "a gradient's p95 - p5 below this is an issue"},
                 {"patience", ParamType::kInteger, "5", "", 1, kNoMax,
                  "saved steps without a lower loss"},
                 {"steps", ParamType::kInteger, "10", "", 1, kNoMax,
                  "the first saved steps judged"}},
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        PoorWeightInitializationParams p;
        p.activation_inputs_text = v.String("activation_inputs_regex");
        p.activation_inputs =
            std::make_shared<const std::regex>(p.activation_inputs_text, std::regex::ECMAScript);
        p.threshold = v.Number("threshold");
        p.distribution_range = v.Number("distribution_range");
        p.patience = v.Integer("patience");
        p.steps = v.Integer("steps");
        return std::make_unique<
            PureRule<PoorWeightInitializationParams, PoorWeightInitializationState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "CheckInputImages",
      .family = RuleFamily::kDebug,
      .summary = "image inputs are not normalised: a channel's mean is far from 0",
      .watches = "channel_mean and samples of 4-D image inputs (trainwatch.torch.watch, "
                 "collection inputs)",
      .params = WithSelection({{"threshold_mean", ParamType::kNumber, "0.2", "", 0, kNoMax,
                                 "a channel's |mean| above this is an issue"},
                                {"threshold_samples", ParamType::kInteger, "500", "", 1, kNoMax,
                                 "images seen before the means are judged"}}),
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        CheckInputImagesParams p{MakeTensorSelection(v, ""), v.Number("threshold_mean"),
                                 static_cast<double>(v.Integer("threshold_samples"))};
        return std::make_unique<PureRule<CheckInputImagesParams, CheckInputImagesState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "NLPSequenceRatio",
      .family = RuleFamily::kDebug,
      .summary = "too many of the tokens of a step's sequences are one token id (padding, "
                 "unknown)",
      .watches = "token_fraction of the inputs of embedding layers (trainwatch.torch.watch, "
                 "collection inputs, token_values=)",
      .params = WithSelection(
          {{"token_values", ParamType::kString, "0", "", 0, 0,
            "comma-separated token ids (the hook counts its token_values)"},
           {"token_thresholds_percent", ParamType::kString, "50", "", 0, 0,
            "comma-separated percents, one per token id (paired by position)"}}),
      .check = [](const ParamValues& v) -> absl::Status {
        return ParseTokenThresholds(v).status();
      },
      .make = [](const ParamValues& v) -> std::unique_ptr<Rule> {
        NLPSequenceRatioParams p{MakeTensorSelection(v, ""), *ParseTokenThresholds(v)};
        return std::make_unique<PureRule<NLPSequenceRatioParams, NLPSequenceRatioState>>(p);
      }});
  out.push_back(RuleInfo{
      .name = "SimilarAcrossRuns",
      .family = RuleFamily::kDebug,
      .summary = "this run's tensor statistics differ from another run's at the same step "
                 "(determinism checks)",
      .watches = "every statistic of the selected tensors (trainwatch.torch.watch), and the "
                 "same of the job other_trials",
      .params = WithSelection({{"other_trials", ParamType::kString, "", "", 0, 0,
                                 "the job to compare with (required)"},
                                {"rtol", ParamType::kNumber, "1e-5", "", 0, kNoMax,
                                 "relative tolerance (of the other job's value)"},
                                {"atol", ParamType::kNumber, "1e-8", "", 0, kNoMax,
                                 "absolute tolerance"}}),
      .check = [](const ParamValues& v) -> absl::Status {
        if (v.Has("other_trials") && !v.String("other_trials").empty()) return absl::OkStatus();
        return absl::InvalidArgumentError(
            "rule SimilarAcrossRuns needs other_trials=JOB, the job to compare with (e.g. "
            "--rule SimilarAcrossRuns:other_trials=mnist-seed-1)");
      },
      .make = nullptr,
      .make_in_environment = [](const ParamValues& v,
                                const RuleEnvironment& env) -> std::unique_ptr<Rule> {
        SimilarAcrossRunsParams p;
        p.selection = MakeTensorSelection(v, "");
        p.other = v.String("other_trials");
        p.rtol = v.Number("rtol");
        p.atol = v.Number("atol");
        p.loader = env.reference;
        return std::make_unique<PureRule<SimilarAcrossRunsParams, SimilarAcrossRunsState>>(p);
      }});
  return out;
}

}  // namespace trainwatch::rules
