// The model rules over tensor statistics (rules/tensor_rules.h), fed as the
// engine feeds them: one kTensor input per tensor, statistic and step.
#include "rules/tensor_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "rules/catalog.h"
#include "rules/inputs.h"
#include "rules/log_rules.h"

namespace trainwatch::rules {
namespace {

using ::testing::HasSubstr;

Input Tensor(std::string_view name, std::string_view collection, TensorStat stat, double value,
             int64_t step) {
  Input in;
  in.signal = Signal::kTensor;
  in.name = name;
  in.collection = collection;
  in.index = static_cast<int>(stat);
  in.value = value;
  in.step = step;
  in.t_ms = 1000 * step;
  return in;
}

std::unique_ptr<Rule> Make(std::string_view name, std::map<std::string, std::string> params = {}) {
  absl::StatusOr<std::unique_ptr<Rule>> rule = MakeRule(name, params, Profile::kDefault);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return rule.ok() ? *std::move(rule) : nullptr;
}

TEST(TensorInputs, TheHooksSeriesBecomeTensorInputsOfTheirJob) {
  auto key = model::MakeSeriesKey(
      "trainwatch/Tensors", "abs_mean",
      {{"TrainingJobName", "j1"}, {"Tensor", "fc1.weight"}, {"Collection", "gradients"}}, "None");
  ASSERT_TRUE(key.ok());
  std::optional<OwnedInput> in = SeriesInput(*key);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->job, "j1");
  EXPECT_EQ(in->input.signal, Signal::kTensor);
  EXPECT_EQ(in->input.index, static_cast<int>(TensorStat::kAbsMean));
  EXPECT_EQ(in->AsInput().name, "fc1.weight");
  EXPECT_EQ(in->AsInput().collection, "gradients");
  auto unknown = model::MakeSeriesKey("trainwatch/Tensors", "kurtosis",
                                      {{"TrainingJobName", "j1"}, {"Tensor", "x"}}, "None");
  EXPECT_FALSE(SeriesInput(*unknown).has_value()) << "a statistic no rule knows is not read";
  for (int i = 0; i <= static_cast<int>(TensorStat::kTokenFraction); ++i) {
    const auto stat = static_cast<TensorStat>(i);
    EXPECT_EQ(ParseTensorStat(TensorStatName(stat)), stat) << TensorStatName(stat);
  }
}

TEST(VanishingGradient, ReadsGradientsOnlyAndNamesEveryVanishedTensor) {
  std::unique_ptr<Rule> rule = Make("VanishingGradient");
  EXPECT_EQ(rule->OnInput(Tensor("fc1.weight", "weights", TensorStat::kAbsMean, 0, 1)).kind,
            Verdict::kPending)
      << "weights are not gradients";
  EXPECT_EQ(rule->OnInput(Tensor("fc1.weight", "gradients", TensorStat::kAbsMean, 1e-3, 1)).kind,
            Verdict::kOk);
  Verdict v = rule->OnInput(Tensor("fc1.weight", "gradients", TensorStat::kAbsMean, 1e-9, 2));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].subject, "fc1.weight");
  EXPECT_EQ(v.findings[0].step, 2);
  EXPECT_THAT(v.findings[0].message, HasSubstr("fc1.weight vanished: mean |g| = 1e-09, below 1e-07 at step 2"));
  EXPECT_EQ(rule->OnInput(Tensor("fc2.weight", "gradients", TensorStat::kAbsMean, 0, 2)).kind,
            Verdict::kIssue);
  EXPECT_TRUE(rule->OnEnd(5000).findings.empty());
}

TEST(VanishingGradient, NoGradientsIsANoDataWarningNotASilentPass) {
  std::unique_ptr<Rule> rule = Make("VanishingGradient");
  Verdict end = rule->OnEnd(1000);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_THAT(end.findings[0].message, HasSubstr("no mean |g| of collection gradients"));
  EXPECT_THAT(end.findings[0].recommendation, HasSubstr("trainwatch.torch.watch"));
}

