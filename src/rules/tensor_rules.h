#pragma once
// The model rules over tensor statistics (spec/rules.md §5.1-§5.7, §5.13,
// §5.14, §5.19, §5.20): what the Python client's PyTorch hook computes where the tensors
// live and sends every saved step (docs/python.md) reaches them as kTensor
// inputs, one per tensor and statistic. Each rule is a Params/State pair and
// its OnInput/OnEnd (rules/rule.h); TensorRuleInfos() (rules/catalog.h)
// lists them. ExplodingTensor (log_rules.h) reads the tensors' NaN and ±Inf
// counts too.
//
// Selection (spec §4): a rule reads the tensors of `collection_names` (comma
// separated, exact) and those whose name `tensor_regex` finds (anywhere in the
// name, as Python's re.search); both empty: every tensor that has the
// statistics it reads. A rule that saw no tensor it reads ends with a "no
// data" warning, never a silent pass.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rules/params.h"
#include "rules/reference.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct TensorSelection {
  std::vector<std::string> collections;  // exact names
  std::string regex_text;
  std::shared_ptr<const std::regex> regex;  // null: none
  // The collection a rule reads when the user names neither (e.g. "gradients").
  std::string default_collection;

  bool Selects(const Input& in) const;
  bool SelectsTensor(std::string_view name, std::string_view collection) const;
  // "collection gradients", "tensors matching fc.*", "every tensor".
  std::string Describe() const;
};

// From the parameters collection_names and tensor_regex (checked).
TensorSelection MakeTensorSelection(const ParamValues& values, std::string default_collection);

// Tensors seen by a rule: whether any was, for the "no data" finding.
struct TensorSeen {
  bool any = false;
};

// VanishingGradient (§5.1): mean(|g|) of a gradient below `threshold`.
struct VanishingGradientParams {
  TensorSelection selection;
  double threshold = 1e-7;
};
struct VanishingGradientState {
  TensorSeen seen;
};
Verdict OnInput(const VanishingGradientParams& p, VanishingGradientState& s, const Input& in);
Verdict OnEnd(const VanishingGradientParams& p, VanishingGradientState& s, int64_t end_ms);

// DeadRelu (§5.5) and SaturatedActivation (§5.4): the share of a layer's
// units that are dead (ReLU outputs positive for under 1% of the batch) or
// saturated (tanh/sigmoid inputs in the flat regions for over 99% of the
// batch), as the hook counts them, above `threshold_layer` percent.
struct UnitActivityParams {
  TensorSelection selection;
  TensorStat stat = TensorStat::kDeadFraction;
  double threshold_layer = 50;  // percent of the layer's units
};
struct UnitActivityState {
  TensorSeen seen;
};
Verdict OnInput(const UnitActivityParams& p, UnitActivityState& s, const Input& in);
Verdict OnEnd(const UnitActivityParams& p, UnitActivityState& s, int64_t end_ms);

// TensorVariance (§5.6): the variance above max_threshold or below
// min_threshold (at least one is required).
struct TensorVarianceParams {
  TensorSelection selection;
  std::optional<double> max_threshold;
  std::optional<double> min_threshold;
};
struct TensorVarianceState {
  TensorSeen seen;
};
Verdict OnInput(const TensorVarianceParams& p, TensorVarianceState& s, const Input& in);
Verdict OnEnd(const TensorVarianceParams& p, TensorVarianceState& s, int64_t end_ms);

// UnchangedTensor (§5.7) on weights: the hook sends ||W_s - W_prev|| and
// ||W|| at each optimizer step; a weight is unchanged at a save when
// ||dW|| <= atol + rtol * ||W||, and the rule fires when it was unchanged for
// the last `num_steps` - 1 saves in a row (so over num_steps saved values).
// (A norm-wise test, where numpy's allclose is element-wise: it can only be
// stricter than allclose by a factor of sqrt(elements) for atol.)
struct UnchangedTensorParams {
  TensorSelection selection;
  int64_t num_steps = 3;
  double rtol = 1e-5;
  double atol = 1e-8;
};
struct UnchangedTensorState {
  TensorSeen seen;
  struct PerTensor {
    double norm = 0;       // ||W|| of the last save
    bool have_norm = false;
    int64_t unchanged = 0; // saves in a row with no change
    bool fired = false;    // reported for this streak
  };
  std::map<std::string, PerTensor, std::less<>> tensors;
};
Verdict OnInput(const UnchangedTensorParams& p, UnchangedTensorState& s, const Input& in);
Verdict OnEnd(const UnchangedTensorParams& p, UnchangedTensorState& s, int64_t end_ms);

// WeightUpdateRatio (§5.13): ||dW|| / (||W_prev|| + epsilon) above
// large_threshold or below small_threshold, from consecutive optimizer steps.
struct WeightUpdateRatioParams {
  TensorSelection selection;
  double large_threshold = 10;
  double small_threshold = 1e-8;
  double epsilon = 1e-9;
};
struct WeightUpdateRatioState {
  TensorSeen seen;
};
Verdict OnInput(const WeightUpdateRatioParams& p, WeightUpdateRatioState& s, const Input& in);
Verdict OnEnd(const WeightUpdateRatioParams& p, WeightUpdateRatioState& s, int64_t end_ms);

