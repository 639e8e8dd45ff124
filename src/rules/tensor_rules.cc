#include "rules/tensor_rules.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "rules/catalog.h"
#include "rules/log_rules.h"
#include "rules/log_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::Num;

namespace {

constexpr double kNoMax = std::numeric_limits<double>::infinity();

constexpr std::string_view kTensorStatNames[] = {
    "count", "zeros",     "nan",         "pos_inf",      "neg_inf",       "min",
    "max",   "mean",      "abs_mean",    "variance",     "l1",            "l2",
    "norm",  "update_norm", "update_ratio", "dead_fraction", "saturated_fraction",
    "p5",    "p95",       "channel_mean", "samples",      "token_fraction"};

bool IsStat(const Input& in, TensorStat stat) {
  return in.signal == Signal::kTensor && in.index == static_cast<int>(stat);
}

Finding TensorFinding(std::string_view reason, const Input& in, double observed, double threshold) {
  Finding f;
  f.reason = std::string(reason);
  f.subject = std::string(in.name);
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = observed;
  f.threshold = threshold;
  return f;
}

Verdict NoTensors(const TensorSelection& selection, std::string_view statistic, int64_t end_ms) {
  Finding f = NoDataFinding(
      absl::StrFormat("the job sent no %s of %s", statistic, selection.Describe()),
      "Send tensor statistics with the Python client: trainwatch.torch.watch(model, optimizer) "
      "in the training script (docs/python.md), or select tensors it sends "
      "(collection_names=, tensor_regex=).",
      end_ms);
  return {Verdict::kOk, {std::move(f)}};
}

}  // namespace

TensorSelection MakeTensorSelection(const ParamValues& values, std::string default_collection) {
  TensorSelection s;
  for (absl::string_view part :
       absl::StrSplit(values.String("collection_names"), ',', absl::SkipWhitespace())) {
    std::string name(part);
    absl::StripAsciiWhitespace(&name);
    s.collections.push_back(std::move(name));
  }
  s.regex_text = values.String("tensor_regex");
  if (!s.regex_text.empty()) {
    // Checked by ParseParams (ParamType::kRegex).
    s.regex = std::make_shared<const std::regex>(s.regex_text, std::regex::ECMAScript);
  }
  s.default_collection = std::move(default_collection);
  return s;
}

namespace {

// The selection parameters every tensor rule takes, then the rule's own.
std::vector<ParamSpec> WithSelection(std::vector<ParamSpec> own) {
  std::vector<ParamSpec> all = {
      {"collection_names", ParamType::kString, "", "", 0, 0,
       "comma-separated collections to read (gradients, weights, biases, activations, ...)"},
      {"tensor_regex", ParamType::kRegex, "", "", 0, 0,
       "read the tensors whose name this regex finds (anywhere in the name)"}};
  for (ParamSpec& spec : own) all.push_back(spec);
  return all;
}

}  // namespace

std::optional<TensorStat> ParseTensorStat(std::string_view name) {
  for (size_t i = 0; i < std::size(kTensorStatNames); ++i) {
    if (kTensorStatNames[i] == name) return static_cast<TensorStat>(i);
  }
  return std::nullopt;
}

std::string_view TensorStatName(TensorStat stat) {
  const size_t i = static_cast<size_t>(stat);
  return i < std::size(kTensorStatNames) ? kTensorStatNames[i] : "?";
}

bool TensorSelection::Selects(const Input& in) const {
  if (in.signal != Signal::kTensor) return false;
  if (collections.empty() && regex == nullptr) {
    return default_collection.empty() || in.collection == default_collection;
  }
  for (const std::string& c : collections) {
    if (in.collection == c) return true;
  }
  return regex != nullptr && std::regex_search(in.name.begin(), in.name.end(), *regex);
}

std::string TensorSelection::Describe() const {
  std::vector<std::string> parts;
  if (!collections.empty()) {
    parts.push_back((collections.size() == 1 ? "collection " : "collections ") +
                    absl::StrJoin(collections, ", "));
  }
  if (regex != nullptr) parts.push_back("the tensors matching " + regex_text);
  if (parts.empty()) {
    return default_collection.empty() ? "any tensor" : "collection " + default_collection;
  }
  return absl::StrJoin(parts, " or ");
}

// ------------------------------------------------------------ VanishingGradient