TEST(TensorSelection, CollectionsAndRegexSearchAnywhereInTheName) {
  std::unique_ptr<Rule> rule = Make("VanishingGradient", {{"tensor_regex", "conv[0-9]"}});
  EXPECT_EQ(rule->OnInput(Tensor("fc1.weight", "gradients", TensorStat::kAbsMean, 0, 1)).kind,
            Verdict::kPending);
  EXPECT_EQ(rule->OnInput(Tensor("features.conv2.weight", "gradients", TensorStat::kAbsMean, 0, 1)).kind,
            Verdict::kIssue);
  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("VanishingGradient", {{"tensor_regex", "conv[0-9"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("tensor_regex=\"conv[0-9\" is not a regular expression"));
}

TEST(ExplodingTensor, ATensorWithNanElementsIsAnIssueInfOnlyUnlessOnlyNan) {
  std::unique_ptr<Rule> rule = Make("ExplodingTensor");
  EXPECT_EQ(rule->OnInput(Tensor("fc1.weight", "gradients", TensorStat::kNan, 0, 1)).kind,
            Verdict::kOk);
  Verdict v = rule->OnInput(Tensor("fc1.weight", "gradients", TensorStat::kNan, 12, 3));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].reason, "nan");
  EXPECT_THAT(v.findings[0].message, HasSubstr("fc1.weight (gradients) had 12 NaN values at step 3"));
  std::unique_ptr<Rule> only_nan = Make("ExplodingTensor", {{"only_nan", "true"}});
  EXPECT_EQ(only_nan->OnInput(Tensor("x", "outputs", TensorStat::kPosInf, 1, 1)).kind, Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("x", "outputs", TensorStat::kNegInf, 1, 1)).kind, Verdict::kIssue);
  EXPECT_TRUE(rule->OnEnd(5000).findings.empty()) << "tensors count as data";
}

TEST(DeadRelu, MoreThanHalfTheUnitsDeadIsAnIssue) {
  std::unique_ptr<Rule> rule = Make("DeadRelu");
  EXPECT_EQ(rule->OnInput(Tensor("relu1", "activations", TensorStat::kDeadFraction, 0.5, 1)).kind,
            Verdict::kOk);
  Verdict v = rule->OnInput(Tensor("relu1", "activations", TensorStat::kDeadFraction, 1.0, 2));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].reason, "dead_relu");
  EXPECT_THAT(v.findings[0].message, HasSubstr("100% of the units of relu1 are dead"));
  EXPECT_EQ(rule->OnInput(Tensor("tanh1", "activations", TensorStat::kSaturatedFraction, 1, 2)).kind,
            Verdict::kPending);
}

TEST(SaturatedActivation, ReadsTheSaturatedShare) {
  std::unique_ptr<Rule> rule = Make("SaturatedActivation", {{"threshold_layer", "80"}});
  EXPECT_EQ(rule->OnInput(Tensor("tanh1", "activations", TensorStat::kSaturatedFraction, 0.7, 1)).kind,
            Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("tanh1", "activations", TensorStat::kSaturatedFraction, 0.9, 2)).kind,
            Verdict::kIssue);
}

TEST(TensorVariance, NeedsAThresholdAndFiresOutsideEither) {
  absl::StatusOr<std::unique_ptr<Rule>> none = MakeRule("TensorVariance", {}, Profile::kDefault);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("needs max_threshold or min_threshold"));
  std::unique_ptr<Rule> rule =
      Make("TensorVariance", {{"max_threshold", "10"}, {"min_threshold", "1e-5"}});
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kVariance, 1, 1)).kind, Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kVariance, 11, 2)).findings[0].reason,
            "variance_high");
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kVariance, 1e-6, 3)).findings[0].reason,
            "variance_low");
}

