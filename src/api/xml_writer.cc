#include "api/xml_writer.h"

#include <charconv>
#include <cmath>

namespace trainwatch::api {

void XmlWriter::Indent() {
  if (!out_.empty()) out_.push_back('\n');
  out_.append(static_cast<size_t>(depth_) * 2, ' ');
}

void XmlWriter::Open(std::string_view tag, std::string_view attrs) {
  Indent();
  out_.push_back('<');
  out_.append(tag);
  if (!attrs.empty()) {
    out_.push_back(' ');
    out_.append(attrs);
  }
  out_.push_back('>');
  ++depth_;
}

void XmlWriter::Close(std::string_view tag) {
  --depth_;
  Indent();
  out_.append("</");
  out_.append(tag);
  out_.push_back('>');
}

void XmlWriter::Element(std::string_view tag, std::string_view text) {
  Indent();
  out_.push_back('<');
  out_.append(tag);
  out_.push_back('>');
  AppendXmlEscaped(text, &out_);
  out_.append("</");
  out_.append(tag);
  out_.push_back('>');
}

void XmlWriter::Empty(std::string_view tag) {
  Indent();
  out_.push_back('<');
  out_.append(tag);
  out_.append("/>");
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates, beyond Unicode, and the non-characters XML forbids.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp == 0xFFFE || cp == 0xFFFF) {
    return 0;
  }
  return n;
}

}  // namespace

void AppendXmlEscaped(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      switch (c) {
        case '&': out->append("&amp;"); break;
        case '<': out->append("&lt;"); break;
        case '>': out->append("&gt;"); break;
        case '\t':
        case '\n':
          out->push_back(c);
          break;
        case '\r':
          out->append("&#13;");  // a raw CR would be normalised away by the parser
          break;
        default:
          if (u < 0x20 || u == 0x7F) {
            out->append("\xEF\xBF\xBD");
          } else {
            out->push_back(c);
          }
      }
      ++i;
      continue;
    }
    size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out->append("\xEF\xBF\xBD");
      ++i;
    } else {
      out->append(text.substr(i, n));
      i += n;
    }
  }
}

std::string FormatDouble(double value) {
  if (!std::isfinite(value)) return "0.0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "0.0";
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace trainwatch::api