Verdict OnInput(const VanishingGradientParams& p, VanishingGradientState& s, const Input& in) {
  if (!IsStat(in, TensorStat::kAbsMean) || !p.selection.Selects(in)) return Verdict::Pending();
  s.seen.any = true;
  if (in.value >= p.threshold) return Verdict::Ok();
  Finding f = TensorFinding("vanishing_gradient", in, in.value, p.threshold);
  f.message = absl::StrFormat("The gradient of %s vanished: mean |g| = %s, below %s%s.", in.name,
                              Num(in.value), Num(p.threshold), AtStep(in.step));
  f.recommendation =
      "Gradients this small stop the layers before them from learning: use ReLU-like "
      "activations instead of sigmoid/tanh in deep stacks, add normalisation (BatchNorm, "
      "LayerNorm) or residual connections, initialise with He/Xavier, or raise the learning rate.";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const VanishingGradientParams& p, VanishingGradientState& s, int64_t end_ms) {
  return s.seen.any ? Verdict::Ok() : NoTensors(p.selection, "mean |g|", end_ms);
}

// --------------------------------------------- DeadRelu, SaturatedActivation

Verdict OnInput(const UnitActivityParams& p, UnitActivityState& s, const Input& in) {
  if (!IsStat(in, p.stat) || !p.selection.Selects(in)) return Verdict::Pending();
  s.seen.any = true;
  const double percent = 100 * in.value;
  if (percent <= p.threshold_layer) return Verdict::Ok();
  const bool dead = p.stat == TensorStat::kDeadFraction;
  Finding f = TensorFinding(dead ? "dead_relu" : "saturated_activation", in, percent,
                            p.threshold_layer);
  if (dead) {
    f.message = absl::StrFormat(
        "%s%% of the units of %s are dead (positive for under 1%% of the batch)%s; the limit is "
        "%s%%.",
        Num(percent), in.name, AtStep(in.step), Num(p.threshold_layer));
    f.recommendation =
        "Dead ReLUs pass no gradient: lower the learning rate, use LeakyReLU/GELU, check the "
        "initialisation (He) and the bias init, or normalise the layer's inputs.";
  } else {
    f.message = absl::StrFormat(
        "%s%% of the units of %s are saturated (inputs in the flat region of tanh/sigmoid for "
        "over 99%% of the batch)%s; the limit is %s%%.",
        Num(percent), in.name, AtStep(in.step), Num(p.threshold_layer));
    f.recommendation =
        "Saturated activations pass almost no gradient: normalise the layer's inputs "
        "(BatchNorm/LayerNorm), lower the initial weight scale or the learning rate, or use "
        "ReLU-like activations.";
  }
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const UnitActivityParams& p, UnitActivityState& s, int64_t end_ms) {
  if (s.seen.any) return Verdict::Ok();
  return NoTensors(p.selection,
                   p.stat == TensorStat::kDeadFraction ? "ReLU unit activity (dead_fraction)"
                                                       : "tanh/sigmoid unit activity "
                                                         "(saturated_fraction)",
                   end_ms);
}

// -------------------------------------------------------------- TensorVariance

Verdict OnInput(const TensorVarianceParams& p, TensorVarianceState& s, const Input& in) {
  if (!IsStat(in, TensorStat::kVariance) || !p.selection.Selects(in)) return Verdict::Pending();
  s.seen.any = true;
  if (p.max_threshold && in.value > *p.max_threshold) {
    Finding f = TensorFinding("variance_high", in, in.value, *p.max_threshold);
    f.message = absl::StrFormat("The variance of %s is %s, above %s%s.", in.name, Num(in.value),
                                Num(*p.max_threshold), AtStep(in.step));
    f.recommendation =
        "A tensor spreading this much is close to exploding: lower the learning rate, clip "
        "gradients or normalise the layer.";
    return Verdict::Issue(std::move(f));
  }
  if (p.min_threshold && in.value < *p.min_threshold) {
    Finding f = TensorFinding("variance_low", in, in.value, *p.min_threshold);
    f.message = absl::StrFormat("The variance of %s is %s, below %s%s.", in.name, Num(in.value),
                                Num(*p.min_threshold), AtStep(in.step));
    f.recommendation =
        "A tensor this uniform carries little information: check the initialisation, dead or "
        "saturated units before it, and the learning rate.";
    return Verdict::Issue(std::move(f));
  }
  return Verdict::Ok();
}