TEST(UnchangedTensor, AFrozenWeightFiresOnceAfterNumStepsSavesAndAgainAfterItMoved) {
  std::unique_ptr<Rule> rule = Make("UnchangedTensor");  // num_steps 3
  auto save = [&](double update, int64_t step) {
    rule->OnInput(Tensor("fc1.weight", "weights", TensorStat::kNorm, 2.0, step));
    return rule->OnInput(Tensor("fc1.weight", "weights", TensorStat::kUpdateNorm, update, step));
  };
  EXPECT_EQ(save(0, 1).kind, Verdict::kOk);
  Verdict v = save(0, 2);
  ASSERT_EQ(v.kind, Verdict::kIssue) << "values at steps 0, 1, 2 are equal";
  EXPECT_THAT(v.findings[0].message, HasSubstr("fc1.weight has not changed over the last 3 saved steps at step 2"));
  EXPECT_EQ(save(0, 3).kind, Verdict::kOk) << "once per streak";
  EXPECT_EQ(save(1e-3, 4).kind, Verdict::kOk) << "beyond 1e-8 + 1e-5 * ||W||: it moved";
  EXPECT_EQ(save(1e-5, 5).kind, Verdict::kOk) << "within 2.001e-5: unchanged, once";
  EXPECT_EQ(save(0, 6).kind, Verdict::kIssue) << "a new streak";
  std::unique_ptr<Rule> gradients_only = Make("UnchangedTensor");
  EXPECT_EQ(gradients_only->OnInput(Tensor("g", "gradients", TensorStat::kUpdateNorm, 0, 1)).kind,
            Verdict::kPending)
      << "reads weights by default";
}

TEST(WeightUpdateRatio, TooLargeAndTooSmall) {
  std::unique_ptr<Rule> rule = Make("WeightUpdateRatio");
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kUpdateRatio, 1e-3, 1)).kind,
            Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kUpdateRatio, 20, 2)).findings[0].reason,
            "update_too_large");
  EXPECT_EQ(rule->OnInput(Tensor("w", "weights", TensorStat::kUpdateRatio, 1e-9, 3)).findings[0].reason,
            "update_too_small");
}

TEST(AllZero, PairsZerosWithCountOfTheSameStep) {
  std::unique_ptr<Rule> rule = Make("AllZero", {{"threshold", "90"}});
  EXPECT_EQ(rule->OnInput(Tensor("x", "inputs", TensorStat::kCount, 100, 1)).kind, Verdict::kPending);
  EXPECT_EQ(rule->OnInput(Tensor("x", "inputs", TensorStat::kZeros, 50, 1)).kind, Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("x", "inputs", TensorStat::kZeros, 95, 2)).kind, Verdict::kPending)
      << "no count of step 2 yet";
  Verdict v = rule->OnInput(Tensor("x", "inputs", TensorStat::kCount, 100, 2));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_THAT(v.findings[0].message, HasSubstr("95% of the values of x are zero at step 2"));
}

Input Predicted(int label, int predicted, double n, int64_t step) {
  Input in;
  in.signal = Signal::kPrediction;
  in.index = label;
  in.predicted = predicted;
  in.value = n;
  in.step = step;
  in.t_ms = 1000 * step;
  return in;
}

TEST(PredictionInputs, TheClientsCountsBecomePredictionInputs) {
  auto key = model::MakeSeriesKey(
      "trainwatch/Predictions", "Count",
      {{"TrainingJobName", "j1"}, {"Label", "4"}, {"Predicted", "7"}}, "None");
  std::optional<OwnedInput> in = SeriesInput(*key);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->input.signal, Signal::kPrediction);
  EXPECT_EQ(in->input.index, 4);
  EXPECT_EQ(in->input.predicted, 7);
}

