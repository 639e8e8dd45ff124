// CloudWatch's metric alarm operations (docs/alarms.md): PutMetricAlarm,
// DescribeAlarms, DescribeAlarmsForMetric, DeleteAlarms, SetAlarmState and
// DescribeAlarmHistory. Each request is decoded and validated here; the
// alarms themselves are the backend's (api/backend.h AlarmsBackend).
//
// Answers are built once as a tree (api/cloudwatch/answer_tree.h) and written
// in the protocol the client spoke: query XML, AWS JSON 1.0 or CBOR.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_format.h"
#include "api/cloudwatch/alarm_params.h"
#include "api/cloudwatch/answer_tree.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"
#include "api/errors.h"
#include "api/pagination.h"
#include "util/status_macros.h"

namespace trainwatch::api::cloudwatch {
namespace {

using model::AlarmRecord;

OJson Strings(const std::vector<std::string>& v) {
  OJson out = OJson::array();
  for (const std::string& s : v) out.push_back(s);
  return out;
}

OJson MetricAlarmJson(const AlarmRecord& a) {
  const model::AlarmDefinition& d = a.definition;
  OJson j;
  j["AlarmName"] = d.name;
  j["AlarmArn"] = a.arn;
  if (!d.description.empty()) j["AlarmDescription"] = d.description;
  j["AlarmConfigurationUpdatedTimestamp"] = Time(a.configuration_updated_ms);
  j["ActionsEnabled"] = d.actions_enabled;
  j["OKActions"] = Strings(d.ok_actions);
  j["AlarmActions"] = Strings(d.alarm_actions);
  j["InsufficientDataActions"] = Strings(d.insufficient_data_actions);
  j["StateValue"] = std::string(model::AlarmStateName(a.state));
  j["StateReason"] = a.state_reason;
  if (!a.state_reason_data.empty()) j["StateReasonData"] = a.state_reason_data;
  j["StateUpdatedTimestamp"] = Time(a.state_updated_ms);
  j["MetricName"] = d.metric;
  j["Namespace"] = d.ns;
  j[d.extended_statistic ? "ExtendedStatistic" : "Statistic"] = d.statistic;
  OJson dims = OJson::array();
  for (const model::Dimension& dim : d.dimensions) dims.push_back({{"Name", dim.name}, {"Value", dim.value}});
  j["Dimensions"] = std::move(dims);
  j["Period"] = d.period_s;
  if (d.unit) j["Unit"] = *d.unit;
  j["EvaluationPeriods"] = d.evaluation_periods;
  j["DatapointsToAlarm"] = d.datapoints_to_alarm;
  j["Threshold"] = d.threshold;
  j["ComparisonOperator"] = std::string(model::AlarmComparisonName(d.comparison));
  j["TreatMissingData"] = std::string(model::MissingDataName(d.treat_missing_data));
  j["StateTransitionedTimestamp"] = Time(a.state_updated_ms);
  return j;
}

absl::Status RequireBackend(const Backends& backends) {
  return backends.alarms == nullptr ? BackendMissing("alarm service") : absl::OkStatus();
}

// The backend's refusals in CloudWatch's words.
absl::Status FromBackend(const absl::Status& s) {
  if (s.ok() || AwsCodeOf(s)) return s;
  if (absl::IsNotFound(s)) return AwsStatus("ResourceNotFound", MessageOf(s));
  if (absl::IsInvalidArgument(s)) return InvalidParameterValue(MessageOf(s));
  return s;
}

// ------------------------------------------------------------ operations

absl::StatusOr<OJson> PutMetricAlarm(const Node& input, const Backends& backends) {
  Problems problems;
  model::AlarmDefinition d;
  if (auto s = ReadText(input["AlarmName"], 1, 255, true, &problems)) d.name = *s;
  if (auto s = ReadText(input["AlarmDescription"], 0, 1024, false, &problems)) d.description = *s;
  if (Node enabled = input["ActionsEnabled"]; enabled.present()) {
    absl::StatusOr<bool> b = enabled.Bool();
    if (b.ok()) {
      d.actions_enabled = *b;
    } else {
      problems.Add("InvalidParameterValue", std::string(MessageOf(b.status())));
    }
  }
  d.ok_actions = ReadTexts(input["OKActions"], 5, 1024, &problems);
  d.alarm_actions = ReadTexts(input["AlarmActions"], 5, 1024, &problems);
  d.insufficient_data_actions = ReadTexts(input["InsufficientDataActions"], 5, 1024, &problems);
  if (input["Metrics"].present() || input["ThresholdMetricId"].present()) {
    problems.Add("InvalidParameterValue",
                 "trainwatch's alarms watch one metric (MetricName, Namespace, Statistic or "
                 "ExtendedStatistic); alarms on metric math or anomaly detection (Metrics, "
                 "ThresholdMetricId) are not supported yet.");
  }
  if (Node tags = input["Tags"]; tags.present()) {
    absl::StatusOr<std::vector<Node>> list = tags.List();
    if (!list.ok() || !list->empty()) {
      problems.Add("InvalidParameterValue",
                   "Tags on alarms are not supported by trainwatch; put the alarm without Tags.");
    }
  }
  if (auto s = ReadNamespace(input["Namespace"], true, &problems)) d.ns = *s;
  if (auto s = ReadMetricName(input["MetricName"], true, &problems)) d.metric = *s;
  d.dimensions = ReadDimensions(input["Dimensions"], &problems);
  d.unit = ReadUnit(input["Unit"], &problems);
  if (auto stat = ReadStatisticChoice(input, true, &problems)) {
    d.statistic = stat->name;
    d.extended_statistic = stat->extended;
  }
  if (auto p = ReadPeriod(input["Period"], true, &problems)) d.period_s = *p;
  if (auto n = ReadInt(input["EvaluationPeriods"], 1, 100'000, true, &problems)) {
    d.evaluation_periods = static_cast<int>(*n);
  }
  d.datapoints_to_alarm = d.evaluation_periods;
  if (auto m = ReadInt(input["DatapointsToAlarm"], 1, 100'000, false, &problems)) {
    if (*m > d.evaluation_periods) {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("DatapointsToAlarm (%d) must not be greater than "
                                   "EvaluationPeriods (%d).",
                                   *m, d.evaluation_periods));
    }
    d.datapoints_to_alarm = static_cast<int>(*m);
  }
  // CloudWatch's limits on the range evaluated: a day for periods under an
  // hour, a week for the others.
  if (const int64_t range_s = static_cast<int64_t>(d.evaluation_periods) * d.period_s;
      d.period_s < 3600 && range_s > 86'400) {
    problems.Add("InvalidParameterValue",
                 absl::StrFormat("EvaluationPeriods (%d) times Period (%d s) must not exceed 1 "
                                 "day (86400 s) for a period under an hour.",
                                 d.evaluation_periods, d.period_s));
  } else if (range_s > 7 * 86'400) {
    problems.Add("InvalidParameterValue",
                 absl::StrFormat("EvaluationPeriods (%d) times Period (%d s) must not exceed 7 "
                                 "days (604800 s).",
                                 d.evaluation_periods, d.period_s));
  }
  if (Node threshold = input["Threshold"]; threshold.present()) {
    absl::StatusOr<double> t = threshold.Double();
    if (!t.ok() || !std::isfinite(*t)) {
      problems.Add("InvalidParameterValue",
                   t.ok() ? "The parameter Threshold must be a finite number."
                          : std::string(MessageOf(t.status())));
    } else {
      d.threshold = *t;
    }
  } else {
    problems.Add("MissingParameter", "The parameter Threshold is required.");
  }
  if (auto op = ReadText(input["ComparisonOperator"], 1, 64, true, &problems)) {
    if (auto parsed = model::ParseAlarmComparison(*op)) {
      d.comparison = *parsed;
    } else {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The value %s for parameter ComparisonOperator is not one of "
                                   "GreaterThanOrEqualToThreshold, GreaterThanThreshold, "
                                   "LessThanThreshold, LessThanOrEqualToThreshold (the anomaly "
                                   "detection operators are not supported).",
                                   QuoteValue(*op)));
    }
  }
  if (auto m = ReadText(input["TreatMissingData"], 1, 255, false, &problems)) {
    if (auto parsed = model::ParseMissingData(*m)) {
      d.treat_missing_data = *parsed;
    } else {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The value %s for parameter TreatMissingData is not one of "
                                   "breaching, notBreaching, ignore, missing.",
                                   QuoteValue(*m)));
    }
  }
  if (auto e = ReadText(input["EvaluateLowSampleCountPercentile"], 1, 255, false, &problems)) {
    if (*e != "evaluate") {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The value %s for parameter EvaluateLowSampleCountPercentile "
                                   "is not supported: trainwatch always evaluates percentiles "
                                   "(\"evaluate\").",
                                   QuoteValue(*e)));
    }
  }
  if (!problems.empty()) return problems.ToStatus();
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_RETURN_IF_ERROR(FromBackend(backends.alarms->PutMetricAlarm(d)));
  return OJson();
}

