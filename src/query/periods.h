#pragma once
// Periods and start-time rounding with CloudWatch's rules (spec/aws-api.md
// §4.2), defined once for every reader: the api's validation and limits, the
// store reader, the CLI.

#include <cstdint>

namespace trainwatch::query {

inline constexpr int64_t kSecondMs = 1000;
inline constexpr int64_t kMinuteMs = 60 * kSecondMs;
inline constexpr int64_t kHourMs = 60 * kMinuteMs;
inline constexpr int64_t kDayMs = 24 * kHourMs;

// 1, 5, 10, 20, 30 or a positive multiple of 60.
bool IsAllowedPeriod(int64_t period_s);

// StartTime rounded as CloudWatch does (§4.2): periods of 5-30 s to a
// multiple of the period (1 s to the second); otherwise to the minute when
// start is less than 15 days before now, to 5 minutes up to 63 days, to the
// hour beyond.
int64_t RoundStartMs(int64_t start_ms, int64_t period_s, int64_t now_ms);

// Whether a tier keeps data for `start_ms` at a resolution dividing
// `period_s` (§4.2, CloudWatch's default retention); if not, the query
// returns no datapoints (not an error).
bool PeriodServable(int64_t start_ms, int64_t period_s, int64_t now_ms);

// ceil((end - rounded start) / period): what the datapoint limits count.
int64_t RequestedDatapoints(int64_t start_ms, int64_t end_ms, int64_t period_s, int64_t now_ms);

// CloudWatch's datapoint limits: GetMetricStatistics' per request,
// GetMetricData's per query.
inline constexpr int64_t kMaxStatisticsDatapoints = 1440;
inline constexpr int64_t kMaxMetricDataDatapoints = 100'800;

}  // namespace trainwatch::query
