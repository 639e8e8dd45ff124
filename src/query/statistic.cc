#include "query/statistic.h"

#include <cctype>
#include <cstdlib>

namespace trainwatch::query {
namespace {

constexpr std::pair<PlainStatistic, std::string_view> kPlain[] = {
    {PlainStatistic::kSampleCount, "SampleCount"}, {PlainStatistic::kAverage, "Average"},
    {PlainStatistic::kSum, "Sum"},                 {PlainStatistic::kMinimum, "Minimum"},
    {PlainStatistic::kMaximum, "Maximum"},
};

// A number 0-100 with up to 10 decimals ("99", "99.9", "0.0", "100").
bool ParsePercentNumber(std::string_view s, double* out) {
  if (s.empty() || s.size() > 14) return false;
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  if (whole.empty() || whole.size() > 3) return false;
  for (char c : whole) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  if (dot != std::string_view::npos) {
    std::string_view frac = s.substr(dot + 1);
    if (frac.empty() || frac.size() > 10) return false;
    for (char c : frac) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  double v = std::strtod(std::string(s).c_str(), nullptr);
  if (v < 0 || v > 100) return false;
  *out = v;
  return true;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "(a:b)" with numbers, "%" percentages or empty bounds: well-formed ranges
// of the TM/WM/TC/TS/PR function forms.
bool WellFormedRange(std::string_view s) {
  if (s.size() < 3 || s.front() != '(' || s.back() != ')') return false;
  s = s.substr(1, s.size() - 2);
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  for (std::string_view part : {s.substr(0, colon), s.substr(colon + 1)}) {
    if (part.empty()) continue;
    if (part.back() == '%') part.remove_suffix(1);
    double v;
    if (!part.empty() && part.front() != '-' && !ParsePercentNumber(part, &v)) {
      // absolute values may exceed 100
      char* end = nullptr;
      std::string str(part);
      std::strtod(str.c_str(), &end);
      if (end == nullptr || *end != '\0') return false;
    }
  }
  return true;
}

}  // namespace

std::optional<PlainStatistic> ParsePlainStatistic(std::string_view name) {
  for (const auto& [s, n] : kPlain) {
    if (n == name) return s;
  }
  return std::nullopt;
}

std::string_view PlainStatisticName(PlainStatistic s) {
  for (const auto& [k, n] : kPlain) {
    if (k == s) return n;
  }
  return "";
}

ExtendedParse ParseExtendedStatistic(std::string_view name, double* percentile) {
  if (StartsWith(name, "p") && ParsePercentNumber(name.substr(1), percentile)) {
    return ExtendedParse::kOk;
  }
  if (name == "IQM") return ExtendedParse::kUnsupported;
  for (std::string_view short_form : {"tm", "wm", "tc", "ts"}) {
    double v;
    if (StartsWith(name, short_form) && ParsePercentNumber(name.substr(2), &v)) {
      return ExtendedParse::kUnsupported;
    }
  }
  for (std::string_view fn : {"TM", "WM", "TC", "TS", "PR"}) {
    if (StartsWith(name, fn) && WellFormedRange(name.substr(2))) return ExtendedParse::kUnsupported;
  }
  return ExtendedParse::kMalformed;
}

std::optional<Statistic> ParseStatistic(std::string_view name) {
  Statistic out;
  out.name = std::string(name);
  if (std::optional<PlainStatistic> plain = ParsePlainStatistic(name)) {
    switch (*plain) {
      case PlainStatistic::kSampleCount: out.kind = Statistic::Kind::kSampleCount; break;
      case PlainStatistic::kAverage: out.kind = Statistic::Kind::kAverage; break;
      case PlainStatistic::kSum: out.kind = Statistic::Kind::kSum; break;
      case PlainStatistic::kMinimum: out.kind = Statistic::Kind::kMinimum; break;
      case PlainStatistic::kMaximum: out.kind = Statistic::Kind::kMaximum; break;
    }
    return out;
  }
  if (ParseExtendedStatistic(name, &out.percentile) != ExtendedParse::kOk) return std::nullopt;
  out.kind = Statistic::Kind::kPercentile;
  return out;
}

std::optional<double> Evaluate(const ParsedStatistic& stat, const store::Aggregate& agg) {
  if (agg.empty()) return std::nullopt;
  if (!stat.plain) return agg.Percentile(stat.percentile / 100.0);
  switch (*stat.plain) {
    case PlainStatistic::kSampleCount:
      return agg.count;
    case PlainStatistic::kAverage:
      return agg.ReportedSum() / agg.count;
    case PlainStatistic::kSum:
      return agg.ReportedSum();
    case PlainStatistic::kMinimum:
      return agg.min;
    case PlainStatistic::kMaximum:
      return agg.max;
  }
  return std::nullopt;
}

}  // namespace trainwatch::query