struct DescribeFilter {
  std::vector<std::string> names;
  std::optional<std::string> prefix;
  std::optional<model::AlarmState> state;
  std::optional<std::string> action_prefix;
  bool metric_alarms = true;
  bool composite_relatives = false;  // ChildrenOfAlarmName / ParentsOfAlarmName
};

bool Matches(const DescribeFilter& f, const AlarmRecord& a) {
  const model::AlarmDefinition& d = a.definition;
  if (!f.metric_alarms || f.composite_relatives) return false;
  if (!f.names.empty() && std::find(f.names.begin(), f.names.end(), d.name) == f.names.end()) {
    return false;
  }
  if (f.prefix && !d.name.starts_with(*f.prefix)) return false;
  if (f.state && a.state != *f.state) return false;
  if (f.action_prefix) {
    bool any = false;
    for (const auto* list : {&d.ok_actions, &d.alarm_actions, &d.insufficient_data_actions}) {
      for (const std::string& action : *list) any = any || action.starts_with(*f.action_prefix);
    }
    if (!any) return false;
  }
  return true;
}

absl::StatusOr<OJson> DescribeAlarms(const Node& input, const Backends& backends) {
  Problems problems;
  DescribeFilter f;
  f.names = ReadTexts(input["AlarmNames"], 100, 255, &problems);
  f.prefix = ReadText(input["AlarmNamePrefix"], 1, 255, false, &problems);
  if (!f.names.empty() && f.prefix) {
    problems.Add("InvalidParameterCombination",
                 "The parameters AlarmNames and AlarmNamePrefix are mutually exclusive.");
  }
  f.state = ReadState(input["StateValue"], false, &problems);
  f.action_prefix = ReadText(input["ActionPrefix"], 1, 1024, false, &problems);
  f.metric_alarms = ReadWantsMetricAlarms(input, &problems);
  f.composite_relatives = input["ChildrenOfAlarmName"].present() ||
                          input["ParentsOfAlarmName"].present();
  const int64_t max_records = ReadInt(input["MaxRecords"], 1, 100, false, &problems).value_or(50);
  CursorBinding binding;
  for (const std::string& n : f.names) binding.Add(n);
  binding.Add(f.prefix.value_or("")).Add(f.state ? model::AlarmStateName(*f.state) : "");
  binding.Add(f.action_prefix.value_or("")).Add(f.metric_alarms ? 1 : 0);
  std::optional<std::string> after;
  if (Node token = input["NextToken"]; token.present()) {
    const std::string shown = token.String().value_or("");
    absl::StatusOr<nlohmann::json> cursor =
        DecodeToken(CursorKind::kAlarms, binding, shown, "InvalidNextToken",
                    absl::StrFormat("The parameter NextToken %s is invalid", QuoteValue(shown)));
    if (!cursor.ok()) {
      problems.Add("InvalidNextToken", std::string(MessageOf(cursor.status())));
    } else if (auto a = cursor->find("a"); a != cursor->end() && a->is_string()) {
      after = a->get<std::string>();
    }
  }
  if (!problems.empty()) return problems.ToStatus();
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_ASSIGN_OR_RETURN(std::vector<AlarmRecord> alarms, backends.alarms->ListAlarms());
  OJson list = OJson::array();
  std::optional<std::string> next;
  for (const AlarmRecord& a : alarms) {  // by name
    if ((after && a.definition.name <= *after) || !Matches(f, a)) continue;
    if (static_cast<int64_t>(list.size()) == max_records) {
      next = EncodeToken(CursorKind::kAlarms, binding,
                         {{"a", list.back()["AlarmName"].get<std::string>()}});
      break;
    }
    list.push_back(MetricAlarmJson(a));
  }
  OJson out;
  out["CompositeAlarms"] = OJson::array();
  out["MetricAlarms"] = std::move(list);
  if (next) out["NextToken"] = *next;
  return out;
}

