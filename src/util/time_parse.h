#pragma once
// Parsing and formatting of durations and points in time, as users type them on
// the command line and as the API carries them.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::util {

// "100ms", "1s", "1.5s", "5m", "3h", "15d", "2w"; a bare number is seconds.
// InvalidArgument (quoting the input and the accepted forms) otherwise, or when
// negative or overflowing.
absl::StatusOr<int64_t> ParseDurationMs(std::string_view text);

// Shortest exact spelling: 100ms, 1s, 90s, 5m, 3h, 15d.
std::string FormatDurationMs(int64_t ms);

// A point in time: "now", "now-3h" or "-3h" (relative to now_ms), an ISO-8601
// date-time ("2024-01-01T00:00:00Z", fractional seconds and +hh:mm offsets
// accepted; no zone means UTC), a date ("2024-01-01"), or Unix epoch seconds
// (with optional fraction). Returns Unix epoch milliseconds.
absl::StatusOr<int64_t> ParseTimeMs(std::string_view text, int64_t now_ms);

// "2024-01-01T00:00:00.250Z" (milliseconds shown only when non-zero).
std::string FormatIso8601Ms(int64_t t_ms);

// Days since 1970-01-01 for a proleptic Gregorian date (no range checks).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);

}  // namespace trainwatch::util
