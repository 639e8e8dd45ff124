// FilterLogEvents' pattern syntax and the position tokens.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/logs/logs.h"

namespace trainwatch::api::logs {
namespace {

absl::Status Invalid(std::string_view why) {
  return InvalidParameterException(absl::StrFormat("Invalid filter pattern: %s", why));
}

bool RegexCharAllowed(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("_#=@/;,-^$?[]{}|\\*+. ").find(c) != std::string_view::npos;
}

}  // namespace

absl::StatusOr<LogFilter> ParseFilterPattern(std::string_view pattern) {
  LogFilter filter;
  while (!pattern.empty() && pattern.front() == ' ') pattern.remove_prefix(1);
  while (!pattern.empty() && pattern.back() == ' ') pattern.remove_suffix(1);
  if (pattern.empty()) return filter;
  if (pattern.size() >= 2 && pattern.front() == '%' && pattern.back() == '%') {
    std::string_view regex = pattern.substr(1, pattern.size() - 2);
    if (regex.empty()) return Invalid("the regular expression between % and % is empty");
    for (char c : regex) {
      if (!RegexCharAllowed(c)) {
        return Invalid(absl::StrFormat(
            "character '%c' is not allowed in a %%regex%% pattern (allowed: letters, digits, "
            "_ # = @ / ; , - and ^ $ ? [ ] { } | \\ * + .)",
            c));
      }
    }
    filter.regex = std::string(regex);
    return filter;
  }
  if (pattern.front() == '{' || pattern.front() == '[') {
    return Invalid(
        "JSON ({ $.field = value }) and space-delimited ([w1, w2]) patterns are not supported "
        "by trainwatch yet; use terms, \"phrases\", ?terms, -terms or %regex%");
  }
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern[i] == ' ') {
      ++i;
      continue;
    }
    char mode = ' ';
    if (pattern[i] == '?' || pattern[i] == '-') {
      mode = pattern[i];
      ++i;
      if (i == pattern.size() || pattern[i] == ' ') {
        return Invalid(absl::StrFormat("'%c' must be followed by a term", mode));
      }
    }
    std::string term;
    if (pattern[i] == '"') {
      ++i;
      bool closed = false;
      while (i < pattern.size()) {
        char c = pattern[i++];
        if (c == '\\' && i < pattern.size()) {
          term.push_back(pattern[i++]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          term.push_back(c);
        }
      }
      if (!closed) return Invalid("a quoted phrase is not closed with \"");
      if (i < pattern.size() && pattern[i] != ' ') {
        return Invalid("a quoted phrase must be followed by a space or the end");
      }
    } else {
      while (i < pattern.size() && pattern[i] != ' ') {
        if (pattern[i] == '"') return Invalid("a term contains '\"'; quote the whole phrase");
        term.push_back(pattern[i++]);
      }
    }
    if (term.empty()) continue;  // "" matches everything
    if (mode == '?') {
      filter.any_of.push_back(std::move(term));
    } else if (mode == '-') {
      filter.none_of.push_back(std::move(term));
    } else {
      filter.all_of.push_back(std::move(term));
    }
  }
  return filter;
}

std::string PositionToken(char direction, const LogPosition& position) {
  return absl::StrFormat("%c/%s", direction, EventId(position));
}

std::string EventId(const LogPosition& position) {
  return absl::StrFormat("%016d%020d%020d", 0, position.t_ms, position.seq);
}

std::optional<std::pair<char, LogPosition>> ParsePositionToken(std::string_view token) {
  if (token.size() != 58 || (token[0] != 'f' && token[0] != 'b') || token[1] != '/') {
    return std::nullopt;
  }
  std::string_view digits = token.substr(2);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  if (digits.substr(0, 16).find_first_not_of('0') != std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view s) {
    int64_t v = 0;
    for (char c : s) {
      if (v > (INT64_MAX - 9) / 10) return int64_t{-1};
      v = v * 10 + (c - '0');
    }
    return v;
  };
  int64_t t = number(digits.substr(16, 20));
  int64_t seq = number(digits.substr(36, 20));
  if (t < 0 || seq < 0) return std::nullopt;
  return std::pair{token[0], LogPosition{t, seq}};
}

}  // namespace trainwatch::api::logs
