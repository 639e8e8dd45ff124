// The tensor rules over a run's course and across runs: PoorWeightInitialization
// (the first steps) and SimilarAcrossRuns (another job, step by step).
#include "rules/tensor_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rules/log_rules.h"
#include "rules/log_rules_internal.h"
#include "rules/tensor_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::Num;
using tensor_internal::IsStat;
using tensor_internal::TensorFinding;
using tensor_internal::NoTensors;

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
  // Rank 0's steps (each rank of a distributed job sends its own, at its own times).
  if (in.signal != Signal::kTensor || in.rank != 0) return Verdict::Pending();
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
    if (spread >= p.distribution_range || !s.fired_spread.insert(std::string(in.name)).second) {
      return verdict.kind == Verdict::kPending ? Verdict::Ok() : verdict;
    }
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

// ----------------------------------------------------------- SimilarAcrossRuns

namespace {

constexpr int64_t kReloadEveryMs = 10'000;

void LoadReference(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, int64_t t_ms) {
  s.loaded_at_ms = t_ms;
  if (!p.loader) {
    s.load_error = "other jobs cannot be read here (a rule replayed without the data folder)";
    return;
  }
  const TensorSelection& selection = p.selection;
  absl::StatusOr<ReferenceRun> run =
      p.loader(p.other, [&selection](std::string_view tensor, std::string_view collection) {
        return selection.SelectsTensor(tensor, collection);
      });
  if (!run.ok()) {
    if (!s.reference) s.load_error = std::string(run.status().message());
    return;  // a reload that failed keeps what was read
  }
  s.load_error.clear();
  s.reference = *std::move(run);
}

}  // namespace

Verdict OnInput(const SimilarAcrossRunsParams& p, SimilarAcrossRunsState& s, const Input& in) {
  // Rank 0 of each job (the other's is what the loader reads).
  if (in.signal != Signal::kTensor || in.rank != 0 || !p.selection.Selects(in)) {
    return Verdict::Pending();
  }
  s.seen.any = true;
  if (in.step < 0) return Verdict::Pending();
  const bool due = !s.loaded_at_ms || in.t_ms - *s.loaded_at_ms >= kReloadEveryMs;
  if (!s.reference && due) {
    LoadReference(p, s, in.t_ms);  // the first read, or again after one that failed
  } else if (s.reference && !s.reference->ended && in.step > s.reference->last_step && due) {
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
  // Each tensor once: two runs that diverged differ in every statistic after.
  if (!s.reported.insert(absl::StrFormat("%s|%s", in.name, in.collection)).second) {
    return Verdict::Ok();
  }
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

}  // namespace trainwatch::rules
