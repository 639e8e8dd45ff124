// The tensor rules over the data a model is fed: CheckInputImages and
// NLPSequenceRatio.
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

}  // namespace trainwatch::rules