absl::StatusOr<OJson> DescribeAlarmsForMetric(const Node& input, const Backends& backends) {
  Problems problems;
  std::optional<std::string> ns = ReadNamespace(input["Namespace"], true, &problems);
  std::optional<std::string> metric = ReadMetricName(input["MetricName"], true, &problems);
  std::vector<model::Dimension> dims = ReadDimensions(input["Dimensions"], &problems);
  std::optional<StatisticChoice> stat = ReadStatisticChoice(input, false, &problems);
  std::optional<int64_t> period = ReadPeriod(input["Period"], false, &problems);
  std::optional<std::string> unit = ReadUnit(input["Unit"], &problems);
  if (!problems.empty()) return problems.ToStatus();
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_ASSIGN_OR_RETURN(std::vector<AlarmRecord> alarms, backends.alarms->ListAlarms());
  OJson list = OJson::array();
  for (const AlarmRecord& a : alarms) {
    const model::AlarmDefinition& d = a.definition;
    if (d.ns != *ns || d.metric != *metric || d.dimensions != dims) continue;
    if (stat && (d.statistic != stat->name || d.extended_statistic != stat->extended)) continue;
    if (period && d.period_s != *period) continue;
    if (unit && d.unit != unit) continue;
    list.push_back(MetricAlarmJson(a));
  }
  return OJson{{"MetricAlarms", std::move(list)}};
}

