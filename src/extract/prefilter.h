#pragma once
// Prefilter: which definitions can possibly match a line, from the literal
// strings ("atoms") that RE2's FilteredRE2 proves every match must contain.
// One pass of a LiteralScanner over the line finds the atoms present; the
// candidate set for that combination of atoms is computed by RE2 once and
// remembered. A definition outside the set provably cannot match, so the
// extractor skips its regex; the prefilter never removes a possible match.
//
// Regexes with case-insensitive flags, and atoms that are not plain ASCII,
// are not filtered (RE2 lower-cases atoms with Unicode case folding, which a
// byte scanner cannot mirror exactly).
//
// Not thread-safe (the memo is mutable): one per Extractor.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "extract/literal_scanner.h"

namespace re2 {
class FilteredRE2;
}

namespace trainwatch::extract {

class Prefilter {
 public:
  // At most 64 patterns, each compiling with MetricRegexOptions().
  explicit Prefilter(const std::vector<std::string>& patterns);
  ~Prefilter();

  // Bit i set: pattern i may match `text`; clear: it cannot.
  uint64_t Candidates(std::string_view text);

  // Patterns that are candidates for every line (nothing to filter on).
  uint64_t unfiltered() const { return base_; }
  size_t atom_count() const { return atoms_.size(); }

 private:
  // Candidates when exactly the atoms in found_ are present.
  uint64_t Compute();

  std::unique_ptr<re2::FilteredRE2> filter_;
  std::vector<std::string> atoms_;           // FilteredRE2's atoms, lower-cased
  std::unique_ptr<LiteralScanner> scanner_;  // over the scannable atoms; null when none
  std::vector<uint32_t> scanned_ids_;        // scanner literal j is atom scanned_ids_[j]
  uint64_t base_ = 0;                        // candidates when no scanned atom is found
  uint64_t case_insensitive_ = 0;            // never filtered
  std::vector<uint64_t> forced_atoms_;       // atoms counted as present on every line
  std::vector<uint64_t> scanned_found_;      // scratch: scanner bits for this line
  std::vector<uint64_t> found_;              // scratch: atom bits for this line
  std::vector<int> atom_ids_;                // scratch
  std::vector<int> regexps_;                 // scratch
  absl::flat_hash_map<std::string, uint64_t> memo_;
};

}  // namespace trainwatch::extract
