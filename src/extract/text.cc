#include "extract/text.h"

#include <cstdint>
#include <cstring>

namespace trainwatch::extract {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Length of the well-formed sequence starting at p (1..4), or 0 when it is
// ill-formed; then *bad is the length of its maximal subpart (>= 1): the
// longest prefix that could still have begun a well-formed sequence.
size_t SequenceLength(const unsigned char* p, const unsigned char* end, size_t* bad) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;  // 80..BF continuation without lead, C0, C1 (overlong), F5..FF
    return 0;
  }
  size_t i = 1;
  for (; i <= need; ++i) {
    if (p + i >= end) break;
    unsigned char b = p[i];
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  if (i == need + 1) return need + 1;
  *bad = i;
  return 0;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  while (p < end) {
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & kHighBits) != 0) break;
      p += 8;
    }
    while (p < end && *p < 0x80) ++p;
    if (p == end) return true;
    size_t bad = 0;
    size_t n = SequenceLength(p, end, &bad);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

void AppendWithInvalidUtf8Replaced(std::string_view text, std::string* out) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  const unsigned char* begin = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* p = begin;
  const unsigned char* end = p + text.size();
  const unsigned char* copied = p;  // bytes before this are in *out
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    size_t bad = 0;
    size_t n = SequenceLength(p, end, &bad);
    if (n != 0) {
      p += n;
      continue;
    }
    out->append(reinterpret_cast<const char*>(copied), static_cast<size_t>(p - copied));
    out->append(kReplacement, 3);
    p += bad;
    copied = p;
  }
  out->append(reinterpret_cast<const char*>(copied), static_cast<size_t>(end - copied));
}

bool HasControlBytes(std::string_view text) {
  for (char c : text) {
    if (IsControlByte(c)) return true;
  }
  return false;
}

void AppendSageMakerEscaped(std::string_view text, std::string* out) {
  size_t copied = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (!IsControlByte(text[i])) continue;
    out->append(text.data() + copied, i - copied);
    char esc[4] = {'#', static_cast<char>('0' + (c >> 6)), static_cast<char>('0' + ((c >> 3) & 7)),
                   static_cast<char>('0' + (c & 7))};
    out->append(esc, 4);
    copied = i + 1;
  }
  out->append(text.data() + copied, text.size() - copied);
}

size_t CountCharacters(std::string_view text) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  size_t n = 0;
  while (p < end) {
    size_t bad = 0;
    size_t len = SequenceLength(p, end, &bad);
    p += len != 0 ? len : bad;
    ++n;
  }
  return n;
}

std::string QuoteForMessage(std::string_view text, size_t max_chars) {
  std::string out;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  size_t chars = 0;
  while (p < end) {
    if (chars == max_chars) {
      out += "...";
      break;
    }
    size_t bad = 0;
    size_t len = SequenceLength(p, end, &bad);
    if (len == 1 && IsControlByte(static_cast<char>(*p))) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[*p >> 4];
      out += kHex[*p & 15];
    } else if (len == 0) {
      for (size_t i = 0; i < bad; ++i) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[p[i] >> 4];
        out += kHex[p[i] & 15];
      }
    } else {
      out.append(reinterpret_cast<const char*>(p), len);
    }
    p += len != 0 ? len : bad;
    ++chars;
  }
  return out;
}

}  // namespace trainwatch::extract
