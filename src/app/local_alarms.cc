#include "app/local_alarms.h"

#include "util/status_macros.h"

namespace trainwatch::app {

LocalAlarms::LocalAlarms(ingest::Ingest* ingest, query::MetricsReader* metrics,
                         query::AlarmsReader* stored, rules::ActionHandler* actions,
                         util::Clock* clock)
    : ingest_(ingest),
      stored_(stored),
      service_(std::make_unique<rules::AlarmService>(
          metrics, this, actions, rules::AlarmServiceOptions{.clock = clock})) {}

absl::Status LocalAlarms::Start() {
  TW_ASSIGN_OR_RETURN(std::vector<model::AlarmRecord> alarms, stored_->ListAlarms());
  service_->Load(std::move(alarms));
  service_->Start();
  return absl::OkStatus();
}

absl::Status LocalAlarms::PutMetricAlarm(const model::AlarmDefinition& alarm) {
  return service_->Put(alarm);
}

absl::Status LocalAlarms::DeleteAlarms(const std::vector<std::string>& names) {
  return service_->Delete(names);
}

absl::Status LocalAlarms::SetAlarmState(const std::string& name, model::AlarmState state,
                                        const std::string& reason,
                                        const std::string& reason_data) {
  return service_->SetState(name, state, reason, reason_data);
}

absl::StatusOr<std::vector<model::AlarmRecord>> LocalAlarms::ListAlarms() {
  return service_->List();
}

absl::Status LocalAlarms::PutAlarm(const model::AlarmRecord& alarm) {
  return ingest_->PutAlarm(alarm);
}

absl::Status LocalAlarms::DeleteAlarm(const std::string& name) { return ingest_->DeleteAlarm(name); }

}  // namespace trainwatch::app
