#include "extract/extractor.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "extract/definitions.h"
#include "extract/non_finite_probe.h"
#include "extract/number.h"
#include "extract/prefilter.h"
#include "extract/regex.h"
#include "extract/simple_matcher.h"
#include "extract/text.h"
#include "util/status_macros.h"

namespace trainwatch::extract {
namespace {

constexpr size_t kMaxRejectedSampleBytes = 100;

}  // namespace

Extractor::Extractor(std::vector<model::MetricDefinition> defs, ExtractOptions options)
    : defs_(std::move(defs)), options_(options) {}

Extractor::~Extractor() = default;

absl::StatusOr<std::unique_ptr<Extractor>> Extractor::Create(
    std::vector<model::MetricDefinition> defs, ExtractOptions options) {
  TW_RETURN_IF_ERROR(ValidateDefinitions(defs));
  std::unique_ptr<Extractor> x(new Extractor(std::move(defs), options));
  size_t n = x->defs_.size();
  std::vector<std::string> patterns;
  for (const model::MetricDefinition& def : x->defs_) {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<RE2> re, CompileMetricRegex(def.regex));
    x->regexes_.push_back(std::move(re));
    x->simple_.push_back(options.reference_for_test ? nullptr : SimpleMatcher::Compile(def.regex));
    std::unique_ptr<RE2> probe;
    if (std::optional<std::string> pattern = NonFiniteProbePattern(def.regex)) {
      absl::StatusOr<std::unique_ptr<RE2>> compiled = CompileMetricRegex(*pattern);
      if (compiled.ok()) probe = *std::move(compiled);
    }
    if (probe != nullptr) x->probe_mask_ |= uint64_t{1} << x->probes_.size();
    x->probes_.push_back(std::move(probe));
    patterns.push_back(def.regex);
  }
  x->all_ = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  if (!options.reference_for_test && n > 0) x->prefilter_ = std::make_unique<Prefilter>(patterns);
  x->matched_.assign(n, 0);
  x->rejected_.assign(n, 0);
  x->sampled_.assign(n, false);
  x->rejected_sample_.assign(n, std::string());
  x->values_.reserve(n);
  return x;
}

std::span<const ExtractedValue> Extractor::Extract(std::string_view line) {
  values_.clear();
  non_finite_.clear();
  if (all_ == 0) return {};
  std::string_view text = line;
  if (options_.sagemaker_escaped && HasControlBytes(text)) {
    escaped_.clear();
    AppendSageMakerEscaped(text, &escaped_);
    text = escaped_;
  }
  if (!IsValidUtf8(text)) {
    replaced_.clear();
    AppendWithInvalidUtf8Replaced(text, &replaced_);
    text = replaced_;
  }
  uint64_t candidates = prefilter_ != nullptr ? prefilter_->Candidates(text) : all_;
  // A definition the prefilter ruled out is not probed either: its required
  // literals are, in the usual patterns, outside the value group.
  const uint64_t probe_candidates = candidates;
  uint64_t produced = 0;  // definitions with a value or a non-finite match
  while (candidates != 0) {
    size_t i = static_cast<size_t>(std::countr_zero(candidates));
    candidates &= candidates - 1;
    std::string_view group;
    bool participated = true;
    SimpleMatcher::Result fast = SimpleMatcher::Result::kGaveUp;
    if (simple_[i] != nullptr) {
      fast = simple_[i]->Match(text, &group);
      if (fast == SimpleMatcher::Result::kNoMatch) continue;
    }
    if (fast == SimpleMatcher::Result::kGaveUp) {
      re2::StringPiece sub[2];
      if (!regexes_[i]->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(),
                              RE2::UNANCHORED, sub, 2)) {
        continue;
      }
      participated = sub[1].data() != nullptr;
      group = std::string_view(sub[1].data(), sub[1].size());
    }
    ++matched_[i];
    std::optional<double> value;
    if (participated) value = ParseMetricValue(group);
    if (value.has_value()) {
      values_.push_back(ExtractedValue{static_cast<uint32_t>(i), *value});
      produced |= uint64_t{1} << i;
    } else {
      ++rejected_[i];
      if (participated) {
        if (std::optional<double> nf = ParseNonFiniteValue(group)) {
          non_finite_.push_back(ExtractedValue{static_cast<uint32_t>(i), *nf});
          produced |= uint64_t{1} << i;
        }
      }
      if (!sampled_[i]) {
        sampled_[i] = true;
        rejected_sample_[i].assign(group.substr(0, kMaxRejectedSampleBytes));
      }
    }
  }
  // A definition whose group cannot hold "nan" (`loss: ([0-9.]+)`) did not
  // match `loss: nan` at all: its probe, the same pattern with the group
  // widened to the non-finite words, tells the rules. Only on the rare lines
  // that hold "nan"/"inf", for definitions that produced nothing; this adds
  // no datapoint and counts no match.
  const uint64_t unprobed = probe_candidates & ~produced & probe_mask_;
  if (unprobed != 0 && MayHoldNonFinite(text)) {
    for (uint64_t left = unprobed; left != 0; left &= left - 1) {
      const size_t i = static_cast<size_t>(std::countr_zero(left));
      re2::StringPiece sub[2];
      if (!probes_[i]->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(),
                             RE2::UNANCHORED, sub, 2) ||
          sub[1].data() == nullptr) {
        continue;
      }
      if (std::optional<double> nf =
              ParseNonFiniteValue(std::string_view(sub[1].data(), sub[1].size()))) {
        non_finite_.push_back(ExtractedValue{static_cast<uint32_t>(i), *nf});
      }
    }
    std::stable_sort(non_finite_.begin(), non_finite_.end(),
                     [](const ExtractedValue& a, const ExtractedValue& b) {
                       return a.definition < b.definition;
                     });
  }
  return values_;
}

void Extractor::ClearRejectedSamples() {
  for (size_t i = 0; i < sampled_.size(); ++i) {
    sampled_[i] = false;
    rejected_sample_[i].clear();
  }
}

void Extractor::ExtractLine(std::string_view line,
                            const std::function<void(size_t, double)>& on_value) {
  for (const ExtractedValue& v : Extract(line)) on_value(v.definition, v.value);
}

}  // namespace trainwatch::extract
