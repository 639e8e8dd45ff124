#include "api/cloudwatch/statistics.h"

#include <array>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace trainwatch::api::cloudwatch {
namespace {

constexpr std::array<std::string_view, 27> kUnits = {
    "Seconds",          "Microseconds",     "Milliseconds",     "Bytes",
    "Kilobytes",        "Megabytes",        "Gigabytes",        "Terabytes",
    "Bits",             "Kilobits",         "Megabits",         "Gigabits",
    "Terabits",         "Percent",          "Count",            "Bytes/Second",
    "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
    "Bits/Second",      "Kilobits/Second",  "Megabits/Second",  "Gigabits/Second",
    "Terabits/Second",  "Count/Second",     "None"};

// "99", "99.9", "0.0000000001": digits, optional '.' and 1-10 decimals.
bool ParsePercent(std::string_view s, double* out) {
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  if (whole.empty() || whole.size() > 3) return false;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
  }
  if (dot != std::string_view::npos) {
    std::string_view frac = s.substr(dot + 1);
    if (frac.empty() || frac.size() > 10) return false;
    for (char c : frac) {
      if (c < '0' || c > '9') return false;
    }
  }
  double v = std::strtod(std::string(s).c_str(), nullptr);
  if (v < 0 || v > 100) return false;
  *out = v;
  return true;
}

bool StartsWithNumberAfter(std::string_view s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  double unused;
  return ParsePercent(s.substr(prefix.size()), &unused);
}

}  // namespace

bool IsStandardUnit(std::string_view unit) {
  for (std::string_view u : kUnits) {
    if (u == unit) return true;
  }
  return false;
}

std::optional<Statistic> ParsePlainStatistic(std::string_view text) {
  using K = Statistic::Kind;
  static constexpr std::pair<std::string_view, K> kPlain[] = {
      {"SampleCount", K::kSampleCount}, {"Average", K::kAverage}, {"Sum", K::kSum},
      {"Minimum", K::kMinimum},         {"Maximum", K::kMaximum}};
  for (const auto& [name, kind] : kPlain) {
    if (name == text) return Statistic{kind, 0, std::string(text)};
  }
  return std::nullopt;
}

absl::StatusOr<Statistic> ParseExtendedStatistic(std::string_view text) {
  double p;
  if (text.size() > 1 && text[0] == 'p' && ParsePercent(text.substr(1), &p)) {
    return Statistic{Statistic::Kind::kPercentile, p, std::string(text)};
  }
  bool later = text == "IQM";
  for (std::string_view prefix : {"tm", "wm", "tc", "ts"}) {
    later = later || StartsWithNumberAfter(text, prefix);
  }
  for (std::string_view fn : {"TM(", "WM(", "TC(", "TS(", "PR("}) {
    later = later || (text.size() > fn.size() + 1 && text.substr(0, fn.size()) == fn &&
                      text.back() == ')' && text.find(':') != std::string_view::npos);
  }
  if (later) {
    return absl::UnimplementedError(
        "is not supported by trainwatch yet; percentiles (p0 to p100, e.g. p99.9) are.");
  }
  return absl::InvalidArgumentError(
      "is not a valid statistic; use SampleCount, Average, Sum, Minimum, Maximum or a "
      "percentile such as p99 or p99.9.");
}

absl::StatusOr<Statistic> ParseAnyStatistic(std::string_view text) {
  if (auto plain = ParsePlainStatistic(text)) return *plain;
  return ParseExtendedStatistic(text);
}

}  // namespace trainwatch::api::cloudwatch
