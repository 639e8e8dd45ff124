#include "rules/alarms.h"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "model/job_events.h"
#include "model/job_record.h"
#include "query/statistic.h"
#include "rules/config.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

namespace trainwatch::rules {
namespace {

using Json = nlohmann::json;
using model::AlarmComparison;
using model::AlarmState;
using model::MissingData;

bool Breaches(AlarmComparison op, double value, double threshold) {
  switch (op) {
    case AlarmComparison::kGreaterThanOrEqualToThreshold:
      return value >= threshold;
    case AlarmComparison::kGreaterThanThreshold:
      return value > threshold;
    case AlarmComparison::kLessThanThreshold:
      return value < threshold;
    case AlarmComparison::kLessThanOrEqualToThreshold:
      return value <= threshold;
  }
  return false;
}

std::string_view ComparisonWords(AlarmComparison op) {
  switch (op) {
    case AlarmComparison::kGreaterThanOrEqualToThreshold:
      return "greater than or equal to";
    case AlarmComparison::kGreaterThanThreshold:
      return "greater than";
    case AlarmComparison::kLessThanThreshold:
      return "less than";
    case AlarmComparison::kLessThanOrEqualToThreshold:
      return "less than or equal to";
  }
  return "";
}

// CloudWatch's reason text dates: "(07/12/26 01:02:00)", UTC.
std::string ReasonDate(int64_t t_ms) {
  const time_t s = static_cast<time_t>(t_ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  return absl::StrFormat("%02d/%02d/%02d %02d:%02d:%02d", tm.tm_mday, tm.tm_mon + 1,
                         tm.tm_year % 100, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string Number(double v) { return absl::StrFormat("%.15g", v); }

// Appends `item` with the next sequence number; the oldest items go beyond
// kMaxAlarmHistory.
void AddHistory(model::AlarmRecord& alarm, model::AlarmHistoryItem item) {
  item.seq = alarm.history.empty() ? 1 : alarm.history.back().seq + 1;
  alarm.history.push_back(std::move(item));
  while (alarm.history.size() > model::kMaxAlarmHistory) alarm.history.erase(alarm.history.begin());
}

}  // namespace

AlarmEvaluation EvaluateAlarm(const model::AlarmDefinition& alarm, AlarmState current,
                              const std::vector<AlarmPeriod>& periods, int64_t query_ms) {
  const int n = std::max(alarm.evaluation_periods, 1);
  const int m = std::clamp(alarm.datapoints_to_alarm, 1, n);
  // The newest N periods, and the datapoints present in the whole range.
  std::vector<const AlarmPeriod*> present;
  for (const AlarmPeriod& p : periods) {
    if (p.value) present.push_back(&p);
  }
  std::vector<const AlarmPeriod*> evaluated;  // what decided, newest first
  int breaching = 0;
  int undecided = 0;  // periods of the newest N without a datapoint (ignore, missing)
  bool filled = false;
  if (static_cast<int>(present.size()) >= n) {
    for (int i = 0; i < n; ++i) evaluated.push_back(present[present.size() - 1 - i]);
    for (const AlarmPeriod* p : evaluated) breaching += Breaches(alarm.comparison, *p->value, alarm.threshold);
  } else {
    // Fewer than N datapoints in the range: those present, newest first, and
    // the rest of the N as TreatMissingData says.
    for (auto it = present.rbegin(); it != present.rend(); ++it) {
      evaluated.push_back(*it);
      breaching += Breaches(alarm.comparison, *(*it)->value, alarm.threshold);
    }
    const int missing = n - static_cast<int>(present.size());
    switch (alarm.treat_missing_data) {
      case MissingData::kBreaching:
        breaching += missing;
        filled = true;
        break;
      case MissingData::kNotBreaching:
        filled = true;
        break;
      default:
        undecided = missing;
    }
  }

  AlarmEvaluation out;
  const bool extended = alarm.extended_statistic;
  Json data = {{"version", "1.0"},
               {"queryDate", util::FormatIso8601Ms(query_ms)},
               {"statistic", alarm.statistic},
               {"period", alarm.period_s},
               {"threshold", alarm.threshold}};
  if (extended) data.erase("statistic"), data["extendedStatistic"] = alarm.statistic;
  if (!periods.empty()) data["startDate"] = util::FormatIso8601Ms(periods.front().t_ms);
  Json recent = Json::array();
  for (const AlarmPeriod* p : present) recent.push_back(*p->value);
  data["recentDatapoints"] = std::move(recent);
  Json evaluated_json = Json::array();
  for (const AlarmPeriod* p : evaluated) {
    evaluated_json.push_back({{"timestamp", util::FormatIso8601Ms(p->t_ms)}, {"value", *p->value}});
  }
  data["evaluatedDatapoints"] = std::move(evaluated_json);
  out.reason_data = data.dump();

  const bool all_missing = present.empty();
  if (all_missing && alarm.treat_missing_data == MissingData::kMissing) {
    out.state = AlarmState::kInsufficientData;
    out.reason = absl::StrFormat(
        "Insufficient Data: %d datapoint%s %s unknown.", n, n == 1 ? "" : "s", n == 1 ? "was" : "were");
    return out;
  }
  if (breaching >= m) {
    out.state = AlarmState::kAlarm;
  } else if (breaching + undecided < m) {
    out.state = AlarmState::kOk;
  } else {
    // ignore and missing: the datapoints present cannot decide; the state stays.
    out.state = current;
    out.decided = false;
    out.reason = absl::StrFormat(
        "%d out of the last %d datapoints were missing (TreatMissingData %s): the state stays %s.",
        undecided, n, model::MissingDataName(alarm.treat_missing_data), model::AlarmStateName(current));
    return out;
  }
  const int missing = n - static_cast<int>(evaluated.size());
  if (evaluated.empty()) {  // every period missing, filled as TreatMissingData says
    out.reason = absl::StrFormat(
        "Threshold Crossed: no datapoints were received for %d period%s and %d missing "
        "datapoint%s %s treated as [%s].",
        n, n == 1 ? "" : "s", n, n == 1 ? "" : "s", n == 1 ? "was" : "were",
        alarm.treat_missing_data == MissingData::kBreaching ? "Breaching" : "NonBreaching");
    return out;
  }
  std::vector<std::string> shown;
  for (const AlarmPeriod* p : evaluated) {
    shown.push_back(absl::StrFormat("%s (%s)", Number(*p->value), ReasonDate(p->t_ms)));
  }
  // The datapoints that decided, as CloudWatch counts them: the breaching
  // ones for ALARM, the others for OK (missing ones only where they were
  // filled that way), and how many each transition needs.
  const bool alarm_state = out.state == AlarmState::kAlarm;
  const bool missing_breach = filled && alarm.treat_missing_data == MissingData::kBreaching;
  const int count = alarm_state ? breaching
                                : n - breaching - (filled ? 0 : missing);
  const int needed = alarm_state ? m : n - m + 1;
  out.reason = absl::StrFormat(
      "Threshold Crossed: %d out of the last %d datapoints [%s] %s %s the threshold (%s)%s "
      "(minimum %d datapoint%s for %s transition).",
      count, n, absl::StrJoin(shown, ", "),
      alarm_state ? (count == 1 ? "was" : "were") : (count == 1 ? "was not" : "were not"),
      ComparisonWords(alarm.comparison), Number(alarm.threshold),
      filled && missing > 0 && (alarm_state == missing_breach)
          ? absl::StrFormat(", %d missing datapoint%s treated as %s", missing,
                            missing == 1 ? "" : "s",
                            model::MissingDataName(alarm.treat_missing_data))
          : std::string(),
      needed, needed == 1 ? "" : "s", alarm_state ? "OK -> ALARM" : "ALARM -> OK");
  return out;
}

std::optional<std::string> JobOfAlarm(const model::AlarmDefinition& alarm) {
  for (const model::Dimension& d : alarm.dimensions) {
    if (d.name == model::kTrainingJobNameDim && !d.value.empty()) return d.value;
  }
  for (const model::Dimension& d : alarm.dimensions) {
    if (d.name != model::kHostDim) continue;
    if (std::optional<model::JobHost> host = model::ParseHostName(d.value)) return host->job;
  }
  return std::nullopt;
}

AlarmService::AlarmService(query::MetricsReader* metrics, AlarmSink* sink, ActionHandler* actions,
                           AlarmServiceOptions options)
    : metrics_(metrics), sink_(sink), actions_(actions), options_(std::move(options)) {}

AlarmService::~AlarmService() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void AlarmService::Load(std::vector<model::AlarmRecord> alarms) {
  util::MutexLock lock(mu_);
  for (model::AlarmRecord& a : alarms) {
    std::string name = a.definition.name;
    alarms_[name] = std::move(a);
  }
}

void AlarmService::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void AlarmService::Loop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-alarms");
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(m);
  while (!stop.stop_requested()) {
    cv.wait_for(lock, stop, std::chrono::milliseconds(options_.tick_ms), [] { return false; });
    if (stop.stop_requested()) return;
    EvaluateDue();
  }
}

std::string AlarmService::ArnOf(const std::string& name) const {
  return absl::StrFormat("arn:aws:cloudwatch:%s:%s:alarm:%s", options_.region, options_.account_id,
                         name);
}

absl::Status AlarmService::Put(const model::AlarmDefinition& definition) {
  const std::optional<std::string> job = JobOfAlarm(definition);
  for (const auto* list : {&definition.ok_actions, &definition.alarm_actions,
                           &definition.insufficient_data_actions}) {
    for (const std::string& action : *list) {
      absl::Status s = ValidateAction(action);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "alarm %s (trainwatch runs the rules' actions, not AWS ARNs)", s.message()));
      }
      if (!job && (action == "StopTraining" || action.starts_with("signal:"))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "alarm action \"%s\" acts on a training job, but the alarm's metric has no "
            "TrainingJobName or Host dimension naming one",
            action));
      }
    }
  }
  const int64_t now_ms = options_.clock->NowMs();
  util::MutexLock changes(write_mu_);
  {
    util::MutexLock lock(mu_);
    auto [it, created] = alarms_.try_emplace(definition.name);
    model::AlarmRecord& alarm = it->second;
    alarm.definition = definition;
    alarm.arn = ArnOf(definition.name);
    alarm.configuration_updated_ms = now_ms;
    alarm.evaluated_through_ms = 0;
    if (created) alarm.state_updated_ms = now_ms;
    AddHistory(alarm, {0, now_ms, "ConfigurationUpdate",
                       absl::StrFormat("Alarm \"%s\" %s", definition.name,
                                       created ? "created" : "updated"),
                       Json{{"version", "1.0"}, {"type", created ? "Create" : "Update"}}.dump()});
  }
  EvaluateOne(definition.name, now_ms, /*persist=*/true);
  return absl::OkStatus();
}