Verdict OnEnd(const TensorVarianceParams& p, TensorVarianceState& s, int64_t end_ms) {
  return s.seen.any ? Verdict::Ok() : NoTensors(p.selection, "variance", end_ms);
}

// ------------------------------------------------------------- UnchangedTensor

Verdict OnInput(const UnchangedTensorParams& p, UnchangedTensorState& s, const Input& in) {
  if (in.signal != Signal::kTensor || !p.selection.Selects(in)) return Verdict::Pending();
  const bool norm = IsStat(in, TensorStat::kNorm);
  if (!norm && !IsStat(in, TensorStat::kUpdateNorm)) return Verdict::Pending();
  s.seen.any = true;
  auto it = s.tensors.find(in.name);
  if (it == s.tensors.end()) it = s.tensors.emplace(std::string(in.name), UnchangedTensorState::PerTensor{}).first;
  UnchangedTensorState::PerTensor& t = it->second;
  if (norm) {
    t.norm = in.value;
    t.have_norm = true;
    return Verdict::Pending();
  }
  const double tolerance = p.atol + p.rtol * (t.have_norm ? t.norm : 0);
  if (in.value > tolerance) {
    t.unchanged = 0;
    t.fired = false;
    return Verdict::Ok();
  }
  ++t.unchanged;
  if (t.unchanged < p.num_steps - 1 || t.fired) return Verdict::Ok();
  t.fired = true;
  Finding f = TensorFinding("unchanged", in, in.value, tolerance);
  f.message = absl::StrFormat(
      "%s has not changed over the last %d saved steps%s (||dW|| = %s, tolerance %s).", in.name,
      p.num_steps, AtStep(in.step), Num(in.value), Num(tolerance));
  f.recommendation =
      "A weight that does not change is not learning: check that it is passed to the optimizer "
      "and has requires_grad, that its gradient is not zero (dead units, vanishing gradients), "
      "and that the learning rate is not zero. Ignore this for layers frozen on purpose "
      "(select others with tensor_regex=).";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const UnchangedTensorParams& p, UnchangedTensorState& s, int64_t end_ms) {
  return s.seen.any ? Verdict::Ok() : NoTensors(p.selection, "weight updates (update_norm)", end_ms);
}

// ----------------------------------------------------------- WeightUpdateRatio

Verdict OnInput(const WeightUpdateRatioParams& p, WeightUpdateRatioState& s, const Input& in) {
  if (!IsStat(in, TensorStat::kUpdateRatio) || !p.selection.Selects(in)) return Verdict::Pending();
  s.seen.any = true;
  // The hook divides by ||W_prev||; epsilon keeps a zero weight from dividing by zero there.
  const double ratio = in.value;
  if (ratio > p.large_threshold) {
    Finding f = TensorFinding("update_too_large", in, ratio, p.large_threshold);
    f.message = absl::StrFormat("The update of %s is %s times its size%s (limit %s).", in.name,
                                Num(ratio), AtStep(in.step), Num(p.large_threshold));
    f.recommendation = "Updates larger than the weights make training unstable: lower the "
                       "learning rate or clip gradients.";
    return Verdict::Issue(std::move(f));
  }
  if (ratio < p.small_threshold) {
    Finding f = TensorFinding("update_too_small", in, ratio, p.small_threshold);
    f.message = absl::StrFormat("The update of %s is only %s of its size%s (limit %s).", in.name,
                                Num(ratio), AtStep(in.step), Num(p.small_threshold));
    f.recommendation = "Updates this small barely move the weights: raise the learning rate, "
                       "or check for vanishing gradients.";
    return Verdict::Issue(std::move(f));
  }
  return Verdict::Ok();
}

Verdict OnEnd(const WeightUpdateRatioParams& p, WeightUpdateRatioState& s, int64_t end_ms) {
  return s.seen.any ? Verdict::Ok() : NoTensors(p.selection, "weight update ratios", end_ms);
}

// --------------------------------------------------------------------- AllZero

