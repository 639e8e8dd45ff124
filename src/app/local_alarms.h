#pragma once
// LocalAlarms: the CloudWatch alarms of the process that holds the data
// folder (`trainwatch server`): a rules::AlarmService over the store's
// metrics, its records kept through ingest, its actions run by the rules'
// actions (so an alarm can stop the job its metric belongs to), and the api's
// alarm operations (api::AlarmsBackend) answered from it.
//
//   app::LocalAlarms alarms(ingest.get(), &reader, &reader, &rules->actions());
//   TW_RETURN_IF_ERROR(alarms.Start());     // loads the stored alarms
//   backends.alarms = &alarms;

#include <memory>
#include <string>
#include <vector>

#include "api/backend.h"
#include "ingest/ingest.h"
#include "query/reader.h"
#include "rules/alarms.h"
#include "util/clock.h"

namespace trainwatch::app {

class LocalAlarms final : public api::AlarmsBackend, public rules::AlarmSink {
 public:
  // Everything given must outlive this.
  LocalAlarms(ingest::Ingest* ingest, query::MetricsReader* metrics, query::AlarmsReader* stored,
              rules::ActionHandler* actions, util::Clock* clock = &util::SystemClock::Get());
  // Loads the alarms the store holds and starts evaluating them.
  absl::Status Start();

  // api::AlarmsBackend
  absl::Status PutMetricAlarm(const model::AlarmDefinition& alarm) override;
  absl::Status DeleteAlarms(const std::vector<std::string>& names) override;
  absl::Status SetAlarmState(const std::string& name, model::AlarmState state,
                             const std::string& reason, const std::string& reason_data) override;
  absl::StatusOr<std::vector<model::AlarmRecord>> ListAlarms() override;

  // rules::AlarmSink
  absl::Status PutAlarm(const model::AlarmRecord& alarm) override;
  absl::Status DeleteAlarm(const std::string& name) override;

 private:
  ingest::Ingest* const ingest_;
  query::AlarmsReader* const stored_;
  std::unique_ptr<rules::AlarmService> service_;  // last: its thread stops first
};

}  // namespace trainwatch::app