absl::StatusOr<OJson> DeleteAlarms(const Node& input, const Backends& backends) {
  Problems problems;
  std::vector<std::string> names = ReadTexts(input["AlarmNames"], 100, 255, &problems);
  if (!input["AlarmNames"].present()) {
    problems.Add("MissingParameter", "The parameter AlarmNames is required.");
  }
  if (!problems.empty()) return problems.ToStatus();
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_RETURN_IF_ERROR(FromBackend(backends.alarms->DeleteAlarms(names)));
  return OJson();
}

absl::StatusOr<OJson> SetAlarmState(const Node& input, const Backends& backends) {
  Problems problems;
  std::optional<std::string> name = ReadText(input["AlarmName"], 1, 255, true, &problems);
  std::optional<model::AlarmState> state = ReadState(input["StateValue"], true, &problems);
  std::optional<std::string> reason = ReadText(input["StateReason"], 0, 1023, true, &problems);
  std::optional<std::string> data = ReadText(input["StateReasonData"], 0, 4000, false, &problems);
  if (!problems.empty()) return problems.ToStatus();
  if (data && !data->empty() && !nlohmann::json::accept(*data)) {
    return AwsStatus("InvalidFormat",
                     absl::StrFormat("The value %s for parameter StateReasonData is not valid "
                                     "JSON.",
                                     QuoteValue(*data)));
  }
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_RETURN_IF_ERROR(
      FromBackend(backends.alarms->SetAlarmState(*name, *state, *reason, data.value_or(""))));
  return OJson();
}

