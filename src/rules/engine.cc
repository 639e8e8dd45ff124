#include "rules/engine.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "rules/replay.h"
#include "util/check.h"
#include "util/log.h"

namespace trainwatch::rules {

std::string FindingJson(const model::RuleFinding& f) {
  nlohmann::ordered_json j;
  j["rule"] = f.rule;
  j["severity"] = std::string(model::FindingSeverityName(f.severity));
  j["reason"] = f.reason;
  j["subject"] = f.subject;
  if (f.step >= 0) j["step"] = f.step;
  auto number = [](double v) -> nlohmann::ordered_json {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
  };
  j["observed"] = number(f.observed);
  j["threshold"] = number(f.threshold);
  j["message"] = f.message;
  j["recommendation"] = f.recommendation;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Engine::Engine(RuleResultSink* results, ActionHandler* actions, EngineOptions options)
    : results_(results), actions_(actions), options_(options) {
  TW_CHECK(options_.clock != nullptr);
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

Engine::~Engine() {
  thread_.request_stop();
  {
    util::MutexLock lock(mu_);
    wake_.notify_all();
  }
  thread_.join();
}

void Engine::Enqueue(Item item) {
  item.queued_at = std::chrono::steady_clock::now();
  util::MutexLock lock(mu_);
  pending_.push_back(std::move(item));
  ++queued_;
  wake_.notify_one();
}

void Engine::Watch(const model::JobRecord& job, query::MetricsReader* metrics,
                   query::LogsReader* logs) {
  if (!job.rule_configurations.empty() && !model::IsTerminal(job.status)) {
    SetRuleJob(job.name, true);
  }
  Item item;
  item.kind = Item::kWatch;
  item.job = job;
  if (metrics != nullptr && logs != nullptr && !job.rule_configurations.empty() &&
      !model::IsTerminal(job.status)) {
    auto evaluator =
        std::make_unique<JobEvaluator>(job, job.creation_ms, options_.repeat_quiet_ms,
                                       options_.environment);
    absl::Status s = FeedStoredInputs(job, *metrics, *logs, ReplayOptions{},
                                      options_.clock->NowMs(), evaluator.get(), nullptr, nullptr);
    if (s.ok()) {
      item.rebuilt = std::move(evaluator);
    } else {
      util::LogWarning(absl::StrFormat("rules: cannot rebuild the rules of job %s from the store "
                                       "(%s); they start afresh",
                                       job.name, std::string(s.message())));
    }
  }
  Enqueue(std::move(item));
}

void Engine::SetRuleJob(const std::string& name, bool has_rules) {
  util::MutexLock lock(rule_jobs_mu_);
  if (rule_jobs_->count(name) == (has_rules ? 1u : 0u)) return;
  auto next = std::make_shared<std::set<std::string>>(*rule_jobs_);
  if (has_rules) {
    next->insert(name);
  } else {
    next->erase(name);
  }
  rule_jobs_ = std::move(next);
}

std::shared_ptr<const std::set<std::string>> Engine::RuleJobs() const {
  util::MutexLock lock(rule_jobs_mu_);
  return rule_jobs_;
}

void Engine::OnSamples(const model::SampleBatch& batch) {
  const std::shared_ptr<const std::set<std::string>> jobs = RuleJobs();
  if (jobs->empty()) return;
  Item item;
  AppendSampleInputs(batch, &item.inputs,
                     [&](const std::string& job) { return jobs->count(job) > 0; });
  if (item.inputs.empty()) return;
  Enqueue(std::move(item));
}

void Engine::OnLogs(const model::LogBatch& batch) {
  const std::shared_ptr<const std::set<std::string>> jobs = RuleJobs();
  if (jobs->empty()) return;
  Item item;
  AppendLogInputs(batch, &item.inputs);
  if (item.inputs.empty() || jobs->count(item.inputs.front().job) == 0) return;
  Enqueue(std::move(item));
}

void Engine::OnJob(const model::JobRecord& job) {
  // A job's last record (terminal) still comes after its last samples; the
  // job leaves the set once the engine thread has seen it end.
  if (!job.rule_configurations.empty() && !model::IsTerminal(job.status)) {
    SetRuleJob(job.name, true);
  }
  Item item;
  item.kind = Item::kJob;
  item.job = job;
  Enqueue(std::move(item));
}

void Engine::Flush() {
  util::MutexLock lock(mu_);
  const uint64_t target = queued_;
  lock.Wait(processed_changed_,
            [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return processed_ >= target; });
}

std::optional<std::vector<model::RuleStatus>> Engine::Statuses(const std::string& job) const {
  util::MutexLock lock(mu_);
  auto it = published_.find(job);
  if (it == published_.end()) return std::nullopt;
  return it->second;
}

Engine::Stats Engine::GetStats() const {
  Stats stats;
  {
    util::MutexLock lock(mu_);
    stats.items_queued = queued_;
    stats.items_processed = processed_;
    stats.items_pending = pending_.size();
  }
  stats.inputs_evaluated = inputs_evaluated_.load(std::memory_order_relaxed);
  stats.jobs_watched = jobs_watched_.load(std::memory_order_relaxed);
  return stats;
}

void Engine::Loop(std::stop_token stop) {
  const auto tick = std::chrono::milliseconds(std::max<int64_t>(options_.tick_ms, 1));
  while (true) {
    std::vector<Item> items;
    {
      util::MutexLock lock(mu_);
      if (pending_.empty() && !stop.stop_requested()) lock.WaitOnceFor(wake_, tick);
      if (stop.stop_requested()) return;
      items.swap(pending_);
    }
    std::map<std::string, Outcome> outcomes;
    for (Item& item : items) Process(item, &outcomes);
    const int64_t now_ms = options_.clock->NowMs();
    if (now_ms - last_tick_ms_ >= options_.tick_ms) Tick(now_ms, &outcomes);
    Write(outcomes);
    jobs_watched_.store(jobs_.size(), std::memory_order_relaxed);
    if (!items.empty()) {
      const auto done = std::chrono::steady_clock::now();
      for (const Item& item : items) {
        evaluation_seconds_.Observe(std::chrono::duration<double>(done - item.queued_at).count());
        inputs_evaluated_.fetch_add(item.inputs.size(), std::memory_order_relaxed);
      }
      util::MutexLock lock(mu_);
      processed_ += items.size();
      processed_changed_.notify_all();
    }
  }
}

void Engine::Process(Item& item, std::map<std::string, Outcome>* outcomes) {
  if (item.kind != Item::kInputs) {
    const model::JobRecord& job = item.job;
    auto it = jobs_.find(job.name);
    if (it == jobs_.end()) {
      if (job.rule_configurations.empty() || model::IsTerminal(job.status) ||
          ended_jobs_.count(job.name) > 0) {
        return;
      }
      std::unique_ptr<JobEvaluator> evaluator =
          item.rebuilt ? std::move(item.rebuilt)
                       : std::make_unique<JobEvaluator>(job, options_.clock->NowMs(),
                                                        options_.repeat_quiet_ms,
                                                        options_.environment);
      (*outcomes)[job.name].statuses_changed = true;  // the initial InProgress statuses
      it = jobs_.emplace(job.name, std::move(evaluator)).first;
    }
    // Each host writes its own record; the one holding the statuses decides.
    if (job.host_index == it->second->status_host()) {
      it->second->JobChanged(job, &(*outcomes)[job.name]);
    }
    return;
  }
  // Time order within the batch, per job (a batch may hold several series).
  std::stable_sort(item.inputs.begin(), item.inputs.end(),
                   [](const OwnedInput& a, const OwnedInput& b) {
                     return a.input.t_ms < b.input.t_ms;
                   });
  for (const OwnedInput& in : item.inputs) {
    auto it = jobs_.find(in.job);
    if (it == jobs_.end() || it->second->ended()) continue;
    it->second->Feed(in.AsInput(), &(*outcomes)[in.job]);
  }
}

void Engine::Tick(int64_t now_ms, std::map<std::string, Outcome>* outcomes) {
  last_tick_ms_ = now_ms;
  Input tick;
  tick.signal = Signal::kTick;
  tick.t_ms = now_ms;
  for (auto& [name, job] : jobs_) {
    if (!job->ended()) job->Feed(tick, &(*outcomes)[name]);
  }
}

void Engine::Write(std::map<std::string, Outcome>& outcomes) {
  for (auto& [name, outcome] : outcomes) {
    auto it = jobs_.find(name);
    if (it == jobs_.end()) continue;
    JobEvaluator& job = *it->second;
    if (!outcome.findings.empty()) {
      model::LogBatch batch;
      batch.stream = {std::string(model::kTrainingJobsLogGroup), RulesLogStream(name)};
      for (const model::RuleFinding& f : outcome.findings) {
        batch.events.push_back({f.t_ms, FindingJson(f)});
      }
      std::stable_sort(batch.events.begin(), batch.events.end(),
                       [](const model::LogEvent& a, const model::LogEvent& b) {
                         return a.t_ms < b.t_ms;
                       });
      absl::Status s = results_->PutLogs(batch);
      if (!s.ok()) {
        util::LogOnce("rules-log", absl::StrFormat("rules: cannot write the findings of %s: %s",
                                                   name, std::string(s.message())));
      }
    }
    if (outcome.statuses_changed) {
      absl::Status s = results_->SetRuleStatuses(name, job.status_host(), job.statuses());
      if (!s.ok()) {
        util::LogOnce("rules-status", absl::StrFormat("rules: cannot record the statuses of %s: %s",
                                                      name, std::string(s.message())));
      }
      util::MutexLock lock(mu_);
      published_[name] = job.statuses();
    }
    for (const ActionRequest& action : outcome.actions) {
      if (actions_ != nullptr) {
        actions_->Run(action);
      } else {
        util::LogOnce("rules-no-actions",
                      absl::StrFormat("rules: %s asked for action %s, which nothing here carries "
                                      "out",
                                      action.finding.rule, action.action));
      }
    }
    if (job.ended()) {
      ended_jobs_.insert(name);
      SetRuleJob(name, false);
      jobs_.erase(it);
    }
  }
}

}  // namespace trainwatch::rules