absl::Status AlarmService::Delete(const std::vector<std::string>& names) {
  util::MutexLock changes(write_mu_);
  {
    util::MutexLock lock(mu_);
    std::vector<std::string> unknown;
    for (const std::string& n : names) {
      if (!alarms_.contains(n)) unknown.push_back(n);
    }
    if (!unknown.empty()) {
      return absl::NotFoundError(absl::StrFormat("%s not found: %s",
                                                 unknown.size() == 1 ? "Alarm" : "Alarms",
                                                 absl::StrJoin(unknown, ", ")));
    }
  }
  for (const std::string& n : names) {
    TW_RETURN_IF_ERROR(sink_->DeleteAlarm(n));
    util::MutexLock lock(mu_);
    alarms_.erase(n);
  }
  return absl::OkStatus();
}

absl::Status AlarmService::SetState(const std::string& name, AlarmState state,
                                    const std::string& reason, const std::string& reason_data) {
  const int64_t now_ms = options_.clock->NowMs();
  util::MutexLock changes(write_mu_);
  model::AlarmRecord copy;
  {
    util::MutexLock lock(mu_);
    auto it = alarms_.find(name);
    if (it == alarms_.end()) return absl::NotFoundError(absl::StrFormat("Alarm %s not found", name));
    ChangeStateLocked(it->second, {state, reason, reason_data}, now_ms);
    copy = it->second;
  }
  Persist(copy);
  return absl::OkStatus();
}

