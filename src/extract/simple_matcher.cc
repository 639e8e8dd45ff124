#include "extract/simple_matcher.h"

#include <cstring>

#include "extract/regex.h"

namespace trainwatch::extract {
namespace {

bool IsAsciiPunct(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}

bool IsQuantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

// Characters with a meaning outside a class; a plain literal is anything else.
bool IsMeta(char c) { return std::strchr("\\^$.|?*+()[]{}", c) != nullptr && c != '\0'; }

// Reads literal text from pattern[*i] up to the next structure, appending it
// to *out. False when a literal is quantified or an escape is not a plain
// punctuation character (such patterns are left to RE2).
bool ReadLiteral(std::string_view pattern, size_t* i, std::string* out) {
  while (*i < pattern.size()) {
    char c = pattern[*i];
    size_t len;
    if (c == '\\') {
      if (*i + 1 >= pattern.size() || !IsAsciiPunct(pattern[*i + 1])) {
        // \d, \n, \x41, \b, \Q...: a class or an escape; the caller decides.
        return true;
      }
      out->push_back(pattern[*i + 1]);
      len = 2;
    } else if (IsMeta(c)) {
      return true;
    } else {
      // A UTF-8 sequence is one character: copy it whole.
      unsigned char u = static_cast<unsigned char>(c);
      len = u < 0x80 ? 1 : u >= 0xF0 ? 4 : u >= 0xE0 ? 3 : 2;
      if (*i + len > pattern.size()) return false;
      out->append(pattern.substr(*i, len));
    }
    *i += len;
    if (*i < pattern.size() && IsQuantifier(pattern[*i])) return false;
  }
  return true;
}

// Reads a class at pattern[*i]; sets *negated when it matches every non-ASCII
// character, clear when it matches none. False for a shape we leave to RE2.
bool ReadClass(std::string_view pattern, size_t* i, std::string* text, bool* negated) {
  size_t start = *i;
  char c = pattern[start];
  if (c == '.') {
    *negated = true;
    *i += 1;
  } else if (c == '\\') {
    if (start + 1 >= pattern.size()) return false;
    char e = pattern[start + 1];
    if (e == 'd' || e == 's' || e == 'w') {
      *negated = false;
    } else if (e == 'D' || e == 'S' || e == 'W') {
      *negated = true;
    } else {
      return false;
    }
    *i += 2;
  } else if (c == '[') {
    size_t j = start + 1;
    *negated = j < pattern.size() && pattern[j] == '^';
    if (*negated) ++j;
    if (j < pattern.size() && pattern[j] == ']') return false;  // "[]...]": leave to RE2
    for (;;) {
      if (j >= pattern.size()) return false;
      char k = pattern[j];
      if (k == ']') break;
      if (k == '\\') {
        if (j + 1 >= pattern.size()) return false;
        char e = pattern[j + 1];
        if (!(IsAsciiPunct(e) || e == 'd' || e == 's' || e == 'w')) return false;
        j += 2;
      } else if (k == '[' || static_cast<unsigned char>(k) >= 0x80 ||
                 static_cast<unsigned char>(k) < 0x20) {
        return false;
      } else {
        ++j;
      }
    }
    *i = j + 1;
  } else {
    return false;
  }
  *text = std::string(pattern.substr(start, *i - start));
  return true;
}

}  // namespace

std::unique_ptr<SimpleMatcher> SimpleMatcher::Compile(std::string_view pattern) {
  std::unique_ptr<SimpleMatcher> m(new SimpleMatcher());
  size_t i = 0;
  if (i < pattern.size() && pattern[i] == '^') {
    m->anchor_start_ = true;
    ++i;
  }
  if (!ReadLiteral(pattern, &i, &m->head_)) return nullptr;
  if (i + 1 >= pattern.size() || pattern[i] != '(' || pattern[i + 1] == '?') return nullptr;
  ++i;
  std::string class_text;
  bool negated = false;
  if (!ReadClass(pattern, &i, &class_text, &negated)) return nullptr;
  if (i >= pattern.size() || (pattern[i] != '+' && pattern[i] != '*')) return nullptr;
  m->star_ = pattern[i] == '*';
  ++i;
  if (i >= pattern.size() || pattern[i] != ')') return nullptr;  // also refuses lazy "+?"
  ++i;
  if (i < pattern.size() && IsQuantifier(pattern[i])) return nullptr;
  if (!ReadLiteral(pattern, &i, &m->tail_)) return nullptr;
  bool tail_any = false;
  if (pattern.substr(i, 2) == ".*") {
    tail_any = true;
    i += 2;
    if (i < pattern.size() && pattern[i] == '?') ++i;
  }
  if (i < pattern.size() && pattern[i] == '$') {
    m->anchor_end_ = !tail_any;  // ".*$" is always satisfied
    ++i;
  }
  if (i != pattern.size()) return nullptr;

  // Ask RE2 which bytes the class matches.
  auto re = CompileMetricRegex(class_text);
  if (!re.ok()) return nullptr;
  for (int b = 0; b < 0x80; ++b) {
    char ch = static_cast<char>(b);
    m->in_class_[b] = RE2::FullMatch(re2::StringPiece(&ch, 1), **re);
  }
  // Every non-ASCII character must be in (negated forms) or out (the rest):
  // then a byte test is a character test on well-formed UTF-8.
  for (const char* sample : {"\xC3\xA9", "\xC2\x85", "\xE2\x80\xAF", "\xEF\xBF\xBD",
                             "\xF0\x9F\x98\x80", "\xE3\x80\x80"}) {
    if (RE2::FullMatch(sample, **re) != negated) return nullptr;
  }
  for (int b = 0x80; b < 0x100; ++b) m->in_class_[b] = negated;
  // The greedy run must never have to give back a character to the tail.
  if (!m->tail_.empty() && m->in_class_[static_cast<unsigned char>(m->tail_[0])]) return nullptr;
  size_t len = m->head_.size();
  for (uint16_t& s : m->shift_) s = static_cast<uint16_t>(len);
  for (size_t k = 0; k + 1 < len; ++k) {
    m->shift_[static_cast<unsigned char>(m->head_[k])] = static_cast<uint16_t>(len - 1 - k);
  }
  return m;
}

size_t SimpleMatcher::RunEnd(const char* s, size_t n, size_t q) const {
  while (q < n && in_class_[static_cast<unsigned char>(s[q])]) ++q;
  return q;
}

size_t SimpleMatcher::FindHead(const char* s, size_t n, size_t from) const {
  const size_t len = head_.size();
  if (len == 1) {
    const void* hit = std::memchr(s + from, head_[0], n - from);
    return hit == nullptr ? n : static_cast<size_t>(static_cast<const char*>(hit) - s);
  }
  const char last = head_[len - 1];
  for (size_t pos = from; pos + len <= n;) {
    char c = s[pos + len - 1];
    if (c == last && std::memcmp(s + pos, head_.data(), len - 1) == 0) return pos;
    pos += shift_[static_cast<unsigned char>(c)];
  }
  return n;
}

bool SimpleMatcher::TailMatches(const char* s, size_t n, size_t e) const {
  if (n - e < tail_.size()) return false;
  if (!tail_.empty() && std::memcmp(s + e, tail_.data(), tail_.size()) != 0) return false;
  return !anchor_end_ || e + tail_.size() == n;
}

bool SimpleMatcher::Match(std::string_view text, std::string_view* group1) const {
  const char* s = text.data();
  const size_t n = text.size();
  if (head_.empty()) {
    // A match starts where a run of class characters starts (or, for CLASS*,
    // anywhere); the leftmost run whose end is followed by the tail wins.
    size_t q = 0;
    while (q <= n) {
      size_t e = RunEnd(s, n, q);
      if ((star_ || e > q) && TailMatches(s, n, e)) {
        *group1 = text.substr(q, e - q);
        return true;
      }
      if (anchor_start_) return false;
      q = e + 1;
    }
    return false;
  }
  // A match starts at an occurrence of the head; try them left to right.
  bool have_last = false;
  size_t last_e = 0;
  size_t from = 0;
  while (from + head_.size() <= n) {
    size_t p = FindHead(s, n, from);
    if (p == n) return false;
    if (anchor_start_ && p != 0) return false;
    size_t q = p + head_.size();
    // Inside the run that just failed the tail: it ends at the same place, so
    // it fails the same way (this keeps the search linear).
    if (!have_last || q > last_e) {
      size_t e = RunEnd(s, n, q);
      if ((star_ || e > q) && TailMatches(s, n, e)) {
        *group1 = text.substr(q, e - q);
        return true;
      }
      have_last = true;
      last_e = e;
    }
    if (anchor_start_) return false;
    from = p + 1;
  }
  return false;
}

}  // namespace trainwatch::extract
