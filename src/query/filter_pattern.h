#pragma once
// CloudWatch Logs filter patterns (spec/aws-api.md §6.3), in their three
// forms. Unstructured: terms, "quoted phrases", ?alternatives, -exclusions
// and %regex%:
//
//   ERROR                  contains ERROR
//   ERROR Exception        contains both (AND)
//   "train_loss=0"         contains the phrase (quotes for spaces and symbols)
//   ?ERROR ?WARN           contains at least one of the ?-terms
//   ERROR -DEBUG           contains ERROR and not DEBUG
//   %loss=[0-9]+%          RE2 search (AWS's restricted regex alphabet)
//
// A message matches when it contains every plain term and phrase, at least
// one ?-term (when there are any), none of the -terms, and every %regex%.
// Terms match as substrings (case-sensitive); AWS matches whole terms in
// unstructured text, trainwatch deliberately simplifies (docs/api.md, "Log filter patterns").
//
// JSON, for messages that are a JSON object (others never match):
//
//   { $.loss > 0.5 && $.phase = "train" }   numbers compare as numbers
//   { $.error.code = "CUDA*" }               strings compare with * wildcards
//   { $.tags[0] != debug || ($.step >= 100) }
//   { $.lr IS NULL }  { $.grad NOT EXISTS }  { $.nan_seen IS TRUE }
//   { $.msg = %out of mem[a-z]+% }           RE2 search in a string field
//
// Space-delimited, for messages of fields split by spaces ("quoted" and
// [bracketed] text is one field); ... stands for any number of fields:
//
//   [time, level = ERROR, ..., loss > 2]
//   [ip, user, ..., status = 4* || status = 500, bytes]
//
// A condition in a slot names that slot's field.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace trainwatch::query {

namespace internal {
// A JSON or space-delimited pattern (structured_pattern.h).
class StructuredPattern;
}  // namespace internal

class FilterPattern {
 public:
  // InvalidArgument "Invalid filter pattern: ..." (what and where) for an
  // unbalanced quote or brace, an empty term after ?/-, a regex with
  // characters AWS does not allow, an operator without a value, a relational
  // comparison with a value that is not a number...
  static absl::StatusOr<FilterPattern> Parse(std::string_view pattern);
  FilterPattern(FilterPattern&&) noexcept;
  FilterPattern& operator=(FilterPattern&&) noexcept;
  ~FilterPattern();

  // True for the empty pattern.
  bool MatchesAll() const;
  bool Matches(std::string_view message) const;

 private:
  FilterPattern() = default;
  std::vector<std::string> all_;
  std::vector<std::string> any_;
  std::vector<std::string> none_;
  std::vector<std::unique_ptr<re2::RE2>> regexes_;
  std::shared_ptr<const internal::StructuredPattern> structured_;  // {...} or [...]
};

}  // namespace trainwatch::query
