#pragma once
// CloudWatch vocabulary shared by the metric operations: units, statistics,
// periods and the start-time rounding of spec/aws-api.md §4.2-§4.3.

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/backend.h"

namespace trainwatch::api::cloudwatch {

inline constexpr int64_t kSecondMs = 1000;
inline constexpr int64_t kMinuteMs = 60 * kSecondMs;
inline constexpr int64_t kHourMs = 60 * kMinuteMs;
inline constexpr int64_t kDayMs = 24 * kHourMs;

// One of Appendix A's StandardUnit values ("Percent", "Bytes/Second", "None").
bool IsStandardUnit(std::string_view unit);

// "SampleCount", "Average", "Sum", "Minimum", "Maximum".
std::optional<Statistic> ParsePlainStatistic(std::string_view text);

// "p99", "p99.9", "p0.0", "p100": a percentile with up to 10 decimals in
// [0, 100]. Unimplemented for the well-formed statistics trainwatch does not
// compute yet (tm/wm/tc/ts/TM()/WM()/TC()/TS()/PR()/IQM); InvalidArgument
// for anything else. Messages continue "The value 'x' for parameter P ..."
// ("is not supported by trainwatch yet; ..."), which callers prepend.
absl::StatusOr<Statistic> ParseExtendedStatistic(std::string_view text);

// Either kind (GetMetricData's Stat).
absl::StatusOr<Statistic> ParseAnyStatistic(std::string_view text);

// 1, 5, 10, 20, 30 or a positive multiple of 60.
bool IsAllowedPeriod(int64_t period_s);

// StartTime rounded as CloudWatch does (§4.2): periods of 5-30 s to a
// multiple of the period (1 s to the second); otherwise to the minute when
// start is less than 15 days before now, to 5 minutes up to 63 days, to the
// hour beyond.
int64_t RoundStartMs(int64_t start_ms, int64_t period_s, int64_t now_ms);

// Whether a tier keeps data for `start_ms` at a resolution dividing
// `period_s` (§4.2); if not, the query returns no datapoints (not an error).
bool PeriodServable(int64_t start_ms, int64_t period_s, int64_t now_ms);

// ceil((end - rounded start) / period): what the 1440 / 100,800 limits count.
int64_t RequestedDatapoints(int64_t start_ms, int64_t end_ms, int64_t period_s, int64_t now_ms);

}  // namespace trainwatch::api::cloudwatch