Verdict OnInput(const AllZeroParams& p, AllZeroState& s, const Input& in) {
  if (in.signal != Signal::kTensor || !p.selection.Selects(in)) return Verdict::Pending();
  const bool count = IsStat(in, TensorStat::kCount);
  if (!count && !IsStat(in, TensorStat::kZeros)) return Verdict::Pending();
  s.seen.any = true;
  auto it = s.tensors.find(in.name);
  if (it == s.tensors.end()) it = s.tensors.emplace(std::string(in.name), AllZeroState::Pending{}).first;
  AllZeroState::Pending& t = it->second;
  if (t.t_ms != in.t_ms) t = {in.t_ms, -1, -1};  // a new step
  (count ? t.count : t.zeros) = in.value;
  if (t.count <= 0 || t.zeros < 0) return Verdict::Pending();
  const double percent = 100 * t.zeros / t.count;
  t = {};
  if (percent < p.threshold) return Verdict::Ok();
  Finding f = TensorFinding("all_zero", in, percent, p.threshold);
  f.message = absl::StrFormat("%s%% of the values of %s are zero%s (limit %s%%).", Num(percent),
                              in.name, AtStep(in.step), Num(p.threshold));
  f.recommendation = "A tensor of zeros carries nothing: check the data feeding it, dead units "
                     "before it, and weights that were never initialised or were zeroed.";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const AllZeroParams& p, AllZeroState& s, int64_t end_ms) {
  return s.seen.any ? Verdict::Ok() : NoTensors(p.selection, "zero counts", end_ms);
}

// ---------------------------------------------------- PoorWeightInitialization

namespace {

bool IsActivationInput(const PoorWeightInitializationParams& p, const Input& in) {
  return IsStat(in, TensorStat::kVariance) && in.collection == "activations" &&
         std::regex_search(in.name.begin(), in.name.end(), *p.activation_inputs);
}

// A bias's gradient ("fc.bias"; the last part of the name starts with "bias",
// as the hook tells biases from weights): biases start at zero, and a bias of
// a few elements has a spread of about nothing whatever its initialisation.
bool IsBias(std::string_view name) {
  const size_t dot = name.rfind('.');
  return name.substr(dot == std::string_view::npos ? 0 : dot + 1).starts_with("bias");
}

// The variance ratio of the save that ends.
Verdict EndSave(const PoorWeightInitializationParams& p, PoorWeightInitializationState& s) {
  const int layers = s.layers;
  s.layers = 0;
  if (layers < 2 || s.fired_ratio || s.var_max <= 0) return Verdict::Pending();
  const double ratio = s.var_min > 0 ? s.var_max / s.var_min
                                     : std::numeric_limits<double>::infinity();
  if (ratio <= p.threshold) return Verdict::Ok();
  s.fired_ratio = true;
  Finding f;
  f.reason = "activation_variance_ratio";
  f.subject = s.max_name;
  f.step = s.step;
  f.t_ms = s.t_ms;
  f.observed = ratio;
  f.threshold = p.threshold;
  f.message = absl::StrFormat(
      "The inputs of the activations differ in variance by %s times across the layers%s "
      "(%s: %s, %s: %s; the limit is %s times).",
      Num(ratio), AtStep(s.step), s.max_name, Num(s.var_max), s.min_name, Num(s.var_min),
      Num(p.threshold));
  f.recommendation =
      "Well initialised layers keep their activations' variance about the same from layer to "
      "layer: initialise with He (ReLU) or Xavier (tanh/sigmoid), check layers initialised by "
      "hand, or add normalisation (BatchNorm, LayerNorm).";
  return Verdict::Issue(std::move(f));
}

}  // namespace

