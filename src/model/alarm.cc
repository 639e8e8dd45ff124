#include "model/alarm.h"

#include <array>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace trainwatch::model {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<AlarmState, std::string_view>, 3> kStates = {{
    {AlarmState::kInsufficientData, "INSUFFICIENT_DATA"},
    {AlarmState::kOk, "OK"},
    {AlarmState::kAlarm, "ALARM"},
}};
constexpr std::array<std::pair<AlarmComparison, std::string_view>, 4> kComparisons = {{
    {AlarmComparison::kGreaterThanOrEqualToThreshold, "GreaterThanOrEqualToThreshold"},
    {AlarmComparison::kGreaterThanThreshold, "GreaterThanThreshold"},
    {AlarmComparison::kLessThanThreshold, "LessThanThreshold"},
    {AlarmComparison::kLessThanOrEqualToThreshold, "LessThanOrEqualToThreshold"},
}};
constexpr std::array<std::pair<MissingData, std::string_view>, 4> kMissing = {{
    {MissingData::kMissing, "missing"},
    {MissingData::kIgnore, "ignore"},
    {MissingData::kBreaching, "breaching"},
    {MissingData::kNotBreaching, "notBreaching"},
}};

template <class E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [value, name] : table) {
    if (value == e) return name;
  }
  return "";
}
template <class E, size_t N>
std::optional<E> ValueOf(const std::array<std::pair<E, std::string_view>, N>& table,
                         std::string_view name) {
  for (const auto& [value, n] : table) {
    if (n == name) return value;
  }
  return std::nullopt;
}

template <class T>
void Read(const Json& j, const char* member, T* out) {
  auto it = j.find(member);
  if (it != j.end() && !it->is_null()) *out = it->get<T>();
}

}  // namespace

std::string_view AlarmStateName(AlarmState state) { return NameOf(kStates, state); }
std::optional<AlarmState> ParseAlarmState(std::string_view name) { return ValueOf(kStates, name); }
std::string_view AlarmComparisonName(AlarmComparison op) { return NameOf(kComparisons, op); }
std::optional<AlarmComparison> ParseAlarmComparison(std::string_view name) {
  return ValueOf(kComparisons, name);
}
std::string_view MissingDataName(MissingData m) { return NameOf(kMissing, m); }
std::optional<MissingData> ParseMissingData(std::string_view name) {
  return ValueOf(kMissing, name);
}

std::string EncodeAlarmRecord(const AlarmRecord& r) {
  const AlarmDefinition& d = r.definition;
  Json dims = Json::array();
  for (const Dimension& dim : d.dimensions) dims.push_back({dim.name, dim.value});
  Json history = Json::array();
  for (const AlarmHistoryItem& h : r.history) {
    history.push_back({{"seq", h.seq}, {"t_ms", h.t_ms}, {"type", h.type}, {"summary", h.summary},
                       {"data", h.data}});
  }
  Json j = {
      {"v", 1},
      {"name", d.name},
      {"description", d.description},
      {"actions_enabled", d.actions_enabled},
      {"ok_actions", d.ok_actions},
      {"alarm_actions", d.alarm_actions},
      {"insufficient_data_actions", d.insufficient_data_actions},
      {"namespace", d.ns},
      {"metric", d.metric},
      {"dimensions", std::move(dims)},
      {"statistic", d.statistic},
      {"extended_statistic", d.extended_statistic},
      {"period_s", d.period_s},
      {"evaluation_periods", d.evaluation_periods},
      {"datapoints_to_alarm", d.datapoints_to_alarm},
      {"threshold", d.threshold},
      {"comparison", AlarmComparisonName(d.comparison)},
      {"treat_missing_data", MissingDataName(d.treat_missing_data)},
      {"arn", r.arn},
      {"configuration_updated_ms", r.configuration_updated_ms},
      {"state", AlarmStateName(r.state)},
      {"state_reason", r.state_reason},
      {"state_reason_data", r.state_reason_data},
      {"state_updated_ms", r.state_updated_ms},
      {"evaluated_through_ms", r.evaluated_through_ms},
      {"history", std::move(history)},
  };
  if (d.unit) j["unit"] = *d.unit;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<AlarmRecord> DecodeAlarmRecord(std::string_view bytes) {
  Json j = Json::parse(bytes, nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return absl::DataLossError(absl::StrFormat(
        "a stored alarm is damaged (not a JSON object with a name): \"%s\"",
        absl::CEscape(std::string(bytes.substr(0, 200)))));
  }
  AlarmRecord r;
  AlarmDefinition& d = r.definition;
  try {
    Read(j, "name", &d.name);
    Read(j, "description", &d.description);
    Read(j, "actions_enabled", &d.actions_enabled);
    Read(j, "ok_actions", &d.ok_actions);
    Read(j, "alarm_actions", &d.alarm_actions);
    Read(j, "insufficient_data_actions", &d.insufficient_data_actions);
    Read(j, "namespace", &d.ns);
    Read(j, "metric", &d.metric);
    if (auto it = j.find("dimensions"); it != j.end() && it->is_array()) {
      for (const Json& dim : *it) {
        d.dimensions.push_back({dim.at(0).get<std::string>(), dim.at(1).get<std::string>()});
      }
    }
    Read(j, "statistic", &d.statistic);
    Read(j, "extended_statistic", &d.extended_statistic);
    if (auto it = j.find("unit"); it != j.end() && it->is_string()) d.unit = it->get<std::string>();
    Read(j, "period_s", &d.period_s);
    Read(j, "evaluation_periods", &d.evaluation_periods);
    Read(j, "datapoints_to_alarm", &d.datapoints_to_alarm);
    Read(j, "threshold", &d.threshold);
    std::string s;
    Read(j, "comparison", &s);
    if (auto op = ParseAlarmComparison(s)) d.comparison = *op;
    s.clear();
    Read(j, "treat_missing_data", &s);
    if (auto m = ParseMissingData(s)) d.treat_missing_data = *m;
    Read(j, "arn", &r.arn);
    Read(j, "configuration_updated_ms", &r.configuration_updated_ms);
    s.clear();
    Read(j, "state", &s);
    if (auto st = ParseAlarmState(s)) r.state = *st;
    Read(j, "state_reason", &r.state_reason);
    Read(j, "state_reason_data", &r.state_reason_data);
    Read(j, "state_updated_ms", &r.state_updated_ms);
    Read(j, "evaluated_through_ms", &r.evaluated_through_ms);
    if (auto it = j.find("history"); it != j.end() && it->is_array()) {
      for (const Json& h : *it) {
        AlarmHistoryItem item;
        Read(h, "seq", &item.seq);
        Read(h, "t_ms", &item.t_ms);
        Read(h, "type", &item.type);
        Read(h, "summary", &item.summary);
        Read(h, "data", &item.data);
        r.history.push_back(std::move(item));
      }
    }
  } catch (const Json::exception& e) {
    return absl::DataLossError(
        absl::StrFormat("stored alarm \"%s\" is damaged: %s", d.name, e.what()));
  }
  return r;
}

}  // namespace trainwatch::model
