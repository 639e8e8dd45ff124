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
#include "rules/tensor_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::Num;
using tensor_internal::IsStat;
using tensor_internal::TensorFinding;
using tensor_internal::NoTensors;

namespace {

constexpr std::string_view kTensorStatNames[] = {
    "count", "zeros",     "nan",         "pos_inf",      "neg_inf",       "min",
    "max",   "mean",      "abs_mean",    "variance",     "l1",            "l2",
    "norm",  "update_norm", "update_ratio", "dead_fraction", "saturated_fraction",
    "p5",    "p95",       "channel_mean", "samples",      "token_fraction"};

}  // namespace

namespace tensor_internal {

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

std::vector<ParamSpec> WithSelection(std::vector<ParamSpec> own) {
  std::vector<ParamSpec> all = {
      {"collection_names", ParamType::kString, "", "", 0, 0,
       "comma-separated collections to read (gradients, weights, biases, activations, ...)"},
      {"tensor_regex", ParamType::kRegex, "", "", 0, 0,
       "read the tensors whose name this regex finds (anywhere in the name)"}};
  for (ParamSpec& spec : own) all.push_back(spec);
  return all;
}

}  // namespace tensor_internal

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
  return in.signal == Signal::kTensor && SelectsTensor(in.name, in.collection);
}

bool TensorSelection::SelectsTensor(std::string_view name, std::string_view collection) const {
  if (collections.empty() && regex == nullptr) {
    return default_collection.empty() || collection == default_collection;
  }
  for (const std::string& c : collections) {
    if (collection == c) return true;
  }
  return regex != nullptr && std::regex_search(name.begin(), name.end(), *regex);
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

}  // namespace trainwatch::rules
