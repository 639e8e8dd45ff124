#include "cli/extract_output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "extract/text.h"

namespace trainwatch::cli {

std::string JsonString(std::string_view text) {
  std::string valid;
  if (!extract::IsValidUtf8(text)) {
    extract::AppendWithInvalidUtf8Replaced(text, &valid);
    text = valid;
  }
  std::string out = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

namespace {

// Appends `value` when it is the double nearest to a decimal of at most 15
// significant digits in [1e-7, 1e15) (what training logs print); false
// otherwise. Such a decimal is the only one of <= 15 digits that reads back
// as `value` (DBL_DIG), so it is the shortest, and it is laid out as
// std::to_chars lays it out: fixed or scientific, whichever is shorter,
// fixed on a tie. A tenth of to_chars' work; tests compare the two.
bool AppendShortDecimal(double value, std::string* out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double a = std::fabs(value);
  if (!(a >= 1e-7 && a < 1e15)) return false;
  uint64_t m = 0;
  int exp10 = 0;  // value = m * 10^exp10
  bool found = false;
  for (int k = 0; k <= 22; ++k) {
    double scaled = a * kPow10[k];
    if (scaled >= 1e15) return false;
    // scaled < 1e15: the integer conversion is exact and cheaper than floor().
    double rounded = static_cast<double>(static_cast<int64_t>(scaled + 0.5));
    // m and 10^k are exact doubles, so the division rounds correctly: it
    // gives `a` back exactly when the decimal m * 10^-k reads as `a`.
    if (rounded / kPow10[k] == a) {
      m = static_cast<uint64_t>(rounded);
      exp10 = -k;
      found = true;
      break;
    }
  }
  if (!found || m == 0) return false;
  while (m % 10 == 0) {
    m /= 10;
    ++exp10;
  }
  char digits[20];
  int nd = 0;
  for (uint64_t t = m; t != 0; t /= 10) digits[nd++] = static_cast<char>('0' + t % 10);
  std::reverse(digits, digits + nd);
  int e = nd - 1 + exp10;  // scientific exponent: d.ddd * 10^e
  int abs_e = e < 0 ? -e : e;
  int sci_len = nd + (nd > 1 ? 1 : 0) + 2 + (abs_e >= 100 ? 3 : 2);
  int fixed_len = e >= 0 ? (nd <= e + 1 ? e + 1 : nd + 1) : 2 + (-e - 1) + nd;
  char buf[48];  // fixed_len <= 24 here: |value| in [1e-7, 1e15)
  char* w = buf;
  if (value < 0) *w++ = '-';
  if (fixed_len <= sci_len) {
    if (e >= 0) {
      for (int i = 0; i <= e; ++i) *w++ = i < nd ? digits[i] : '0';
      if (nd > e + 1) {
        *w++ = '.';
        for (int i = e + 1; i < nd; ++i) *w++ = digits[i];
      }
    } else {
      *w++ = '0';
      *w++ = '.';
      for (int i = 0; i < -e - 1; ++i) *w++ = '0';
      for (int i = 0; i < nd; ++i) *w++ = digits[i];
    }
  } else {
    *w++ = digits[0];
    if (nd > 1) {
      *w++ = '.';
      for (int i = 1; i < nd; ++i) *w++ = digits[i];
    }
    *w++ = 'e';
    *w++ = e < 0 ? '-' : '+';
    if (abs_e >= 100) *w++ = static_cast<char>('0' + abs_e / 100);
    *w++ = static_cast<char>('0' + abs_e / 10 % 10);
    *w++ = static_cast<char>('0' + abs_e % 10);
  }
  out->append(buf, static_cast<size_t>(w - buf));
  return true;
}

}  // namespace

void AppendNumber(double value, std::string* out) {
  if (value == 0) {
    *out += std::signbit(value) ? "-0.0" : "0";
    return;
  }
  if (AppendShortDecimal(value, out)) return;
  char buf[32];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

JsonlFormatter::JsonlFormatter(const std::vector<model::MetricDefinition>& defs) {
  for (const model::MetricDefinition& def : defs) {
    prefixes_.push_back("{\"metric\": " + JsonString(def.name) + ", \"value\": ");
  }
}

void JsonlFormatter::Append(const std::vector<extract::ExtractedValue>& values,
                            std::string* out) const {
  for (const extract::ExtractedValue& v : values) {
    *out += prefixes_[v.definition];
    AppendNumber(v.value, out);
    *out += "}\n";
  }
}

void SummaryTable::Add(const std::vector<extract::ExtractedValue>& values) {
  for (const extract::ExtractedValue& v : values) {
    MetricSummary& row = rows_[v.definition];
    if (row.datapoints++ == 0) {
      row.min = row.max = v.value;
    } else {
      row.min = std::min(row.min, v.value);
      row.max = std::max(row.max, v.value);
    }
    row.last = v.value;
  }
}

std::string SummaryTable::Render(const std::vector<model::MetricDefinition>& defs,
                                 const std::vector<uint64_t>& rejected) const {
  std::vector<std::vector<std::string>> cells = {
      {"METRIC", "DATAPOINTS", "REJECTED", "LAST", "MIN", "MAX"}};
  for (size_t i = 0; i < defs.size(); ++i) {
    const MetricSummary& row = rows_[i];
    auto number = [&](double v) {
      if (row.datapoints == 0) return std::string("-");
      std::string s;
      AppendNumber(v, &s);
      return s;
    };
    cells.push_back({extract::QuoteForMessage(defs[i].name, 60), std::to_string(row.datapoints),
                     std::to_string(i < rejected.size() ? rejected[i] : 0), number(row.last),
                     number(row.min), number(row.max)});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      width[c] = std::max(width[c], extract::CountCharacters(line[c]));
    }
  }
  std::string out;
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      size_t pad = width[c] - extract::CountCharacters(line[c]);
      if (c == 0) {
        out += line[c];
        out.append(pad, ' ');
      } else {
        out += "  ";
        out.append(pad, ' ');  // numbers right-aligned
        out += line[c];
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  return out;
}

}  // namespace trainwatch::cli