Verdict OnInput(const PoorWeightInitializationParams& p, PoorWeightInitializationState& s,
                const Input& in) {
  if (in.signal != Signal::kTensor) return Verdict::Pending();
  const bool activation = IsActivationInput(p, in);
  const bool quantile = in.collection == "gradients" && !IsBias(in.name) &&
                        (IsStat(in, TensorStat::kP5) || IsStat(in, TensorStat::kP95));
  const bool loss = in.collection == "losses" && IsStat(in, TensorStat::kMean);
  if (!activation && !quantile && !loss) return Verdict::Pending();
  Verdict verdict;
  if (in.t_ms != s.t_ms) {  // a new save: the one before is complete
    if (s.saves > 0 && s.saves <= p.steps) verdict = EndSave(p, s);
    s.spread.clear();
    s.t_ms = in.t_ms;
    s.step = in.step;
    ++s.saves;
  }
  if (s.saves > p.steps) return verdict;  // only the first saves are judged
  if (activation) {
    s.seen_activations = true;
    if (s.layers == 0 || in.value > s.var_max) {
      s.var_max = in.value;
      s.max_name = std::string(in.name);
    }
    if (s.layers == 0 || in.value < s.var_min) {
      s.var_min = in.value;
      s.min_name = std::string(in.name);
    }
    ++s.layers;
    return verdict.kind == Verdict::kPending ? Verdict::Ok() : verdict;
  }
  if (quantile) {
    s.seen_gradients = true;
    auto it = s.spread.try_emplace(std::string(in.name), std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::quiet_NaN()).first;
    (IsStat(in, TensorStat::kP5) ? it->second.first : it->second.second) = in.value;
    const double spread = it->second.second - it->second.first;
    if (std::isnan(spread)) return verdict;
    if (spread >= p.distribution_range) return verdict.kind == Verdict::kPending ? Verdict::Ok() : verdict;
    Finding f = TensorFinding("gradient_distribution_range", in, spread, p.distribution_range);
    f.message = absl::StrFormat(
        "The gradients of %s are nearly all the same: p95 - p5 = %s, under %s%s.", in.name,
        Num(spread), Num(p.distribution_range), AtStep(in.step));
    f.recommendation =
        "Gradients this narrow at the start mean the layer barely learns: check its "
        "initialisation (He/Xavier, not constants or zeros) and the scale of its inputs.";
    verdict.kind = Verdict::kIssue;
    verdict.findings.push_back(std::move(f));
    return verdict;
  }
  s.seen_loss = true;
  ++s.loss_saves;
  if (in.value < s.best_loss) {
    s.best_loss = in.value;
    s.since_best = 0;
    return verdict.kind == Verdict::kPending ? Verdict::Ok() : verdict;
  }
  ++s.since_best;
  if (s.since_best < p.patience || s.fired_loss) return verdict;
  s.fired_loss = true;
  Finding f = TensorFinding("loss_not_decreasing", in, in.value, s.best_loss);
  f.message = absl::StrFormat(
      "The loss %s did not fall for %d saved steps in a row at the start of training%s "
      "(best %s).",
      in.name, s.since_best, AtStep(in.step), Num(s.best_loss));
  f.recommendation =
      "A loss that does not move in the first steps often means a bad initialisation (weights "
      "too small or too large, dead or saturated units) or a learning rate far off.";
  verdict.kind = Verdict::kIssue;
  verdict.findings.push_back(std::move(f));
  return verdict;
}

Verdict OnEnd(const PoorWeightInitializationParams& p, PoorWeightInitializationState& s,
              int64_t end_ms) {
  Verdict verdict;
  if (s.saves > 0 && s.saves <= p.steps) verdict = EndSave(p, s);
  if (verdict.kind == Verdict::kPending) verdict.kind = Verdict::kOk;
  auto missing = [&](bool seen, std::string_view what, std::string_view how) {
    if (seen) return;
    verdict.findings.push_back(
        NoDataFinding(absl::StrFormat("the job sent no %s", what), std::string(how), end_ms));
  };
  missing(s.seen_activations,
          absl::StrFormat("variance of the activation inputs matching %s (collection activations)",
                          p.activation_inputs_text),
          "Watch the model with trainwatch.torch.watch(model, optimizer) (collection "
          "activations is on by default; docs/python.md), or set activation_inputs_regex=.");
  missing(s.seen_gradients, "p5 and p95 of the gradients at the first steps",
          "Watch the model with trainwatch.torch.watch(model, optimizer): it sends them at its "
          "first initial_steps steps (docs/python.md).");
  missing(s.seen_loss, "loss (collection losses)",
          "Record the loss with hook.record_loss(loss) or hook.wrap_loss(loss_fn).");
  return verdict;
}

// ------------------------------------------------------------ CheckInputImages

namespace {

// A channel's mean over the folded steps and the current one (when its
// images are known), and the images it counts.
std::pair<double, double> ChannelMean(const CheckInputImagesState::PerTensor& t, int channel) {
  double sum = 0, images = 0;
  if (auto it = t.folded.find(channel); it != t.folded.end()) {
    sum = it->second.first;
    images = it->second.second;
  }
  if (auto it = t.means.find(channel); it != t.means.end() && t.samples > 0) {
    sum += it->second * t.samples;
    images += t.samples;
  }
  return {images > 0 ? sum / images : 0, images};
}

void FoldStep(CheckInputImagesState::PerTensor& t) {
  if (t.samples > 0) {
    t.folded_samples += t.samples;
    for (const auto& [channel, mean] : t.means) {
      auto& [sum, images] = t.folded[channel];
      sum += mean * t.samples;
      images += t.samples;
    }
  }
  t.means.clear();
  t.samples = -1;
}

}  // namespace