TEST(ClassImbalance, NineHundredNinetyToTenFiresWhenTheStepIsJudged) {
  std::unique_ptr<Rule> rule = Make("ClassImbalance");
  EXPECT_EQ(rule->OnInput(Predicted(0, 0, 990, 1)).kind, Verdict::kPending);
  EXPECT_EQ(rule->OnInput(Predicted(1, 1, 10, 1)).kind, Verdict::kPending);
  Verdict v = rule->OnInput(Predicted(0, 0, 1, 2));  // the next step: step 1 is judged
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].reason, "imbalance");
  EXPECT_EQ(v.findings[0].step, 1);
  EXPECT_THAT(v.findings[0].message, HasSubstr("class 0 has 990 samples, class 1 only 10 (99 times fewer"));
  EXPECT_EQ(rule->OnEnd(5000).kind, Verdict::kOk) << "reported once";
}

TEST(ClassImbalance, AMispredictedClassAndTooFewSamples) {
  std::unique_ptr<Rule> rule = Make("ClassImbalance", {{"samples", "100"}});
  rule->OnInput(Predicted(0, 0, 50, 1));
  rule->OnInput(Predicted(1, 0, 40, 1));
  rule->OnInput(Predicted(1, 1, 10, 1));
  Verdict end = rule->OnEnd(5000);
  ASSERT_EQ(end.kind, Verdict::kIssue);
  EXPECT_EQ(end.findings[0].reason, "misprediction");
  EXPECT_THAT(end.findings[0].message, HasSubstr("Class 1 is mispredicted 80% of the time"));
  std::unique_ptr<Rule> few = Make("ClassImbalance");
  few->OnInput(Predicted(0, 0, 5, 1));
  Verdict warn = few->OnEnd(5000);
  EXPECT_EQ(warn.kind, Verdict::kOk);
  EXPECT_THAT(warn.findings[0].message, HasSubstr("logged 5 samples, fewer than samples=500"));
  EXPECT_THAT(Make("ClassImbalance")->OnEnd(1).findings[0].recommendation,
              HasSubstr("run.log_predictions"));
}

TEST(Confusion, IdentityPassesOneConfusionOfTenFails) {
  std::unique_ptr<Rule> rule = Make("Confusion");
  for (int c = 0; c < 10; ++c) rule->OnInput(Predicted(c, c, 1, 1));
  EXPECT_EQ(rule->OnEnd(5000).kind, Verdict::kOk);
  std::unique_ptr<Rule> off = Make("Confusion");
  for (int c = 0; c < 9; ++c) off->OnInput(Predicted(c, c, 1, 1));
  off->OnInput(Predicted(4, 7, 1, 1));  // label 4 predicted as 7
  Verdict v = off->OnInput(Predicted(0, 0, 1, 2));  // step 1 judged
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].subject, "class 7");
  std::unique_ptr<Rule> strict = Make("Confusion", {{"min_diag", "0"}, {"max_off_diag", "0.01"}});
  for (int c = 0; c < 9; ++c) strict->OnInput(Predicted(c, c, 1, 1));
  strict->OnInput(Predicted(4, 7, 1, 1));
  EXPECT_EQ(strict->OnEnd(5000).kind, Verdict::kIssue);
}

Input Part(std::string_view name, TensorStat stat, int part, double value, int64_t step) {
  Input in = Tensor(name, "inputs", stat, value, step);
  in.part = part;
  return in;
}

TEST(TensorInputs, ARanksStatisticsCarryItsRank) {
  auto key = model::MakeSeriesKey("trainwatch/Tensors", "mean",
                                  {{"TrainingJobName", "j1"}, {"Tensor", "fc.weight"},
                                   {"Collection", "gradients"}, {"Rank", "3"}},
                                  "None");
  ASSERT_TRUE(key.ok());
  std::optional<OwnedInput> in = SeriesInput(*key);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->input.rank, 3);
}

