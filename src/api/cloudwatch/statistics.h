#pragma once
// CloudWatch vocabulary shared by the metric operations: units, statistics,
// periods and the start-time rounding of spec/aws-api.md §4.2-§4.3.

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/backend.h"
#include "query/periods.h"

namespace trainwatch::api::cloudwatch {

// Periods, rounding and limits are query's (query/periods.h), defined once.
using query::kDayMs;
using query::kHourMs;
using query::kMinuteMs;
using query::kSecondMs;
using query::IsAllowedPeriod;
using query::PeriodServable;
using query::RequestedDatapoints;
using query::RoundStartMs;

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

}  // namespace trainwatch::api::cloudwatch
