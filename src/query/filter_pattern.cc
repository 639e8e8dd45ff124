#include "query/filter_pattern.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "query/structured_pattern.h"
#include "re2/re2.h"

namespace trainwatch::query {
namespace {

// AWS: only alphanumerics, _ # = @ / ; , - and the operators
// ^ $ ? [ ] { } | \ * + . are allowed in %regex%; no parentheses.
bool AllowedRegexChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  static constexpr std::string_view kAllowed = "_#=@/;,-^$?[]{}|\\*+.";
  return kAllowed.find(c) != std::string_view::npos;
}

}  // namespace

namespace internal {


absl::Status InvalidPattern(std::string_view what, std::string_view pattern) {
  return absl::InvalidArgumentError(
      absl::StrFormat("Invalid filter pattern: %s in \"%s\"", what, pattern));
}

// An RE2 compiled from a %regex% body, after AWS's alphabet check.
absl::StatusOr<std::unique_ptr<RE2>> CompileFilterRegex(std::string_view re,
                                                      std::string_view pattern) {
  if (re.empty()) return InvalidPattern("an empty %regex%", pattern);
  for (char c : re) {
    if (!AllowedRegexChar(c)) {
      return InvalidPattern(absl::StrFormat("character '%c' is not allowed in a %%regex%% (allowed: "
                                     "alphanumerics, _ # = @ / ; , - and ^ $ ? [ ] { } | \\ "
                                     "* + .)",
                                     c),
                     pattern);
    }
  }
  RE2::Options options;
  options.set_log_errors(false);
  auto compiled = std::make_unique<RE2>(re2::StringPiece(re.data(), re.size()), options);
  if (!compiled->ok()) {
    return InvalidPattern(absl::StrFormat("regex \"%s\": %s", std::string(re), compiled->error()),
                   pattern);
  }
  return compiled;
}

}  // namespace internal

using internal::CompileFilterRegex;
using internal::InvalidPattern;

FilterPattern::FilterPattern(FilterPattern&&) noexcept = default;
FilterPattern& FilterPattern::operator=(FilterPattern&&) noexcept = default;
FilterPattern::~FilterPattern() = default;

absl::StatusOr<FilterPattern> FilterPattern::Parse(std::string_view pattern) {
  FilterPattern out;
  size_t i = 0;
  const size_t n = pattern.size();
  auto skip_space = [&] {
    while (i < n && (pattern[i] == ' ' || pattern[i] == '\t')) ++i;
  };
  skip_space();
  if (i < n && (pattern[i] == '{' || pattern[i] == '[')) {
    absl::StatusOr<std::shared_ptr<const internal::StructuredPattern>> structured =
        internal::ParseStructuredPattern(pattern);
    if (!structured.ok()) return structured.status();
    out.structured_ = *std::move(structured);
    return out;
  }
  while (true) {
    skip_space();
    if (i >= n) break;
    enum { kAll, kAny, kNone } kind = kAll;
    if (pattern[i] == '?') {
      kind = kAny;
      ++i;
    } else if (pattern[i] == '-' && i + 1 < n && pattern[i + 1] != ' ') {
      kind = kNone;
      ++i;
    }
    if (i >= n || pattern[i] == ' ' || pattern[i] == '\t') {
      return InvalidPattern(absl::StrFormat("'%c' must be followed by a term (column %d)",
                                     kind == kAny ? '?' : '-', i),
                     pattern);
    }
    std::string term;
    if (pattern[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        char c = pattern[i];
        if (c == '\\' && i + 1 < n && (pattern[i + 1] == '"' || pattern[i + 1] == '\\')) {
          term.push_back(pattern[i + 1]);
          i += 2;
          continue;
        }
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        term.push_back(c);
        ++i;
      }
      if (!closed) return InvalidPattern("a quoted phrase is not closed", pattern);
      if (term.empty()) {
        // "" is the pattern that matches every event (AWS's documented form).
        if (kind != kAll) return InvalidPattern("?/- cannot apply to an empty quoted phrase", pattern);
        continue;
      }
    } else if (pattern[i] == '%') {
      size_t end = pattern.find('%', i + 1);
      if (end == std::string_view::npos) return InvalidPattern("a %regex% is not closed", pattern);
      absl::StatusOr<std::unique_ptr<RE2>> compiled =
          CompileFilterRegex(pattern.substr(i + 1, end - i - 1), pattern);
      if (!compiled.ok()) return compiled.status();
      if (kind != kAll) return InvalidPattern("?/- cannot apply to a %regex%", pattern);
      out.regexes_.push_back(*std::move(compiled));
      i = end + 1;
      continue;
    } else {
      while (i < n && pattern[i] != ' ' && pattern[i] != '\t') {
        if (pattern[i] == '"') return InvalidPattern("a quote inside a term", pattern);
        term.push_back(pattern[i]);
        ++i;
      }
    }
    switch (kind) {
      case kAll:
        out.all_.push_back(std::move(term));
        break;
      case kAny:
        out.any_.push_back(std::move(term));
        break;
      case kNone:
        out.none_.push_back(std::move(term));
        break;
    }
  }
  return out;
}

bool FilterPattern::MatchesAll() const {
  return all_.empty() && any_.empty() && none_.empty() && regexes_.empty() && !structured_;
}

bool FilterPattern::Matches(std::string_view message) const {
  if (structured_) return structured_->Matches(message);
  for (const std::string& t : all_) {
    if (message.find(t) == std::string_view::npos) return false;
  }
  for (const std::string& t : none_) {
    if (message.find(t) != std::string_view::npos) return false;
  }
  if (!any_.empty()) {
    bool found = false;
    for (const std::string& t : any_) {
      if (message.find(t) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  for (const auto& re : regexes_) {
    if (!RE2::PartialMatch(re2::StringPiece(message.data(), message.size()), *re)) return false;
  }
  return true;
}

}  // namespace trainwatch::query
