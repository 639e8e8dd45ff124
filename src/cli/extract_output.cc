#include "cli/extract_output.h"

#include <algorithm>
#include <charconv>
#include <cmath>

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

void AppendNumber(double value, std::string* out) {
  if (value == 0 && std::signbit(value)) {
    *out += "-0.0";
    return;
  }
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
