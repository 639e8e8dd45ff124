#pragma once
// LocalRules: the rule engine of the process that holds the data folder
// (`trainwatch server`, or `trainwatch run` when no server takes its data),
// subscribed to that process's ingest: it sees every datapoint, line and job
// record written there, whoever sent them, and writes its statuses and
// findings back through the same ingest. Actions reach jobs through the
// targets the caller gives (a run stops its own job; the server stops the
// jobs it runs and asks other runners through their records).
//
//   app::LocalRules rules(ingest.get(), {.stop = ..., .signal = ...});
//   ... the run or the server ...
//   rules.Flush();   // everything observed is evaluated and written

#include <memory>

#include "ingest/ingest.h"
#include "rules/actions.h"
#include "rules/engine.h"
#include "util/clock.h"

namespace trainwatch::app {

class LocalRules final : public rules::RuleResultSink {
 public:
  // `ingest` and `clock` must outlive this; `environment` is what rules may
  // read besides their job (rules/reference.h: other jobs, over the store).
  LocalRules(ingest::Ingest* ingest, rules::ActionTargets targets,
             rules::RuleEnvironment environment = {},
             util::Clock* clock = &util::SystemClock::Get());
  ~LocalRules() override;
  LocalRules(const LocalRules&) = delete;
  LocalRules& operator=(const LocalRules&) = delete;

  rules::Engine& engine() { return *engine_; }
  // What runs the rules' actions (CloudWatch alarms run theirs here too).
  rules::Actions& actions() { return actions_; }
  // Evaluates and writes everything observed so far, then runs the actions
  // it asked for.
  void Flush();

  absl::Status SetRuleStatuses(const std::string& job, int host_index,
                               const std::vector<model::RuleStatus>& statuses) override;
  absl::Status PutLogs(const model::LogBatch& batch) override;

 private:
  ingest::Ingest* const ingest_;
  rules::Actions actions_;
  std::unique_ptr<rules::Engine> engine_;  // after actions_: stops first
};

}  // namespace trainwatch::app