TEST(TensorInputs, PerPartStatisticsCarryTheirChannelOrToken) {
  auto key = model::MakeSeriesKey("trainwatch/Tensors", "channel_mean",
                                  {{"TrainingJobName", "j1"}, {"Tensor", "model:input"},
                                   {"Collection", "inputs"}, {"Channel", "2"}},
                                  "None");
  ASSERT_TRUE(key.ok());
  std::optional<OwnedInput> in = SeriesInput(*key);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->input.index, static_cast<int>(TensorStat::kChannelMean));
  EXPECT_EQ(in->input.part, 2);
  auto no_part = model::MakeSeriesKey(
      "trainwatch/Tensors", "token_fraction",
      {{"TrainingJobName", "j1"}, {"Tensor", "embed:input"}, {"Collection", "inputs"}}, "None");
  EXPECT_FALSE(SeriesInput(*no_part).has_value()) << "a token share of no token says nothing";
}

TEST(PoorWeightInitialization, LayersOfVeryDifferentVarianceAtTheFirstSteps) {
  std::unique_ptr<Rule> rule = Make("PoorWeightInitialization");
  EXPECT_EQ(rule->OnInput(Tensor("1:input", "activations", TensorStat::kVariance, 1.0, 0)).kind,
            Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("1:output", "activations", TensorStat::kVariance, 900, 0)).kind,
            Verdict::kPending)
      << "outputs are not activation inputs";
  rule->OnInput(Tensor("3:input", "activations", TensorStat::kVariance, 50.0, 0));
  // The save is judged when the next one starts.
  Verdict v = rule->OnInput(Tensor("1:input", "activations", TensorStat::kVariance, 1.0, 1));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].reason, "activation_variance_ratio");
  EXPECT_EQ(v.findings[0].subject, "3:input");
  EXPECT_EQ(v.findings[0].observed, 50);
  EXPECT_THAT(v.findings[0].message, HasSubstr("differ in variance by 50 times across the layers at step 0 (3:input: 50, 1:input: 1"));
  Verdict end = rule->OnEnd(5000);
  EXPECT_EQ(end.kind, Verdict::kOk) << "reported once";
  std::vector<std::string> missing;
  for (const Finding& f : end.findings) missing.push_back(f.message);
  EXPECT_THAT(missing, ::testing::ElementsAre(HasSubstr("no p5 and p95 of the gradients"),
                                              HasSubstr("no loss (collection losses)")));
}

TEST(PoorWeightInitialization, OnlyTheFirstStepsAreJudged) {
  std::unique_ptr<Rule> rule = Make("PoorWeightInitialization", {{"steps", "2"}});
  for (int64_t step = 0; step < 2; ++step) {
    rule->OnInput(Tensor("1:input", "activations", TensorStat::kVariance, 1.0, step));
    rule->OnInput(Tensor("2:input", "activations", TensorStat::kVariance, 2.0, step));
  }
  rule->OnInput(Tensor("1:input", "activations", TensorStat::kVariance, 1.0, 2));
  EXPECT_EQ(rule->OnInput(Tensor("2:input", "activations", TensorStat::kVariance, 1e6, 2)).kind,
            Verdict::kPending);
  EXPECT_EQ(rule->OnEnd(5000).kind, Verdict::kOk) << "step 2 is past the window";
}

