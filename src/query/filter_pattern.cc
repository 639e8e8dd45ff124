#include "query/filter_pattern.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "re2/re2.h"

namespace trainwatch::query {
namespace {

absl::Status Invalid(std::string_view what, std::string_view pattern) {
  return absl::InvalidArgumentError(
      absl::StrFormat("Invalid filter pattern: %s in \"%s\"", what, pattern));
}

// AWS: only alphanumerics, _ # = @ / ; , - and the operators
// ^ $ ? [ ] { } | \ * + . are allowed in %regex%; no parentheses.
bool AllowedRegexChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  static constexpr std::string_view kAllowed = "_#=@/;,-^$?[]{}|\\*+.";
  return kAllowed.find(c) != std::string_view::npos;
}

}  // namespace

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
    return Invalid("JSON ({...}) and space-delimited ([...]) patterns are not supported by "
                   "trainwatch yet",
                   pattern);
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
      return Invalid(absl::StrFormat("'%c' must be followed by a term (column %d)",
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
      if (!closed) return Invalid("a quoted phrase is not closed", pattern);
      if (term.empty()) {
        // "" is the pattern that matches every event (AWS's documented form).
        if (kind != kAll) return Invalid("?/- cannot apply to an empty quoted phrase", pattern);
        continue;
      }
    } else if (pattern[i] == '%') {
      size_t end = pattern.find('%', i + 1);
      if (end == std::string_view::npos) return Invalid("a %regex% is not closed", pattern);
      std::string_view re = pattern.substr(i + 1, end - i - 1);
      if (re.empty()) return Invalid("an empty %regex%", pattern);
      for (char c : re) {
        if (!AllowedRegexChar(c)) {
          return Invalid(absl::StrFormat("character '%c' is not allowed in a %%regex%% (allowed: "
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
        return Invalid(absl::StrFormat("regex \"%s\": %s", std::string(re), compiled->error()),
                       pattern);
      }
      if (kind != kAll) return Invalid("?/- cannot apply to a %regex%", pattern);
      out.regexes_.push_back(std::move(compiled));
      i = end + 1;
      continue;
    } else {
      while (i < n && pattern[i] != ' ' && pattern[i] != '\t') {
        if (pattern[i] == '"') return Invalid("a quote inside a term", pattern);
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
  return all_.empty() && any_.empty() && none_.empty() && regexes_.empty();
}

bool FilterPattern::Matches(std::string_view message) const {
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
