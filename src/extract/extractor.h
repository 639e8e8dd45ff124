#pragma once
// Extractor: applies a validated list of metric definitions to log lines and
// turns what the regexes capture into values (spec/extraction.md "Matching
// and values"). For each line, each definition in order: the first match
// counts (later ones in the line are ignored, even when the first one's value
// is rejected); its capture group 1, stripped of ASCII white space, must be a
// number in the grammar of ParseMetricValue; a rejected value makes no
// datapoint but is counted.
//
// Lines are matched as UTF-8: ill-formed sequences become U+FFFD first (so
// '.' and \S match them). With ExtractOptions::sagemaker_escaped, control
// characters are first written the way CloudWatch shows them (#011 ...).
//
// Fast paths, none of which changes a result: a prefilter skips definitions
// whose required literals are absent from the line (prefilter.h), and regexes
// of the common shapes, literal text and runs like "step [0-9]+ loss:
// ([0-9.]+)", are matched without RE2 (simple_matcher.h). The tests and a fuzz
// target compare both with plain RE2 (ExtractOptions::reference_for_test).
//
// Thread-compatible: one thread per Extractor (create one per thread).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace re2 {
class RE2;
}

namespace trainwatch::extract {

class Prefilter;
class SimpleMatcher;

struct ExtractOptions {
  // Match against CloudWatch's #011-escaped text instead of the raw line
  // (spec/extraction.md "SageMaker-escaped text"). Off by default.
  bool sagemaker_escaped = false;
  // Plain RE2 for every definition on every line, without the prefilter and
  // the simple matcher: the reference the tests and benchmarks compare with.
  bool reference_for_test = false;
};

// One datapoint of a line: the definition's index and the value.
struct ExtractedValue {
  uint32_t definition;
  double value;
};

class Extractor {
 public:
  // Validates (as ValidateDefinitions) and compiles.
  static absl::StatusOr<std::unique_ptr<Extractor>> Create(
      std::vector<model::MetricDefinition> defs, ExtractOptions options = {});
  ~Extractor();
  Extractor(const Extractor&) = delete;
  Extractor& operator=(const Extractor&) = delete;

  // Calls on_value(definition_index, value) for every datapoint of one line
  // (terminator already removed), in definition order.
  void ExtractLine(std::string_view line, const std::function<void(size_t, double)>& on_value);

  // The same without a callback: the datapoints of one line in definition
  // order. The span is valid until the next call.
  std::span<const ExtractedValue> Extract(std::string_view line);

  // The matches of the last Extract whose value was NaN or ±Inf
  // (ParseNonFiniteValue), in definition order: no datapoints (a match counts
  // as rejected), but the rules want to know (a loss that became nan). A
  // definition whose group cannot hold "nan" is tried again with it widened
  // (non_finite_probe.h). Valid until the next call.
  std::span<const ExtractedValue> non_finite() const { return non_finite_; }

  const std::vector<model::MetricDefinition>& definitions() const { return defs_; }
  const ExtractOptions& options() const { return options_; }
  // First matches found for definition i (one per line at most).
  uint64_t matched(size_t i) const { return matched_[i]; }
  // Of those, the values refused by the number grammar.
  uint64_t rejected(size_t i) const { return rejected_[i]; }
  // The capture of definition i's first rejected match since creation or the
  // last ClearRejectedSamples (at most 100 bytes, as matched: after U+FFFD
  // replacement and escaping); has_rejected_sample(i) tells whether there is one.
  bool has_rejected_sample(size_t i) const { return sampled_[i]; }
  const std::string& rejected_sample(size_t i) const { return rejected_sample_[i]; }
  // Forgets the samples, so that the next rejection of each definition is kept.
  void ClearRejectedSamples();
  // Whether definition i is matched without RE2 (benchmarks, tests).
  bool uses_simple_matcher(size_t i) const { return simple_[i] != nullptr; }

 private:
  Extractor(std::vector<model::MetricDefinition> defs, ExtractOptions options);

  std::vector<model::MetricDefinition> defs_;
  ExtractOptions options_;
  std::vector<std::unique_ptr<re2::RE2>> regexes_;
  std::vector<std::unique_ptr<SimpleMatcher>> simple_;  // null: use RE2
  std::vector<std::unique_ptr<re2::RE2>> probes_;        // non_finite_probe.h; null: none
  uint64_t probe_mask_ = 0;                               // definitions with a probe
  std::unique_ptr<Prefilter> prefilter_;                // null: every definition is tried
  uint64_t all_ = 0;
  std::vector<uint64_t> matched_;
  std::vector<uint64_t> rejected_;
  std::vector<bool> sampled_;
  std::vector<std::string> rejected_sample_;
  std::vector<ExtractedValue> values_;  // scratch: this line's datapoints
  std::vector<ExtractedValue> non_finite_;  // scratch: this line's non-finite matches
  std::string escaped_;                 // scratch: the line, escaped
  std::string replaced_;                // scratch: the line, U+FFFD for ill-formed bytes
};

}  // namespace trainwatch::extract