absl::StatusOr<OJson> DescribeAlarmHistory(const Node& input, const Backends& backends) {
  Problems problems;
  std::optional<std::string> name = ReadText(input["AlarmName"], 1, 255, false, &problems);
  const bool metric_alarms = ReadWantsMetricAlarms(input, &problems);
  std::optional<std::string> type = ReadText(input["HistoryItemType"], 1, 64, false, &problems);
  if (type && *type != "ConfigurationUpdate" && *type != "StateUpdate" && *type != "Action") {
    problems.Add("InvalidParameterValue",
                 absl::StrFormat("The value %s for parameter HistoryItemType is not one of "
                                 "ConfigurationUpdate, StateUpdate, Action (trainwatch records "
                                 "no AlarmContributor items).",
                                 QuoteValue(*type)));
  }
  int64_t start_ms = INT64_MIN, end_ms = INT64_MAX;
  for (auto [member, out] : {std::pair{"StartDate", &start_ms}, std::pair{"EndDate", &end_ms}}) {
    if (Node n = input[member]; n.present()) {
      absl::StatusOr<int64_t> t = n.TimestampMs();
      if (t.ok()) {
        *out = *t;
      } else {
        problems.Add("InvalidParameterValue", std::string(MessageOf(t.status())));
      }
    }
  }
  const int64_t max_records = ReadInt(input["MaxRecords"], 1, 100, false, &problems).value_or(100);
  bool ascending = false;
  if (auto scan = ReadText(input["ScanBy"], 1, 64, false, &problems)) {
    if (*scan == "TimestampAscending") {
      ascending = true;
    } else if (*scan != "TimestampDescending") {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The value %s for parameter ScanBy is not one of "
                                   "TimestampDescending, TimestampAscending.",
                                   QuoteValue(*scan)));
    }
  }
  CursorBinding binding;
  binding.Add(name.value_or("")).Add(type.value_or("")).Add(start_ms).Add(end_ms);
  binding.Add(ascending ? 1 : 0).Add(metric_alarms ? 1 : 0);
  // An item's place in the listing: (time, alarm name, its number in the
  // alarm's history), which stays while older items go.
  using Place = std::tuple<int64_t, std::string, int64_t>;
  std::optional<Place> after;
  if (Node token = input["NextToken"]; token.present()) {
    const std::string shown = token.String().value_or("");
    absl::StatusOr<nlohmann::json> cursor =
        DecodeToken(CursorKind::kAlarmHistory, binding, shown, "InvalidNextToken",
                    absl::StrFormat("The parameter NextToken %s is invalid", QuoteValue(shown)));
    if (!cursor.ok()) {
      problems.Add("InvalidNextToken", std::string(MessageOf(cursor.status())));
    } else {
      try {
        after = Place{cursor->at("t").get<int64_t>(), cursor->at("n").get<std::string>(),
                      cursor->at("i").get<int64_t>()};
      } catch (const nlohmann::json::exception&) {
        problems.Add("InvalidNextToken", "The parameter NextToken is invalid; pass the NextToken "
                                         "of the previous response.");
      }
    }
  }
  if (!problems.empty()) return problems.ToStatus();
  TW_RETURN_IF_ERROR(RequireBackend(backends));
  TW_ASSIGN_OR_RETURN(std::vector<AlarmRecord> alarms, backends.alarms->ListAlarms());
  std::vector<std::pair<Place, const model::AlarmHistoryItem*>> items;
  for (const AlarmRecord& a : alarms) {
    if (!metric_alarms || (name && a.definition.name != *name)) continue;
    for (const model::AlarmHistoryItem& h : a.history) {
      if ((type && h.type != *type) || h.t_ms < start_ms || h.t_ms > end_ms) continue;
      items.push_back({Place{h.t_ms, a.definition.name, h.seq}, &h});
    }
  }
  std::sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    return ascending ? x.first < y.first : y.first < x.first;
  });
  OJson list = OJson::array();
  std::optional<std::string> next;
  std::optional<Place> last;
  for (const auto& [place, h] : items) {
    if (after && (ascending ? place <= *after : place >= *after)) continue;
    if (static_cast<int64_t>(list.size()) == max_records) {
      next = EncodeToken(CursorKind::kAlarmHistory, binding,
                         {{"t", std::get<0>(*last)}, {"n", std::get<1>(*last)},
                          {"i", std::get<2>(*last)}});
      break;
    }
    list.push_back({{"AlarmName", std::get<1>(place)},
                    {"AlarmType", "MetricAlarm"},
                    {"Timestamp", Time(h->t_ms)},
                    {"HistoryItemType", h->type},
                    {"HistorySummary", h->summary},
                    {"HistoryData", h->data}});
    last = place;
  }
  OJson out{{"AlarmHistoryItems", std::move(list)}};
  if (next) out["NextToken"] = *next;
  return out;
}

using Operation = absl::StatusOr<OJson> (*)(const Node&, const Backends&);
constexpr std::pair<std::string_view, Operation> kOperations[] = {
    {"PutMetricAlarm", PutMetricAlarm},
    {"DescribeAlarms", DescribeAlarms},
    {"DescribeAlarmsForMetric", DescribeAlarmsForMetric},
    {"DeleteAlarms", DeleteAlarms},
    {"SetAlarmState", SetAlarmState},
    {"DescribeAlarmHistory", DescribeAlarmHistory},
};

}  // namespace

std::optional<absl::StatusOr<std::string>> HandleAlarmOperation(std::string_view operation,
                                                                const Node& input,
                                                                Protocol protocol,
                                                                const Context& context,
                                                                const Backends& backends) {
  for (const auto& [name, run] : kOperations) {
    if (name != operation) continue;
    absl::StatusOr<OJson> result = run(input, backends);
    if (!result.ok()) return absl::StatusOr<std::string>(result.status());
    return absl::StatusOr<std::string>(Encode(operation, *result, protocol, context));
  }
  return std::nullopt;
}

}  // namespace trainwatch::api::cloudwatch
