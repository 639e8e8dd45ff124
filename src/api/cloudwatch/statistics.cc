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

bool IsAllowedPeriod(int64_t period_s) {
  return period_s == 1 || period_s == 5 || period_s == 10 || period_s == 20 || period_s == 30 ||
         (period_s > 0 && period_s % 60 == 0);
}

int64_t RoundStartMs(int64_t start_ms, int64_t period_s, int64_t now_ms) {
  auto floor_to = [](int64_t t, int64_t step) {
    int64_t r = t % step;
    if (r < 0) r += step;
    return t - r;
  };
  if (period_s < 60) return floor_to(start_ms, period_s * kSecondMs);
  int64_t age = now_ms - start_ms;
  if (age < 15 * kDayMs) return floor_to(start_ms, kMinuteMs);
  if (age < 63 * kDayMs) return floor_to(start_ms, 5 * kMinuteMs);
  return floor_to(start_ms, kHourMs);
}

bool PeriodServable(int64_t start_ms, int64_t period_s, int64_t now_ms) {
  int64_t age = now_ms - start_ms;
  if (age < 3 * kHourMs) return true;
  if (age < 15 * kDayMs) return period_s % 60 == 0;
  if (age < 63 * kDayMs) return period_s % 300 == 0;
  return period_s % 3600 == 0;
}

int64_t RequestedDatapoints(int64_t start_ms, int64_t end_ms, int64_t period_s, int64_t now_ms) {
  int64_t start = RoundStartMs(start_ms, period_s, now_ms);
  if (end_ms <= start) return 0;
  int64_t step = period_s * kSecondMs;
  return (end_ms - start + step - 1) / step;
}

}  // namespace trainwatch::api::cloudwatch