Verdict OnInput(const CheckInputImagesParams& p, CheckInputImagesState& s, const Input& in) {
  const bool mean = IsStat(in, TensorStat::kChannelMean);
  if ((!mean && !IsStat(in, TensorStat::kSamples)) || !p.selection.Selects(in)) {
    return Verdict::Pending();
  }
  s.seen.any = true;
  CheckInputImagesState::PerTensor& t = s.tensors[std::string(in.name)];
  if (in.t_ms != t.t_ms) {
    FoldStep(t);
    t.t_ms = in.t_ms;
  }
  if (mean) {
    t.means[in.part] = in.value;
  } else {
    t.samples = in.value;
  }
  const double seen = t.folded_samples + std::max(t.samples, 0.0);
  if (seen < p.threshold_samples) return Verdict::Pending();
  Verdict verdict = Verdict::Ok();
  std::set<int> channels;
  for (const auto& [channel, sums] : t.folded) channels.insert(channel);
  for (const auto& [channel, m] : t.means) channels.insert(channel);
  for (int channel : channels) {
    const auto [channel_mean, images] = ChannelMean(t, channel);
    if (images <= 0 || std::abs(channel_mean) <= p.threshold_mean || t.fired[channel]) continue;
    t.fired[channel] = true;
    Finding f = TensorFinding("input_not_normalized", in, channel_mean, p.threshold_mean);
    f.subject = absl::StrFormat("%s channel %d", in.name, channel);
    f.message = absl::StrFormat(
        "Channel %d of the images in %s has mean %s over %s images%s; normalised inputs have "
        "|mean| <= %s.",
        channel, in.name, Num(channel_mean), Num(images), AtStep(in.step), Num(p.threshold_mean));
    f.recommendation =
        "Normalise the images before the model (e.g. torchvision.transforms.Normalize with the "
        "data set's per-channel mean and std): un-normalised inputs slow or stall training.";
    verdict.kind = Verdict::kIssue;
    verdict.findings.push_back(std::move(f));
  }
  return verdict;
}

Verdict OnEnd(const CheckInputImagesParams& p, CheckInputImagesState& s, int64_t end_ms) {
  if (!s.seen.any) return NoTensors(p.selection, "per-channel means of image inputs", end_ms);
  double most = 0;
  for (const auto& [name, t] : s.tensors) {
    most = std::max(most, t.folded_samples + std::max(t.samples, 0.0));
  }
  if (most >= p.threshold_samples) return Verdict::Ok();
  Finding f = NoDataFinding(
      absl::StrFormat("the job's image inputs counted %s images, fewer than threshold_samples "
                      "(%s): their means were not judged",
                      Num(most), Num(p.threshold_samples)),
      "Lower threshold_samples, or let the hook save more steps (save_interval) or run longer.",
      end_ms);
  return {Verdict::kOk, {std::move(f)}};
}

// ------------------------------------------------------------- NLPSequenceRatio

Verdict OnInput(const NLPSequenceRatioParams& p, NLPSequenceRatioState& s, const Input& in) {
  if (!IsStat(in, TensorStat::kTokenFraction) || !p.selection.Selects(in)) {
    return Verdict::Pending();
  }
  s.seen.any = true;
  for (const auto& [token, threshold] : p.tokens) {
    if (token != in.part) continue;
    s.token_seen[token] = true;
    const double percent = 100 * in.value;
    if (percent <= threshold) return Verdict::Ok();
    Finding f = TensorFinding("token_ratio", in, percent, threshold);
    f.subject = absl::StrFormat("%s token %d", in.name, token);
    f.message = absl::StrFormat("%s%% of the tokens of %s are token id %d%s (limit %s%%).",
                                Num(percent), in.name, token, AtStep(in.step), Num(threshold));
    f.recommendation =
        "Sequences this full of one token (padding, end of sequence or unknown) carry little: "
        "bucket sequences by length, shorten the padding, or enlarge the vocabulary.";
    return Verdict::Issue(std::move(f));
  }
  return Verdict::Pending();
}

