#pragma once
// The request members of the alarm operations (alarms.cc), read from a Node
// and checked with CloudWatch's limits; each adds what is wrong to
// `problems` (naming the parameter) and returns nullopt or an empty list.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/cloudwatch/cloudwatch.h"
#include "model/alarm.h"

namespace trainwatch::api::cloudwatch {

// A string of min..max characters (MissingParameter when `required` and absent).
std::optional<std::string> ReadText(const Node& node, size_t min, size_t max, bool required,
                                    Problems* problems);
// An integer in min..max.
std::optional<int64_t> ReadInt(const Node& node, int64_t min, int64_t max, bool required,
                               Problems* problems);
// A list of at most max_items strings of 1..max_len characters.
std::vector<std::string> ReadTexts(const Node& node, size_t max_items, size_t max_len,
                                   Problems* problems);

// Statistic or ExtendedStatistic (a percentile): exactly one when `required`.
struct StatisticChoice {
  std::string name;
  bool extended = false;
};
std::optional<StatisticChoice> ReadStatisticChoice(const Node& input, bool required,
                                                   Problems* problems);
// Period: 10, 20, 30 or a multiple of 60 seconds, at most 7 days.
std::optional<int64_t> ReadPeriod(const Node& node, bool required, Problems* problems);
// StateValue: OK, ALARM or INSUFFICIENT_DATA.
std::optional<model::AlarmState> ReadState(const Node& node, bool required, Problems* problems);
// AlarmTypes: true when it allows metric alarms (absent: every type).
bool ReadWantsMetricAlarms(const Node& input, Problems* problems);

}  // namespace trainwatch::api::cloudwatch
