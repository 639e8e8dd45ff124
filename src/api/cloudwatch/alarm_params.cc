#include "api/cloudwatch/alarm_params.h"

#include "absl/strings/str_format.h"
#include "api/cloudwatch/statistics.h"
#include "api/errors.h"

namespace trainwatch::api::cloudwatch {

std::optional<std::string> ReadText(const Node& node, size_t min, size_t max, bool required,
                                    Problems* problems) {
  if (!node.present()) {
    if (required) {
      problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", node.path()));
    }
    return std::nullopt;
  }
  absl::StatusOr<std::string> s = node.String();
  if (!s.ok()) {
    problems->Add("InvalidParameterValue", std::string(MessageOf(s.status())));
    return std::nullopt;
  }
  if (s->size() < min || s->size() > max) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s must be %d-%d characters long.",
                                  QuoteValue(*s), node.path(), min, max));
    return std::nullopt;
  }
  return *std::move(s);
}

std::optional<int64_t> ReadInt(const Node& node, int64_t min, int64_t max, bool required,
                               Problems* problems) {
  if (!node.present()) {
    if (required) {
      problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", node.path()));
    }
    return std::nullopt;
  }
  absl::StatusOr<int64_t> v = node.Int();
  if (!v.ok()) {
    problems->Add("InvalidParameterValue", std::string(MessageOf(v.status())));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %d for parameter %s must be between %d and %d.", *v,
                                  node.path(), min, max));
    return std::nullopt;
  }
  return *v;
}

std::vector<std::string> ReadTexts(const Node& node, size_t max_items, size_t max_len,
                                   Problems* problems) {
  std::vector<std::string> out;
  if (!node.present()) return out;
  absl::StatusOr<std::vector<Node>> items = node.List();
  if (!items.ok()) {
    problems->Add("InvalidParameterValue", std::string(MessageOf(items.status())));
    return out;
  }
  if (items->size() > max_items) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The collection %s must not have a size greater than %d.",
                                  node.path(), max_items));
    return out;
  }
  for (const Node& item : *items) {
    if (std::optional<std::string> s = ReadText(item, 1, max_len, true, problems)) {
      out.push_back(*std::move(s));
    }
  }
  return out;
}

std::optional<StatisticChoice> ReadStatisticChoice(const Node& input, bool required,
                                                   Problems* problems) {
  Node plain = input["Statistic"], extended = input["ExtendedStatistic"];
  if (plain.present() && extended.present()) {
    problems->Add("InvalidParameterCombination",
                  "The parameters Statistic and ExtendedStatistic are mutually exclusive; give "
                  "one of them.");
    return std::nullopt;
  }
  if (plain.present()) {
    std::optional<std::string> s = ReadText(plain, 1, 32, true, problems);
    if (!s) return std::nullopt;
    if (!ParsePlainStatistic(*s)) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The value %s for parameter Statistic is not one of "
                                    "SampleCount, Average, Sum, Minimum, Maximum.",
                                    QuoteValue(*s)));
      return std::nullopt;
    }
    return StatisticChoice{*s, false};
  }
  if (extended.present()) {
    std::optional<std::string> s = ReadText(extended, 1, 32, true, problems);
    if (!s) return std::nullopt;
    absl::StatusOr<Statistic> parsed = ParseExtendedStatistic(*s);
    if (!parsed.ok() || parsed->kind != Statistic::Kind::kPercentile) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The value %s for parameter ExtendedStatistic %s",
                                    QuoteValue(*s),
                                    parsed.ok() ? "is not a percentile (p0-p100)."
                                                : std::string(MessageOf(parsed.status()))));
      return std::nullopt;
    }
    return StatisticChoice{*s, true};
  }
  if (required) {
    problems->Add("MissingParameter",
                  "The parameter Statistic or ExtendedStatistic is required (e.g. Statistic "
                  "Average, or ExtendedStatistic p99).");
  }
  return std::nullopt;
}

namespace {

bool ValidPeriod(int64_t p) { return p == 10 || p == 20 || p == 30 || (p >= 60 && p % 60 == 0); }

}  // namespace

std::optional<int64_t> ReadPeriod(const Node& node, bool required, Problems* problems) {
  std::optional<int64_t> p = ReadInt(node, 1, 7 * 86'400, required, problems);
  if (p && !ValidPeriod(*p)) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %d for parameter Period is invalid: give 10, 20, 30 "
                                  "or a multiple of 60 seconds.",
                                  *p));
    return std::nullopt;
  }
  return p;
}

std::optional<model::AlarmState> ReadState(const Node& node, bool required, Problems* problems) {
  std::optional<std::string> s = ReadText(node, 1, 32, required, problems);
  if (!s) return std::nullopt;
  std::optional<model::AlarmState> state = model::ParseAlarmState(*s);
  if (!state) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is not one of OK, ALARM, "
                                  "INSUFFICIENT_DATA.",
                                  QuoteValue(*s), node.path()));
  }
  return state;
}

// AlarmTypes: true when the list allows metric alarms (absent: all types).
bool ReadWantsMetricAlarms(const Node& input, Problems* problems) {
  std::vector<std::string> types = ReadTexts(input["AlarmTypes"], 2, 32, problems);
  if (types.empty()) return true;
  bool metric = false;
  for (const std::string& t : types) {
    if (t == "MetricAlarm") {
      metric = true;
    } else if (t != "CompositeAlarm") {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The value %s for parameter AlarmTypes is not one of "
                                    "MetricAlarm, CompositeAlarm.",
                                    QuoteValue(t)));
    }
  }
  return metric;
}

}  // namespace trainwatch::api::cloudwatch