std::vector<model::AlarmRecord> AlarmService::List() const {
  util::MutexLock lock(mu_);
  std::vector<model::AlarmRecord> out;
  out.reserve(alarms_.size());
  for (const auto& [name, alarm] : alarms_) out.push_back(alarm);
  return out;
}

void AlarmService::EvaluateDue() {
  const int64_t now_ms = options_.clock->NowMs();
  util::MutexLock changes(write_mu_);
  std::vector<std::string> due;
  {
    util::MutexLock lock(mu_);
    for (const auto& [name, alarm] : alarms_) {
      const int64_t period_ms = alarm.definition.period_s * 1000;
      if (period_ms <= 0) continue;  // not an alarm the api would have taken
      const int64_t through = (now_ms - options_.settle_ms) / period_ms * period_ms;
      if (through > alarm.evaluated_through_ms) due.push_back(name);
    }
  }
  for (const std::string& name : due) EvaluateOne(name, now_ms, /*persist=*/false);
}

void AlarmService::EvaluateOne(const std::string& name, int64_t now_ms, bool persist) {
  model::AlarmDefinition d;
  AlarmState state;
  {
    util::MutexLock lock(mu_);
    auto it = alarms_.find(name);
    if (it == alarms_.end()) return;
    d = it->second.definition;
    state = it->second.state;
  }
  const int64_t period_ms = d.period_s * 1000;
  if (period_ms <= 0) return;
  const int64_t end_ms = (now_ms - options_.settle_ms) / period_ms * period_ms;
  const int range = d.evaluation_periods + kAlarmRangeExtraPeriods;
  // The metric is read without the lock List takes.
  std::optional<AlarmEvaluation> e;
  std::optional<query::Statistic> stat = query::ParseStatistic(d.statistic);
  query::StatisticsQuery q;
  q.metric = {d.ns, d.metric, d.dimensions};
  q.unit = d.unit;
  q.merge_units = true;
  q.start_ms = end_ms - range * period_ms;
  q.end_ms = end_ms;
  q.period_s = d.period_s;
  q.now_ms = now_ms;
  if (stat) q.statistics = {*stat};
  // A query is answered from the finest tier that covers its start: over a
  // range older than the raw tier keeps (3 h by default), a period under a
  // minute would get nothing at all, the newest periods included. Read such
  // ranges an hour at a time, newest first: the old periods the raw tier has
  // dropped are missing, the recent ones are there.
  auto read = [&]() -> absl::StatusOr<std::vector<query::StatisticsBucket>> {
    if (!stat) return absl::InvalidArgumentError("unknown statistic " + d.statistic);
    // An hour, in at most 1,440 periods (GetMetricStatistics' limit).
    const int64_t chunk_ms = std::min<int64_t>(3'600'000 / period_ms, 1440) * period_ms;
    if (d.period_s >= 60 || end_ms - q.start_ms <= chunk_ms) return metrics_->GetStatistics(q);
    std::vector<query::StatisticsBucket> all;
    for (int64_t to = end_ms; to > q.start_ms;) {
      query::StatisticsQuery chunk = q;
      chunk.end_ms = to;
      chunk.start_ms = std::max(q.start_ms, to - chunk_ms);
      TW_ASSIGN_OR_RETURN(std::vector<query::StatisticsBucket> part, metrics_->GetStatistics(chunk));
      all.insert(all.end(), part.begin(), part.end());
      to = chunk.start_ms;
    }
    return all;
  };
  absl::StatusOr<std::vector<query::StatisticsBucket>> buckets = read();
  if (!buckets.ok()) {
    util::LogWarning(absl::StrFormat("alarm \"%s\": reading %s %s failed: %s", d.name, d.ns,
                                     d.metric, buckets.status().message()));
  } else {
    std::vector<AlarmPeriod> periods(range);
    for (int i = 0; i < range; ++i) periods[i].t_ms = q.start_ms + i * period_ms;
    for (const query::StatisticsBucket& b : *buckets) {
      const int64_t i = (b.t_ms - q.start_ms) / period_ms;
      if (i >= 0 && i < range && !b.values.empty() && b.values[0]) periods[i].value = *b.values[0];
    }
    e = EvaluateAlarm(d, state, periods, now_ms);
  }
  model::AlarmRecord copy;
  {
    util::MutexLock lock(mu_);
    auto it = alarms_.find(name);
    if (it == alarms_.end()) return;
    model::AlarmRecord& alarm = it->second;
    alarm.evaluated_through_ms = end_ms;
    const AlarmState before = alarm.state;
    const std::string reason_before = alarm.state_reason;
    if (e && e->decided) ChangeStateLocked(alarm, *std::move(e), now_ms);
    persist = persist || alarm.state != before || alarm.state_reason != reason_before;
    if (persist) copy = alarm;
  }
  if (persist) Persist(copy);
}