TEST(PoorWeightInitialization, NarrowGradientsAndAFlatLoss) {
  std::unique_ptr<Rule> rule = Make("PoorWeightInitialization", {{"patience", "2"}});
  rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kP5, -0.1, 0));
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kP95, 0.1, 0)).kind,
            Verdict::kOk);
  rule->OnInput(Tensor("fc.bias", "gradients", TensorStat::kP95, 1e-4, 0));
  EXPECT_EQ(rule->OnInput(Tensor("fc.bias", "gradients", TensorStat::kP5, 0, 0)).kind,
            Verdict::kPending)
      << "biases start at zero: their spread is not judged";
  rule->OnInput(Tensor("out.weight", "gradients", TensorStat::kP95, 1e-4, 0));
  Verdict narrow = rule->OnInput(Tensor("out.weight", "gradients", TensorStat::kP5, 0, 0));
  ASSERT_EQ(narrow.kind, Verdict::kIssue);
  EXPECT_EQ(narrow.findings[0].reason, "gradient_distribution_range");
  EXPECT_EQ(narrow.findings[0].subject, "out.weight");
  EXPECT_EQ(rule->OnInput(Tensor("loss", "losses", TensorStat::kMean, 2.0, 0)).kind, Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("loss", "losses", TensorStat::kMean, 2.0, 1)).kind,
            Verdict::kPending);
  Verdict flat = rule->OnInput(Tensor("loss", "losses", TensorStat::kMean, 2.5, 2));
  ASSERT_EQ(flat.kind, Verdict::kIssue);
  EXPECT_EQ(flat.findings[0].reason, "loss_not_decreasing");
  EXPECT_THAT(flat.findings[0].message, HasSubstr("did not fall for 2 saved steps in a row"));
}

TEST(CheckInputImages, ChannelMeansWeightedByImagesOnceEnoughWereSeen) {
  std::unique_ptr<Rule> rule = Make("CheckInputImages", {{"threshold_samples", "100"}});
  // Step 0: 60 images, channel 0 at mean 0.0, channel 1 at 0.5.
  rule->OnInput(Part("model:input", TensorStat::kChannelMean, 0, 0.0, 0));
  rule->OnInput(Part("model:input", TensorStat::kChannelMean, 1, 0.5, 0));
  EXPECT_EQ(rule->OnInput(Tensor("model:input", "inputs", TensorStat::kSamples, 60, 0)).kind,
            Verdict::kPending)
      << "60 images are too few";
  // Step 1: 40 images; channel 1 at -0.5: its mean over 100 images is 0.1.
  rule->OnInput(Part("model:input", TensorStat::kChannelMean, 0, 1.0, 1));
  rule->OnInput(Part("model:input", TensorStat::kChannelMean, 1, -0.5, 1));
  Verdict v = rule->OnInput(Tensor("model:input", "inputs", TensorStat::kSamples, 40, 1));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  ASSERT_EQ(v.findings.size(), 1u) << "channel 1 averages 0.1";
  EXPECT_EQ(v.findings[0].subject, "model:input channel 0");
  EXPECT_DOUBLE_EQ(v.findings[0].observed, 0.4);
  EXPECT_THAT(v.findings[0].message, HasSubstr("Channel 0 of the images in model:input has mean 0.4 over 100 images"));
  EXPECT_EQ(rule->OnEnd(5000).kind, Verdict::kOk);
  Verdict few = Make("CheckInputImages")->OnEnd(1);
  EXPECT_EQ(few.findings[0].reason, "no_data");
}

TEST(NLPSequenceRatio, EachTokenAgainstItsOwnThreshold) {
  std::unique_ptr<Rule> rule =
      Make("NLPSequenceRatio", {{"token_values", "0, 1"}, {"token_thresholds_percent", "50,10"}});
  EXPECT_EQ(rule->OnInput(Part("embed:input", TensorStat::kTokenFraction, 0, 0.4, 0)).kind,
            Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Part("embed:input", TensorStat::kTokenFraction, 7, 0.9, 0)).kind,
            Verdict::kPending)
      << "token 7 is not listed";
  Verdict v = rule->OnInput(Part("embed:input", TensorStat::kTokenFraction, 1, 0.25, 0));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].subject, "embed:input token 1");
  EXPECT_THAT(v.findings[0].message, HasSubstr("25% of the tokens of embed:input are token id 1 at step 0 (limit 10%)"));
  EXPECT_TRUE(rule->OnEnd(5000).findings.empty());
  std::unique_ptr<Rule> other = Make("NLPSequenceRatio", {{"token_values", "3"}});
  other->OnInput(Part("embed:input", TensorStat::kTokenFraction, 0, 0.9, 0));
  Verdict end = other->OnEnd(5000);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_THAT(end.findings[0].recommendation, HasSubstr("token_values=(3)"));
  for (auto [values, percents, error] :
       {std::tuple{"0,1", "50", "got 2 token ids (\"0,1\") and 1 percents"},
        std::tuple{"x", "50", "item 1, \"x\", is not a token id"},
        std::tuple{"0", "150", "\"150\", is not a percent from 0 to 100"}}) {
    absl::StatusOr<std::unique_ptr<Rule>> bad = MakeRule(
        "NLPSequenceRatio", {{"token_values", values}, {"token_thresholds_percent", percents}},
        Profile::kDefault);
    ASSERT_FALSE(bad.ok()) << values;
    EXPECT_THAT(bad.status().message(), HasSubstr(error));
  }
}

