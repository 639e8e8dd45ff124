#include "extract/prefilter.h"

#include <cstring>

#include "extract/regex.h"
#include "re2/filtered_re2.h"
#include "util/check.h"

namespace trainwatch::extract {
namespace {

// Shortest atom worth scanning for: shorter ones occur on most lines.
constexpr int kMinAtomLength = 2;
// Distinct atom combinations remembered; beyond that, computed each time.
constexpr size_t kMaxMemoEntries = 1 << 14;

// True when `pattern` may turn on case-insensitive matching: a "(?" group
// whose flags before any '-' include 'i'. Errs towards true.
bool MayBeCaseInsensitive(std::string_view pattern) {
  for (size_t at = pattern.find("(?"); at != std::string_view::npos;
       at = pattern.find("(?", at + 1)) {
    for (size_t i = at + 2; i < pattern.size(); ++i) {
      char c = pattern[i];
      if (c == 'i') return true;
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) break;
    }
  }
  return false;
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

Prefilter::Prefilter(const std::vector<std::string>& patterns)
    : filter_(std::make_unique<re2::FilteredRE2>(kMinAtomLength)) {
  TW_CHECK(patterns.size() <= 64);
  if (patterns.empty()) return;  // FilteredRE2 refuses to compile an empty set
  uint64_t case_insensitive = 0;
  for (size_t i = 0; i < patterns.size(); ++i) {
    int id = -1;
    RE2::ErrorCode code = filter_->Add(patterns[i], MetricRegexOptions(), &id);
    TW_CHECK(code == RE2::NoError && id == static_cast<int>(i));
    if (MayBeCaseInsensitive(patterns[i])) case_insensitive |= uint64_t{1} << i;
  }
  filter_->Compile(&atoms_);

  // Atoms the byte scanner cannot look for faithfully count as present on
  // every line: the prefilter only combines atoms with AND and OR, so
  // claiming more atoms can only add candidates.
  size_t words = (atoms_.size() + 63) / 64;
  forced_atoms_.assign(words, 0);
  found_.assign(words, 0);
  std::vector<std::string> scanned;
  for (size_t i = 0; i < atoms_.size(); ++i) {
    if (atoms_[i].empty() || !IsAscii(atoms_[i])) {
      forced_atoms_[i / 64] |= uint64_t{1} << (i % 64);
    } else {
      scanned.push_back(atoms_[i]);
      scanned_ids_.push_back(static_cast<uint32_t>(i));
    }
  }
  if (!scanned.empty()) {
    scanner_ = std::make_unique<LiteralScanner>(scanned);
    scanned_found_.assign(scanner_->words(), 0);
  }
  found_ = forced_atoms_;
  base_ = Compute() | case_insensitive;
  case_insensitive_ = case_insensitive;
}

Prefilter::~Prefilter() = default;

uint64_t Prefilter::Compute() {
  atom_ids_.clear();
  for (size_t i = 0; i < atoms_.size(); ++i) {
    if ((found_[i / 64] >> (i % 64)) & 1) atom_ids_.push_back(static_cast<int>(i));
  }
  filter_->AllPotentials(atom_ids_, &regexps_);
  uint64_t mask = 0;
  for (int r : regexps_) mask |= uint64_t{1} << r;
  return mask;
}

uint64_t Prefilter::Candidates(std::string_view text) {
  if (scanner_ == nullptr) return base_;
  std::memset(scanned_found_.data(), 0, scanned_found_.size() * sizeof(uint64_t));
  scanner_->Scan(text, scanned_found_.data());
  bool any = false;
  for (uint64_t w : scanned_found_) any |= w != 0;
  if (!any) return base_;

  absl::string_view key(reinterpret_cast<const char*>(scanned_found_.data()),
                        scanned_found_.size() * sizeof(uint64_t));
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  found_ = forced_atoms_;
  for (size_t j = 0; j < scanned_ids_.size(); ++j) {
    if ((scanned_found_[j / 64] >> (j % 64)) & 1) {
      found_[scanned_ids_[j] / 64] |= uint64_t{1} << (scanned_ids_[j] % 64);
    }
  }
  uint64_t mask = Compute() | case_insensitive_;
  if (memo_.size() < kMaxMemoEntries) memo_.emplace(std::string(key), mask);
  return mask;
}

}  // namespace trainwatch::extract