Verdict OnEnd(const NLPSequenceRatioParams& p, NLPSequenceRatioState& s, int64_t end_ms) {
  if (!s.seen.any) return NoTensors(p.selection, "token shares (token_fraction)", end_ms);
  std::vector<std::string> missing;
  for (const auto& [token, threshold] : p.tokens) {
    if (!s.token_seen[token]) missing.push_back(absl::StrCat(token));
  }
  if (missing.empty()) return Verdict::Ok();
  Finding f = NoDataFinding(
      absl::StrFormat("the job sent no share of token id %s", absl::StrJoin(missing, ", ")),
      absl::StrFormat("The hook counts the token ids it is given: "
                      "trainwatch.torch.watch(model, token_values=(%s)).",
                      absl::StrJoin(missing, ", ")),
      end_ms);
  return {Verdict::kOk, {std::move(f)}};
}

// ----------------------------------------------------------- SimilarAcrossRuns

namespace {

constexpr int64_t kReloadEveryMs = 10'000;

void LoadReference(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, int64_t t_ms) {
  s.loaded_at_ms = t_ms;
  if (!p.loader) {
    s.load_error = "other jobs cannot be read here (a rule replayed without the data folder)";
    return;
  }
  absl::StatusOr<ReferenceRun> run = p.loader(p.other);
  if (!run.ok()) {
    if (!s.reference) s.load_error = std::string(run.status().message());
    return;  // a reload that failed keeps what was read
  }
  s.load_error.clear();
  s.reference = *std::move(run);
}

}  // namespace

Verdict OnInput(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, const Input& in) {
  if (in.signal != Signal::kTensor || !p.selection.Selects(in)) return Verdict::Pending();
  s.seen.any = true;
  if (in.step < 0) return Verdict::Pending();
  if (!s.reference && s.load_error.empty()) {
    LoadReference(p, s, in.t_ms);
  } else if (s.reference && !s.reference->ended && in.step > s.reference->last_step &&
             in.t_ms - s.loaded_at_ms >= kReloadEveryMs) {
    LoadReference(p, s, in.t_ms);
  }
  if (!s.reference) return Verdict::Pending();
  auto series = s.reference->values.find(
      TensorStatisticKey(in.name, in.collection, in.index, in.part));
  if (series == s.reference->values.end()) return Verdict::Pending();
  auto at = series->second.find(in.step);
  if (at == series->second.end()) return Verdict::Pending();
  ++s.compared;
  const double theirs = at->second;
  const double tolerance = p.atol + p.rtol * std::abs(theirs);
  if (std::abs(in.value - theirs) <= tolerance) return Verdict::Ok();
  const auto stat = static_cast<TensorStat>(in.index);
  std::string statistic(TensorStatName(stat));
  if (in.part >= 0) statistic += absl::StrFormat("[%d]", in.part);
  Finding f = TensorFinding("differs", in, in.value, theirs);
  f.subject = absl::StrFormat("%s %s", in.name, statistic);
  f.message = absl::StrFormat(
      "The %s of %s (%s)%s is %s here and %s in job %s (allclose with rtol %s, atol %s).",
      statistic, in.name, in.collection, AtStep(in.step), Num(in.value), Num(theirs), p.other,
      Num(p.rtol), Num(p.atol));
  f.recommendation =
      "Runs meant to be the same differ from this step on: check seeds (torch, numpy, Python, "
      "the data loader's workers), nondeterministic kernels "
      "(torch.use_deterministic_algorithms(True)), the data order and the code and versions "
      "each ran.";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, int64_t end_ms) {
  if (!s.load_error.empty()) {
    Finding f = NoDataFinding(absl::StrFormat("job %s could not be read: %s", p.other, s.load_error),
                              "Name a job of this data folder or server in other_trials=.",
                              end_ms);
    return {Verdict::kOk, {std::move(f)}};
  }
  if (!s.seen.any) return NoTensors(p.selection, "statistics", end_ms);
  if (s.compared > 0) return Verdict::Ok();
  Finding f = NoDataFinding(
      absl::StrFormat("no statistic of this job had one of job %s at the same step to compare "
                      "with (%s)",
                      p.other,
                      s.reference && s.reference->last_step >= 0
                          ? absl::StrFormat("%s has statistics up to step %d", p.other,
                                            s.reference->last_step)
                          : absl::StrFormat("%s has no tensor statistics by step", p.other)),
      "Compare runs that number their steps alike and save the same tensors at the same steps "
      "(trainwatch.torch.watch with the same save_interval).",
      end_ms);
  return {Verdict::kOk, {std::move(f)}};
}

// --------------------------------------------------------------------- catalog

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