TEST(SimilarAcrossRuns, ComparesEachStatisticAtTheSameStepOfTheOtherJob) {
  int loads = 0;
  RuleEnvironment env;
  env.reference = [&loads](const std::string& job,
                           const TensorWanted& want) -> absl::StatusOr<ReferenceRun> {
    EXPECT_TRUE(want("fc.weight", "gradients"));
    ++loads;
    if (job != "run-a") return absl::NotFoundError("there is no job " + job);
    ReferenceRun run;
    run.ended = true;
    run.values[TensorStatisticKey("fc.weight", "gradients",
                                  static_cast<int>(TensorStat::kMean), -1)] = {{0, 0.5}, {1, 0.25}};
    run.last_step = 1;
    return run;
  };
  absl::StatusOr<std::unique_ptr<Rule>> made = MakeRule(
      "SimilarAcrossRuns", {{"other_trials", "run-a"}}, Profile::kDefault, env);
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<Rule> rule = *std::move(made);
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.5, 0)).kind,
            Verdict::kOk);
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.5 + 1e-9, 0)).kind,
            Verdict::kOk)
      << "within rtol";
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kL2, 9, 0)).kind,
            Verdict::kPending)
      << "a statistic the other job does not have";
  Verdict v = rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.3, 1));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].reason, "differs");
  EXPECT_EQ(v.findings[0].subject, "fc.weight mean");
  EXPECT_THAT(v.findings[0].message,
              HasSubstr("The mean of fc.weight (gradients) at step 1 is 0.3 here and 0.25 in job run-a"));
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.3, 7)).kind,
            Verdict::kPending)
      << "a step the other job does not have";
  EXPECT_EQ(rule->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.4, 1)).kind,
            Verdict::kOk)
      << "a tensor found to differ is reported once";
  Input rank1 = Tensor("fc.weight", "gradients", TensorStat::kMean, 9, 0);
  rank1.rank = 1;
  EXPECT_EQ(rule->OnInput(rank1).kind, Verdict::kPending) << "rank 0 is compared";
  EXPECT_EQ(loads, 1) << "an ended job is read once";
  EXPECT_TRUE(rule->OnEnd(9000).findings.empty());

  std::unique_ptr<Rule> missing =
      *MakeRule("SimilarAcrossRuns", {{"other_trials", "nope"}}, Profile::kDefault, env);
  EXPECT_EQ(missing->OnInput(Tensor("fc.weight", "gradients", TensorStat::kMean, 0.5, 0)).kind,
            Verdict::kPending);
  Verdict end = missing->OnEnd(9000);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_THAT(end.findings[0].message, HasSubstr("job nope could not be read: there is no job nope"));
  absl::StatusOr<std::unique_ptr<Rule>> unnamed = MakeRule("SimilarAcrossRuns", {}, Profile::kDefault);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_THAT(unnamed.status().message(), HasSubstr("needs other_trials=JOB"));
}

}  // namespace
}  // namespace trainwatch::rules
