#pragma once
// CloudWatch Logs filter patterns, the unstructured subset (spec/aws-api.md
// §6.3): terms, "quoted phrases", ?alternatives, -exclusions and %regex%.
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

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace trainwatch::query {

class FilterPattern {
 public:
  // InvalidArgument "Invalid filter pattern: ..." (what and where) for an
  // unbalanced quote, an empty term after ?/-, a regex with characters AWS
  // does not allow, JSON ({...}) or space-delimited ([...]) patterns, which
  // trainwatch does not support yet.
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
};

}  // namespace trainwatch::query
