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
bool IsMeta(char c) { return c != '\0' && std::strchr("\\^$.|?*+()[]{}", c) != nullptr; }

// Reads literal text from pattern[*i] up to the next structure, appending it
// to *out. False when a literal is quantified (such patterns are left to RE2).
bool ReadLiteral(std::string_view pattern, size_t* i, std::string* out) {
  while (*i < pattern.size()) {
    char c = pattern[*i];
    size_t len;
    if (c == '\\') {
      // \d, \n, \x41, \b, \Q...: a class or an escape; the caller decides.
      if (*i + 1 >= pattern.size() || !IsAsciiPunct(pattern[*i + 1])) return true;
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

// True when pattern[i] starts a class we handle.
bool StartsClass(std::string_view pattern, size_t i) {
  if (i >= pattern.size()) return false;
  char c = pattern[i];
  if (c == '.' || c == '[') return true;
  return c == '\\' && i + 1 < pattern.size() && std::strchr("dDsSwW", pattern[i + 1]) != nullptr &&
         pattern[i + 1] != '\0';
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
    char e = pattern[start + 1];
    *negated = e == 'D' || e == 'S' || e == 'W';
    *i += 2;
  } else {  // '['
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
  bool captured = false;
  bool tail_any = false;
  while (i < pattern.size()) {
    if (pattern.substr(i, 2) == ".*") {  // ".*" or ".*?" at the end: matches anything
      size_t j = i + 2;
      if (j < pattern.size() && pattern[j] == '?') ++j;
      if (j < pattern.size() && pattern[j] == '$') ++j;
      if (j != pattern.size()) return nullptr;
      tail_any = true;
      break;
    }
    if (pattern[i] == '$') {
      if (i + 1 != pattern.size()) return nullptr;
      m->anchor_end_ = true;
      break;
    }
    bool group = pattern[i] == '(';
    if (group) {
      if (captured || i + 1 >= pattern.size() || pattern[i + 1] == '?') return nullptr;
      ++i;
    }
    if (StartsClass(pattern, i)) {
      std::string class_text;
      bool negated = false;
      if (!ReadClass(pattern, &i, &class_text, &negated)) return nullptr;
      if (i >= pattern.size() || (pattern[i] != '+' && pattern[i] != '*')) return nullptr;
      Item run;
      run.is_run = true;
      run.star = pattern[i] == '*';
      ++i;
      if (i < pattern.size() && (pattern[i] == '?' || pattern[i] == '+')) return nullptr;  // lazy
      // Ask RE2 which bytes the class matches.
      auto re = CompileMetricRegex(class_text);
      if (!re.ok()) return nullptr;
      ByteSet set;
      for (int b = 0; b < 0x80; ++b) {
        char ch = static_cast<char>(b);
        set.has[b] = RE2::FullMatch(re2::StringPiece(&ch, 1), **re);
      }
      // Every non-ASCII character must be in (negated forms) or out (the
      // rest): then a byte test is a character test on well-formed UTF-8.
      for (const char* sample : {"\xC3\xA9", "\xC2\x85", "\xE2\x80\xAF", "\xEF\xBF\xBD",
                                 "\xF0\x9F\x98\x80", "\xE3\x80\x80"}) {
        if (RE2::FullMatch(sample, **re) != negated) return nullptr;
      }
      for (int b = 0x80; b < 0x100; ++b) set.has[b] = negated;
      run.cls = static_cast<int>(m->classes_.size());
      m->classes_.push_back(set);
      if (group) {
        if (i >= pattern.size() || pattern[i] != ')') return nullptr;
        ++i;
        if (i < pattern.size() && IsQuantifier(pattern[i])) return nullptr;
        captured = true;
        m->capture_ = m->items_.size();
      }
      m->items_.push_back(run);
      continue;
    }
    if (group) return nullptr;
    std::string literal;
    size_t before = i;
    if (!ReadLiteral(pattern, &i, &literal)) return nullptr;
    if (i == before) return nullptr;  // a construct we do not handle
    if (!m->items_.empty() && !m->items_.back().is_run) {
      m->items_.back().literal += literal;
    } else {
      Item item;
      item.literal = std::move(literal);
      m->items_.push_back(std::move(item));
    }
  }
  if (!captured) return nullptr;
  if (tail_any) m->anchor_end_ = false;  // ".*$" is always satisfied

  // No run may have to give characters back: nothing that can follow it may
  // begin with a character of its class.
  ByteSet follow;  // bytes that can begin what follows items_[k]
  for (size_t k = m->items_.size(); k-- > 0;) {
    const Item& item = m->items_[k];
    if (item.is_run) {
      const ByteSet& cls = m->classes_[item.cls];
      for (int b = 0; b < 256; ++b) {
        if (cls.has[b] && follow.has[b]) return nullptr;
      }
      if (item.star) {
        for (int b = 0; b < 256; ++b) follow.has[b] = follow.has[b] || cls.has[b];
      } else {
        follow = cls;
      }
    } else {
      follow = ByteSet();
      follow.has[static_cast<unsigned char>(item.literal[0])] = true;
    }
  }
  if (!m->items_[0].is_run) {
    const std::string& head = m->items_[0].literal;
    for (uint16_t& s : m->shift_) s = static_cast<uint16_t>(head.size());
    for (size_t k = 0; k + 1 < head.size(); ++k) {
      m->shift_[static_cast<unsigned char>(head[k])] = static_cast<uint16_t>(head.size() - 1 - k);
    }
  }
  return m;
}

size_t SimpleMatcher::RunEnd(const char* s, size_t n, size_t q, const ByteSet& set,
                             size_t* work) const {
  size_t start = q;
  while (q < n && set.has[static_cast<unsigned char>(s[q])]) ++q;
  *work += q - start + 1;
  return q;
}

size_t SimpleMatcher::FindHead(const char* s, size_t n, size_t from, size_t* work) const {
  const std::string& head = items_[0].literal;
  const size_t len = head.size();
  if (len == 1) {
    const void* hit = std::memchr(s + from, head[0], n - from);
    size_t at = hit == nullptr ? n : static_cast<size_t>(static_cast<const char*>(hit) - s);
    *work += (at - from) / 16 + 1;
    return at;
  }
  const char last = head[len - 1];
  for (size_t pos = from; pos + len <= n;) {
    ++*work;
    char c = s[pos + len - 1];
    if (c == last && std::memcmp(s + pos, head.data(), len - 1) == 0) return pos;
    pos += shift_[static_cast<unsigned char>(c)];
  }
  return n;
}

bool SimpleMatcher::MatchRest(const char* s, size_t n, size_t first, size_t pos,
                              std::string_view text, std::string_view* group, size_t* work) const {
  for (size_t k = first; k < items_.size(); ++k) {
    const Item& item = items_[k];
    if (item.is_run) {
      size_t e = RunEnd(s, n, pos, classes_[item.cls], work);
      if (!item.star && e == pos) return false;
      if (k == capture_) *group = text.substr(pos, e - pos);
      pos = e;
    } else {
      const std::string& lit = item.literal;
      *work += lit.size();
      if (n - pos < lit.size() || std::memcmp(s + pos, lit.data(), lit.size()) != 0) return false;
      pos += lit.size();
    }
  }
  return !anchor_end_ || pos == n;
}

SimpleMatcher::Result SimpleMatcher::Match(std::string_view text, std::string_view* group1) const {
  const char* s = text.data();
  const size_t n = text.size();
  // Beyond this much work the search is not linear any more; let RE2 do it.
  const size_t budget = 8 * n + 256;
  size_t work = 0;
  std::string_view group;
  if (items_[0].is_run) {
    // A match starts where a run of the first class starts (or, for CLASS*,
    // anywhere); every start inside one run leads to the same run end and so
    // to the same outcome: try the leftmost start of each run.
    const Item& first = items_[0];
    const ByteSet& cls = classes_[first.cls];
    size_t q = 0;
    while (q <= n) {
      if (work > budget) return Result::kGaveUp;
      size_t e = RunEnd(s, n, q, cls, &work);
      if ((first.star || e > q) && MatchRest(s, n, 1, e, text, &group, &work)) {
        if (capture_ == 0) group = text.substr(q, e - q);
        *group1 = group;
        return Result::kMatch;
      }
      if (anchor_start_) return Result::kNoMatch;
      q = e + 1;
    }
    return Result::kNoMatch;
  }
  // A match starts at an occurrence of the leading literal; try them left to
  // right. When a run follows the literal, a start whose run begins inside
  // the run that just failed ends at the same place and fails the same way.
  const size_t head = items_[0].literal.size();
  const bool run_follows = items_.size() > 1 && items_[1].is_run;
  bool have_last = false;
  size_t last_e = 0;
  size_t from = 0;
  while (from + head <= n) {
    if (work > budget) return Result::kGaveUp;
    size_t p = FindHead(s, n, from, &work);
    if (p == n) return Result::kNoMatch;
    if (anchor_start_ && p != 0) return Result::kNoMatch;
    size_t q = p + head;
    if (!(run_follows && have_last && q <= last_e)) {
      if (run_follows) {
        have_last = true;
        last_e = RunEnd(s, n, q, classes_[items_[1].cls], &work);
      }
      if (MatchRest(s, n, 1, q, text, &group, &work)) {
        *group1 = group;
        return Result::kMatch;
      }
    }
    if (anchor_start_) return Result::kNoMatch;
    from = p + 1;
  }
  return Result::kNoMatch;
}

}  // namespace trainwatch::extract
