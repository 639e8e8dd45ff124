#include "extract/non_finite_probe.h"

namespace trainwatch::extract {

namespace {

constexpr std::string_view kNonFiniteGroup = "(?i:[-+]?(?:nan|inf(?:inity)?))";

// The index just past a character class that starts at `i` ('['), or npos.
size_t SkipClass(std::string_view p, size_t i) {
  size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is literal
  while (j < p.size()) {
    if (p[j] == '\\') {
      j += 2;
      continue;
    }
    if (p[j] == '[' && j + 1 < p.size() && p[j + 1] == ':') {  // [:alpha:]
      const size_t end = p.find(":]", j + 2);
      if (end == std::string_view::npos) return std::string_view::npos;
      j = end + 2;
      continue;
    }
    if (p[j] == ']') return j + 1;
    ++j;
  }
  return std::string_view::npos;
}

// Whether the '(' at i opens a capturing group: "(" not followed by "?",
// or a named group "(?P<name>" / "(?<name>".
bool OpensCapture(std::string_view p, size_t i, size_t* body) {
  if (i + 1 >= p.size() || p[i + 1] != '?') {
    *body = i + 1;
    return true;
  }
  std::string_view rest = p.substr(i + 2);
  if (rest.substr(0, 2) == "P<" || (rest.substr(0, 1) == "<" && rest.substr(0, 2) != "<=" &&
                                    rest.substr(0, 2) != "<!")) {
    const size_t close = p.find('>', i);
    if (close == std::string_view::npos) return false;
    *body = close + 1;
    return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> NonFiniteProbePattern(std::string_view p) {
  size_t open = std::string_view::npos, body = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      if (i >= p.size()) return std::nullopt;
      continue;
    }
    if (p[i] == '[') {
      const size_t end = SkipClass(p, i);
      if (end == std::string_view::npos) return std::nullopt;
      i = end - 1;
      continue;
    }
    if (p[i] == '(' && OpensCapture(p, i, &body)) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return std::nullopt;
  int depth = 1;
  for (size_t i = body; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] == '[') {
      const size_t end = SkipClass(p, i);
      if (end == std::string_view::npos) return std::nullopt;
      i = end - 1;
      continue;
    }
    if (p[i] == '(') ++depth;
    if (p[i] == ')' && --depth == 0) {
      std::string out(p.substr(0, body));
      out += kNonFiniteGroup;
      out += p.substr(i);
      return out;
    }
  }
  return std::nullopt;
}

bool MayHoldNonFinite(std::string_view line) {
  for (size_t i = 0; i + 3 <= line.size(); ++i) {
    const char a = static_cast<char>(line[i] | 0x20);
    if (a != 'n' && a != 'i') continue;
    const char b = static_cast<char>(line[i + 1] | 0x20);
    const char c = static_cast<char>(line[i + 2] | 0x20);
    if ((a == 'n' && b == 'a' && c == 'n') || (a == 'i' && b == 'n' && c == 'f')) return true;
  }
  return false;
}

}  // namespace trainwatch::extract