// AllZero (§5.14): 100 * zeros / count >= threshold. A tensor's zeros and
// count come as two inputs of one step; the rule pairs them by tensor.
struct AllZeroParams {
  TensorSelection selection;
  double threshold = 100;  // percent of elements
};
struct AllZeroState {
  TensorSeen seen;
  struct Pending {
    int64_t t_ms = -1;
    double count = -1;
    double zeros = -1;
  };
  std::map<std::string, Pending, std::less<>> tensors;
};
Verdict OnInput(const AllZeroParams& p, AllZeroState& s, const Input& in);
Verdict OnEnd(const AllZeroParams& p, AllZeroState& s, int64_t end_ms);

// PoorWeightInitialization (§5.3), over the first `steps` saved steps (the
// hook saves every statistic at its first steps, docs/python.md), fires on
// any of: the variances of the activation inputs of the layers (tensors of
// collection activations whose name activation_inputs_regex finds) differing
// by more than `threshold` times at one step; a weight's gradient whose
// p95 - p5 is under `distribution_range` (biases' are not judged: they start
// at zero); a recorded loss (collection losses) that did not
// fall for `patience` saves in a row.
struct PoorWeightInitializationParams {
  std::shared_ptr<const std::regex> activation_inputs;
  std::string activation_inputs_text;
  double threshold = 10;
  double distribution_range = 0.001;
  int64_t patience = 5;
  int64_t steps = 10;
};
struct PoorWeightInitializationState {
  int64_t saves = 0;        // saves begun (distinct times of the inputs read)
  int64_t t_ms = std::numeric_limits<int64_t>::min();  // the current save's
  int64_t step = -1;        // the current save's step
  // The current save's activation-input variances: the largest and smallest.
  int layers = 0;
  double var_max = 0, var_min = 0;
  std::string max_name, min_name;
  std::map<std::string, std::pair<double, double>, std::less<>> spread;  // p5, p95 of this save
  double best_loss = std::numeric_limits<double>::infinity();
  int64_t loss_saves = 0, since_best = 0;
  bool seen_activations = false, seen_gradients = false, seen_loss = false;
  bool fired_ratio = false, fired_loss = false;
  std::set<std::string> fired_spread;  // gradients found narrow (each reported once)
};
Verdict OnInput(const PoorWeightInitializationParams& p, PoorWeightInitializationState& s,
                const Input& in);
Verdict OnEnd(const PoorWeightInitializationParams& p, PoorWeightInitializationState& s,
              int64_t end_ms);

// CheckInputImages (§5.19): the mean of each channel of the image inputs over
// every saved step (each step's channel_mean weighted by its images), once
// `threshold_samples` images were seen, farther from 0 than `threshold_mean`.
// The channel axis is chosen where the statistics are computed (the hook's
// image_channel_axis).
struct CheckInputImagesParams {
  TensorSelection selection;
  double threshold_mean = 0.2;
  double threshold_samples = 500;
};
struct CheckInputImagesState {
  TensorSeen seen;
  struct PerTensor {
    int64_t t_ms = std::numeric_limits<int64_t>::min();  // the current step's
    double samples = -1;                     // the current step's images (-1: not yet known)
    std::map<int, double> means;             // the current step's channel means
    double folded_samples = 0;               // images of the steps before
    std::map<int, std::pair<double, double>> folded;  // channel -> sum of mean * images, images
    std::map<int, bool> fired;
  };
  std::map<std::string, PerTensor, std::less<>> tensors;
};
Verdict OnInput(const CheckInputImagesParams& p, CheckInputImagesState& s, const Input& in);
Verdict OnEnd(const CheckInputImagesParams& p, CheckInputImagesState& s, int64_t end_ms);

// NLPSequenceRatio (§5.20): per step and token-id input, the share of each
// listed token id (token_fraction, counted by the hook for its token_values)
// above its threshold (percent), paired by position.
struct NLPSequenceRatioParams {
  TensorSelection selection;
  std::vector<std::pair<int, double>> tokens;  // token id, threshold percent
};
struct NLPSequenceRatioState {
  TensorSeen seen;
  std::map<int, bool> token_seen;
};
Verdict OnInput(const NLPSequenceRatioParams& p, NLPSequenceRatioState& s, const Input& in);
Verdict OnEnd(const NLPSequenceRatioParams& p, NLPSequenceRatioState& s, int64_t end_ms);

// SimilarAcrossRuns (§5.11): each statistic of a selected tensor, at each
// step, against the same statistic of the job `other` at the same step
// (numpy's allclose: |a - b| <= atol + rtol * |b|); a difference is an issue.
// The statistics stand in for the raw values SageMaker compared (spec §10.2):
// runs that are the same have the same statistics, and a run that differs in
// any value at a step almost surely differs in its mean, L1 or L2. The other
// job is read (RuleEnvironment's loader) at the first statistic, and again,
// at most every 10 s of data time, while this job is past the other's newest
// step and the other had not ended.
struct SimilarAcrossRunsParams {
  TensorSelection selection;
  std::string other;
  double rtol = 1e-5;
  double atol = 1e-8;
  ReferenceLoader loader;  // null: other jobs cannot be read here
};
struct SimilarAcrossRunsState {
  TensorSeen seen;
  std::optional<ReferenceRun> reference;
  std::string load_error;  // why the other job could not be read
  std::optional<int64_t> loaded_at_ms;  // data time of the last read
  uint64_t compared = 0;
  std::set<std::string> reported;  // tensor|collection found to differ
};
Verdict OnInput(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, const Input& in);
Verdict OnEnd(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, int64_t end_ms);

}  // namespace trainwatch::rules
