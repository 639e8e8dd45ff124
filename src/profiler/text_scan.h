#pragma once
// Allocation-free helpers for the line-and-column text of /proc and /sys.

#include <charconv>
#include <cstdint>
#include <string_view>

namespace trainwatch::profiler {

// Iterates the lines of `text` ('\n'-separated; a last line without '\n' counts).
class LineIterator {
 public:
  explicit LineIterator(std::string_view text) : rest_(text) {}
  // Sets *line to the next line without its '\n'; false at the end.
  bool Next(std::string_view* line) {
    if (rest_.empty()) return false;
    size_t nl = rest_.find('\n');
    if (nl == std::string_view::npos) {
      *line = rest_;
      rest_ = {};
    } else {
      *line = rest_.substr(0, nl);
      rest_.remove_prefix(nl + 1);
    }
    return true;
  }

 private:
  std::string_view rest_;
};

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits `line` at runs of blanks into at most `max` fields; returns how many
// were found (fields beyond `max` are ignored).
inline int SplitFields(std::string_view line, std::string_view* fields, int max) {
  int n = 0;
  size_t i = 0;
  while (n < max) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    fields[n++] = line.substr(start, i - start);
  }
  return n;
}

// Decimal unsigned integer, the whole of `text`.
inline bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

inline bool ParseI64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

inline bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace trainwatch::profiler
