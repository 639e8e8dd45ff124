#pragma once
// CloudWatch metric alarms (PutMetricAlarm and friends; docs/alarms.md): an
// alarm watches one metric's statistic per period and is OK, ALARM or
// INSUFFICIENT_DATA by CloudWatch's rules (rules/alarms.h evaluates them).
// An AlarmRecord is what the store keeps per alarm: the definition as the
// user gave it, its current state, and its most recent history items.
//
// Stored form (EncodeAlarmRecord): one JSON object, "v": 1, members named as
// the fields below. Reading is lenient as for job records: a member that is
// missing keeps its default.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/series.h"

namespace trainwatch::model {

enum class AlarmState : uint8_t { kInsufficientData, kOk, kAlarm };
std::string_view AlarmStateName(AlarmState state);  // "OK", "ALARM", "INSUFFICIENT_DATA"
std::optional<AlarmState> ParseAlarmState(std::string_view name);

enum class AlarmComparison : uint8_t {
  kGreaterThanOrEqualToThreshold,
  kGreaterThanThreshold,
  kLessThanThreshold,
  kLessThanOrEqualToThreshold,
};
std::string_view AlarmComparisonName(AlarmComparison op);
std::optional<AlarmComparison> ParseAlarmComparison(std::string_view name);

// TreatMissingData: how periods without a datapoint count.
enum class MissingData : uint8_t { kMissing, kIgnore, kBreaching, kNotBreaching };
std::string_view MissingDataName(MissingData m);  // "missing", "ignore", ...
std::optional<MissingData> ParseMissingData(std::string_view name);

struct AlarmDefinition {
  std::string name;
  std::string description;
  bool actions_enabled = true;
  // Each an action of the rules' (rules/actions.h): StopTraining, signal:SIG,
  // exec:/path, webhook:http://...
  std::vector<std::string> ok_actions;
  std::vector<std::string> alarm_actions;
  std::vector<std::string> insufficient_data_actions;
  std::string ns;
  std::string metric;
  std::vector<Dimension> dimensions;  // sorted by name
  // One of SampleCount, Average, Sum, Minimum, Maximum, or a percentile
  // "pNN" (ExtendedStatistic).
  std::string statistic;
  bool extended_statistic = false;
  std::optional<std::string> unit;
  int64_t period_s = 60;
  int evaluation_periods = 1;
  int datapoints_to_alarm = 1;
  double threshold = 0;
  AlarmComparison comparison = AlarmComparison::kGreaterThanThreshold;
  MissingData treat_missing_data = MissingData::kMissing;
};

struct AlarmHistoryItem {
  int64_t seq = 0;  // counts up from 1 in each alarm's history (pages of history)
  int64_t t_ms = 0;
  // "ConfigurationUpdate", "StateUpdate" or "Action".
  std::string type;
  std::string summary;
  std::string data;  // JSON text, as CloudWatch's HistoryData
};

struct AlarmRecord {
  AlarmDefinition definition;
  std::string arn;
  int64_t configuration_updated_ms = 0;
  AlarmState state = AlarmState::kInsufficientData;
  std::string state_reason = "Unchecked: Initial alarm creation";
  std::string state_reason_data;  // JSON text; empty when none
  int64_t state_updated_ms = 0;
  // The end of the newest period the alarm was evaluated for (0: never).
  int64_t evaluated_through_ms = 0;
  std::vector<AlarmHistoryItem> history;  // oldest first, at most kMaxAlarmHistory
};

// History items kept per alarm (the oldest go first).
inline constexpr size_t kMaxAlarmHistory = 100;

std::string EncodeAlarmRecord(const AlarmRecord& record);
// DataLoss naming what is wrong when the bytes are not a stored alarm.
absl::StatusOr<AlarmRecord> DecodeAlarmRecord(std::string_view bytes);

}  // namespace trainwatch::model