void AlarmService::ChangeStateLocked(model::AlarmRecord& alarm, AlarmEvaluation e, int64_t now_ms) {
  const AlarmState old_state = alarm.state;
  const std::string old_reason = alarm.state_reason;
  alarm.state_reason = e.reason;
  alarm.state_reason_data = e.reason_data;
  if (e.state == old_state) return;
  alarm.state = e.state;
  alarm.state_updated_ms = now_ms;
  const model::AlarmDefinition& d = alarm.definition;
  Json new_state = {{"stateValue", model::AlarmStateName(e.state)}, {"stateReason", e.reason}};
  if (!e.reason_data.empty()) {
    Json parsed = Json::parse(e.reason_data, nullptr, false);
    if (!parsed.is_discarded()) new_state["stateReasonData"] = std::move(parsed);
  }
  AddHistory(alarm,
      {0, now_ms, "StateUpdate",
       absl::StrFormat("Alarm updated from %s to %s", model::AlarmStateName(old_state),
                       model::AlarmStateName(e.state)),
       Json{{"version", "1.0"},
            {"oldState", {{"stateValue", model::AlarmStateName(old_state)}, {"stateReason", old_reason}}},
            {"newState", std::move(new_state)}}
           .dump()});
  const std::vector<std::string>& actions =
      e.state == AlarmState::kAlarm ? d.alarm_actions
      : e.state == AlarmState::kOk  ? d.ok_actions
                                    : d.insufficient_data_actions;
  if (d.actions_enabled) {
    for (const std::string& action : actions) {
      ActionRequest request;
      request.job = JobOfAlarm(d).value_or("");
      request.action = action;
      model::RuleFinding& f = request.finding;
      f.rule = "alarm " + d.name;
      f.reason = absl::AsciiStrToLower(std::string(model::AlarmStateName(e.state)));
      f.subject = d.metric;
      f.t_ms = now_ms;
      f.threshold = d.threshold;
      f.message = absl::StrFormat("Alarm \"%s\" went from %s to %s: %s", d.name,
                                  model::AlarmStateName(old_state), model::AlarmStateName(e.state),
                                  e.reason);
      if (actions_ != nullptr) actions_->Run(request);
      AddHistory(alarm, {0, now_ms, "Action", absl::StrFormat("Started action %s", action),
                         Json{{"version", "1.0"}, {"action", action}}.dump()});
    }
  }
}

void AlarmService::Persist(const model::AlarmRecord& alarm) {
  absl::Status s = sink_->PutAlarm(alarm);
  if (!s.ok()) {
    util::LogWarning(absl::StrFormat("alarm \"%s\": writing it to the store failed: %s",
                                     alarm.definition.name, s.message()));
  }
}

}  // namespace trainwatch::rules
