#include "util/time_parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace trainwatch::util {
namespace {

constexpr std::string_view kDurationForms = "a number with a unit: 100ms, 1s, 5m, 3h, 15d, 2w";

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

// Days from civil (Howard Hinnant's algorithm), proleptic Gregorian.
int64_t DaysFromCivilImpl(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

bool ReadDigits(std::string_view s, size_t* pos, size_t count, int* out) {
  if (*pos + count > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = s[*pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *pos += count;
  *out = v;
  return true;
}

absl::StatusOr<int64_t> ParseIso8601(std::string_view s) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "time \"%s\": want ISO-8601 like 2024-01-01T00:00:00Z, epoch seconds, or now-3h",
        std::string(s)));
  };
  size_t pos = 0;
  int year, month, day;
  if (!ReadDigits(s, &pos, 4, &year) || pos >= s.size() || s[pos++] != '-' ||
      !ReadDigits(s, &pos, 2, &month) || pos >= s.size() || s[pos++] != '-' ||
      !ReadDigits(s, &pos, 2, &day)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31) return bad();
  int hour = 0, minute = 0, second = 0;
  int64_t millis = 0;
  int64_t offset_min = 0;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') return bad();
    ++pos;
    if (!ReadDigits(s, &pos, 2, &hour) || pos >= s.size() || s[pos++] != ':' ||
        !ReadDigits(s, &pos, 2, &minute)) {
      return bad();
    }
    if (pos < s.size() && s[pos] == ':') {
      ++pos;
      if (!ReadDigits(s, &pos, 2, &second)) return bad();
      if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
        ++pos;
        int64_t scale = 100;
        size_t start = pos;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
          millis += (s[pos] - '0') * scale;
          scale /= 10;
          ++pos;
        }
        if (pos == start) return bad();
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return bad();
    if (pos < s.size()) {
      char z = s[pos];
      if (z == 'Z' || z == 'z') {
        ++pos;
      } else if (z == '+' || z == '-') {
        ++pos;
        int oh, om = 0;
        if (!ReadDigits(s, &pos, 2, &oh)) return bad();
        if (pos < s.size() && s[pos] == ':') ++pos;
        if (pos < s.size() && !ReadDigits(s, &pos, 2, &om)) return bad();
        offset_min = (oh * 60 + om) * (z == '+' ? 1 : -1);
      } else {
        return bad();
      }
    }
  }
  if (pos != s.size()) return bad();
  int64_t days = DaysFromCivilImpl(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_min * 60;
  return secs * 1000 + millis;
}

}  // namespace

int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  return DaysFromCivilImpl(year, month, day);
}

absl::StatusOr<int64_t> ParseDurationMs(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat("duration \"%s\": %s; want %s",
                                                      std::string(text), std::string(why),
                                                      std::string(kDurationForms)));
  };
  if (text.empty()) return bad("empty");
  size_t unit_at = text.size();
  while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(text[unit_at - 1]))) --unit_at;
  std::string_view number = text.substr(0, unit_at);
  std::string_view unit = text.substr(unit_at);
  double value;
  if (!ParseDouble(number, &value)) return bad("not a number");
  if (value < 0) return bad("negative");
  double scale;
  if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60e3;
  } else if (unit == "h") {
    scale = 3600e3;
  } else if (unit == "d") {
    scale = 86400e3;
  } else if (unit == "w") {
    scale = 7 * 86400e3;
  } else {
    return bad(absl::StrFormat("unknown unit \"%s\"", std::string(unit)));
  }
  double ms = value * scale;
  if (ms > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) return bad("too large");
  if (std::floor(ms) != ms) return bad("finer than a millisecond");
  return static_cast<int64_t>(ms);
}

std::string FormatDurationMs(int64_t ms) {
  struct Unit {
    int64_t ms;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  if (ms == 0) return "0s";
  for (const Unit& u : kUnits) {
    if (ms % u.ms == 0) return absl::StrFormat("%d%s", ms / u.ms, u.name);
  }
  return absl::StrFormat("%dms", ms);
}

absl::StatusOr<int64_t> ParseTimeMs(std::string_view text, int64_t now_ms) {
  if (text == "now") return now_ms;
  std::string_view rel = text;
  if (rel.substr(0, 3) == "now") rel.remove_prefix(3);
  if (!rel.empty() && (rel[0] == '-' || rel[0] == '+') && rel.size() > 1 &&
      (rel.size() < 5 || rel[4] != '-')) {
    // "-3h" / "now-3h" / "now+5m" (but not a negative ISO year).
    auto d = ParseDurationMs(rel.substr(1));
    if (d.ok()) return rel[0] == '-' ? now_ms - *d : now_ms + *d;
    if (text.substr(0, 3) == "now") {  // meant as relative: say what its duration lacks
      return absl::InvalidArgumentError(
          absl::StrFormat("time \"%s\": %s", std::string(text), d.status().message()));
    }
  }
  double secs;
  if (ParseDouble(text, &secs)) return static_cast<int64_t>(std::llround(secs * 1000));
  return ParseIso8601(text);
}

std::string FormatIso8601Ms(int64_t t_ms) {
  int64_t secs = t_ms >= 0 ? t_ms / 1000 : -((-t_ms + 999) / 1000);
  int64_t millis = t_ms - secs * 1000;
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  if (millis != 0) {
    return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, rem / 3600,
                           rem / 60 % 60, rem % 60, millis);
  }
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, rem / 3600, rem / 60 % 60,
                         rem % 60);
}

}  // namespace trainwatch::util
