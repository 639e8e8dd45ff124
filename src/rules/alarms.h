#pragma once
// CloudWatch metric alarms, live (docs/alarms.md). EvaluateAlarm is the pure
// decision: given the alarm and its metric's statistic for each period of the
// evaluation range, the state CloudWatch's rules give (M out of N datapoints,
// TreatMissingData). AlarmService owns every alarm of a server: the api's
// PutMetricAlarm, DeleteAlarms and SetAlarmState go through it, a thread of
// its own evaluates each alarm when one of its periods ends (plus a settle
// delay for late samples), records state changes in the alarm's history and
// the store, and runs the actions of the new state with the rules' actions
// (rules/actions.h: StopTraining, signal, exec, webhook).
//
//   rules::AlarmService alarms(&reader, &sink, &actions, {.clock = &clock});
//   TW_RETURN_IF_ERROR(alarms.Load(stored));   // what the store holds
//   alarms.Start();
//
// Thread safety: every public method is thread-safe. Changes (Put, Delete,
// SetState, an evaluation) take turns, and read the metrics and write the
// store outside the lock that List takes: reads never wait for the disk.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/alarm.h"
#include "query/reader.h"
#include "rules/engine.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::rules {

// Periods read before the newest EvaluationPeriods, so that a few missing
// datapoints do not hide older ones (CloudWatch's "evaluation range").
inline constexpr int kAlarmRangeExtraPeriods = 2;

// One period of the evaluation range: its start and the statistic's value
// (nullopt: no datapoint).
struct AlarmPeriod {
  int64_t t_ms = 0;
  std::optional<double> value;
};

struct AlarmEvaluation {
  model::AlarmState state = model::AlarmState::kInsufficientData;
  std::string reason;       // StateReason
  std::string reason_data;  // StateReasonData (JSON)
  // False when ignore or missing left the datapoints present unable to
  // decide: `state` is then the current one and nothing changes.
  bool decided = true;
};

// `periods`: the evaluation range, oldest first (EvaluationPeriods +
// kAlarmRangeExtraPeriods of them, or fewer at the start of the data).
// `current`: the state now (ignore and missing keep it when the datapoints
// present cannot decide). `query_ms`: when the data was read.
AlarmEvaluation EvaluateAlarm(const model::AlarmDefinition& alarm, model::AlarmState current,
                              const std::vector<AlarmPeriod>& periods, int64_t query_ms);

// Where alarm records are kept (app/: the store).
class AlarmSink {
 public:
  virtual ~AlarmSink() = default;
  virtual absl::Status PutAlarm(const model::AlarmRecord& alarm) = 0;
  virtual absl::Status DeleteAlarm(const std::string& name) = 0;
};

struct AlarmServiceOptions {
  util::Clock* clock = nullptr;  // required
  // How long after a period ends its alarms are evaluated: samples of the
  // period's last moments may still be on their way.
  int64_t settle_ms = 2'000;
  // How often the thread looks for alarms to evaluate.
  int64_t tick_ms = 500;
  std::string region = "us-east-1";
  std::string account_id = "000000000000";
};

class AlarmService {
 public:
  AlarmService(query::MetricsReader* metrics, AlarmSink* sink, ActionHandler* actions,
               AlarmServiceOptions options);
  ~AlarmService();
  AlarmService(const AlarmService&) = delete;
  AlarmService& operator=(const AlarmService&) = delete;

  // The alarms the store holds (before Start).
  void Load(std::vector<model::AlarmRecord> alarms);
  // Starts the evaluation thread.
  void Start();

  // PutMetricAlarm: creates the alarm, or replaces its definition (its state
  // is kept, as CloudWatch keeps it, and it is evaluated at once).
  // InvalidArgument for an action trainwatch cannot run, or one that stops
  // or signals a job when the alarm's metric belongs to none.
  absl::Status Put(const model::AlarmDefinition& definition);
  // DeleteAlarms: NotFound (naming them) when any name is not an alarm;
  // then nothing is deleted.
  absl::Status Delete(const std::vector<std::string>& names);
  // SetAlarmState: the state until the next evaluation decides otherwise;
  // runs the new state's actions. NotFound for an unknown alarm.
  absl::Status SetState(const std::string& name, model::AlarmState state,
                        const std::string& reason, const std::string& reason_data);
  // Every alarm, by name.
  std::vector<model::AlarmRecord> List() const;

  // Evaluates every alarm whose newest complete period is newer than its
  // last evaluation (the thread calls this; tests call it with a fake clock).
  void EvaluateDue() ABSL_LOCKS_EXCLUDED(write_mu_);

  std::string ArnOf(const std::string& name) const;

 private:
  // Evaluates alarm `name` now, applies the result and writes it when it
  // changed (or `persist`).
  void EvaluateOne(const std::string& name, int64_t now_ms, bool persist)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void ChangeStateLocked(model::AlarmRecord& alarm, AlarmEvaluation evaluation, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Persist(const model::AlarmRecord& alarm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void Loop(std::stop_token stop);

  query::MetricsReader* const metrics_;
  AlarmSink* const sink_;
  ActionHandler* const actions_;
  const AlarmServiceOptions options_;

  util::Mutex write_mu_;  // one change at a time, store writes included
  mutable util::Mutex mu_ ABSL_ACQUIRED_AFTER(write_mu_);
  std::map<std::string, model::AlarmRecord> alarms_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;  // last: joins before the members above go
};

// The job an alarm's metric belongs to (its TrainingJobName dimension, or
// Host = "<job>/algo-<n>"), for StopTraining and signal actions; nullopt
// when none.
std::optional<std::string> JobOfAlarm(const model::AlarmDefinition& alarm);

}  // namespace trainwatch::rules
