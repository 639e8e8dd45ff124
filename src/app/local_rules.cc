#include "app/local_rules.h"

namespace trainwatch::app {

LocalRules::LocalRules(ingest::Ingest* ingest, rules::ActionTargets targets,
                       rules::RuleEnvironment environment, util::Clock* clock)
    : ingest_(ingest), actions_(std::move(targets)) {
  engine_ = std::make_unique<rules::Engine>(
      this, &actions_,
      rules::EngineOptions{.clock = clock, .environment = std::move(environment)});
  ingest_->Subscribe(engine_.get());
}

LocalRules::~LocalRules() {
  ingest_->Unsubscribe(engine_.get());
  engine_.reset();
}

void LocalRules::Flush() {
  engine_->Flush();
  actions_.Drain();
}

absl::Status LocalRules::SetRuleStatuses(const std::string& job, int host_index,
                                         const std::vector<model::RuleStatus>& statuses) {
  return ingest_->SetRuleStatuses(job, host_index, statuses);
}

absl::Status LocalRules::PutLogs(const model::LogBatch& batch) { return ingest_->PutLogs(batch); }

}  // namespace trainwatch::app
