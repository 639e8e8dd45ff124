#pragma once
// Engine: the rules, live. It observes an ingest path (model::IngestObserver:
// every datapoint, log line and job record a job produces, whoever sent it),
// turns what it sees into rule inputs (rules/inputs.h), feeds each job's
// rules in time order on its own thread (rules/evaluator.h), ticks the
// time-driven rules with its clock, and writes what they conclude:
//
//   - the job's rule statuses with their findings (RuleResultSink::SetRuleStatuses,
//     which the store keeps with the job record);
//   - each recorded finding as a JSON event in the job's "<job>/rules" log
//     stream, so CloudWatch Logs clients see them;
//   - the actions of each issue (ActionHandler: StopTraining, exec, webhook,
//     signal), which never hold up evaluation.
//
//   rules::Engine engine(&results, &actions, {.clock = &clock});
//   ingest.Subscribe(&engine);
//   ... ingest.Unsubscribe(&engine);   // before the engine is destroyed
//
// Latency: an input is evaluated as soon as the engine thread takes it (it
// wakes on every observed batch); time-driven rules see a tick every
// `tick_ms`. Observer calls only queue (a bounded amount of work, no I/O).
//
// Thread safety: the observer methods, Flush and Statuses are thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "model/job_record.h"
#include "model/sinks.h"
#include "query/reader.h"
#include "rules/evaluator.h"
#include "rules/inputs.h"
#include "util/clock.h"
#include "util/mutex.h"
#include "util/prom_text.h"

namespace trainwatch::rules {

// Where the engine's results go (app/ implements it over ingest).
class RuleResultSink {
 public:
  virtual ~RuleResultSink() = default;
  virtual absl::Status SetRuleStatuses(const std::string& job, int host_index,
                                       const std::vector<model::RuleStatus>& statuses) = 0;
  virtual absl::Status PutLogs(const model::LogBatch& batch) = 0;
};

// Carries out an issue's actions (rules/actions.h implements it). Called on
// the engine thread: an implementation must not block (it hands the work to
// a thread of its own).
class ActionHandler {
 public:
  virtual ~ActionHandler() = default;
  virtual void Run(const ActionRequest& request) = 0;
};

struct EngineOptions {
  util::Clock* clock = nullptr;  // required
  // How often time-driven rules (StalledTrainingRule, MaxInitializationTime,
  // NoProgress) see the clock.
  int64_t tick_ms = 200;
  int64_t repeat_quiet_ms = JobEvaluator::kDefaultRepeatQuietMs;
  // What rules may read besides their job (SimilarAcrossRuns: another job's
  // stored statistics); empty: nothing.
  RuleEnvironment environment = {};
};

// The finding as the JSON message of a rules-stream log event.
std::string FindingJson(const model::RuleFinding& finding);

class Engine final : public model::IngestObserver {
 public:
  // `results` and `actions` (may be null: actions are then only logged) must
  // outlive the engine.
  Engine(RuleResultSink* results, ActionHandler* actions, EngineOptions options);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts watching a job whose record was written before the engine
  // subscribed (the server's jobs in progress at start). With readers, the
  // rules' state is rebuilt first from what is stored (rules/replay.h), so
  // an issue found before a restart stays found and windows stay full;
  // without, the rules start afresh.
  void Watch(const model::JobRecord& job, query::MetricsReader* metrics = nullptr,
             query::LogsReader* logs = nullptr);

  void OnSamples(const model::SampleBatch& batch) override;
  void OnLogs(const model::LogBatch& batch) override;
  void OnJob(const model::JobRecord& job) override;

  // Returns once everything observed before the call has been evaluated and
  // its results written (tests; the runner before it exits).
  void Flush();
  // The statuses the engine holds for `job` (nullopt: not a job it watches).
  std::optional<std::vector<model::RuleStatus>> Statuses(const std::string& job) const;

  // For /metrics. Items are observed batches and records; nothing is ever
  // dropped (the queue is not bounded: observers must not block ingest).
  struct Stats {
    uint64_t items_queued = 0;
    uint64_t items_processed = 0;  // evaluated and their results written
    size_t items_pending = 0;      // queued, not taken yet
    uint64_t inputs_evaluated = 0;
    size_t jobs_watched = 0;
  };
  Stats GetStats() const;
  // From an item's observation to its results written (queue wait included).
  const util::Histogram& evaluation_seconds() const { return evaluation_seconds_; }

 private:
  // One observed batch or record, queued for the engine thread.
  struct Item {
    enum Kind : uint8_t { kInputs, kJob, kWatch } kind = kInputs;
    std::vector<OwnedInput> inputs;
    model::JobRecord job;
    std::unique_ptr<JobEvaluator> rebuilt;  // kWatch: the state rebuilt from the store
    std::chrono::steady_clock::time_point queued_at;
  };
  void Loop(std::stop_token stop);
  void Enqueue(Item item);
  void Process(Item& item, std::map<std::string, Outcome>* outcomes);
  void Tick(int64_t now_ms, std::map<std::string, Outcome>* outcomes);
  void Write(std::map<std::string, Outcome>& outcomes);

  RuleResultSink* const results_;
  ActionHandler* const actions_;
  const EngineOptions options_;

  mutable util::Mutex mu_;
  std::condition_variable wake_;  // an item was queued, or stop
  std::vector<Item> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;     // items observed
  uint64_t processed_ ABSL_GUARDED_BY(mu_) = 0;  // items evaluated and written
  std::condition_variable processed_changed_;
  std::map<std::string, std::vector<model::RuleStatus>> published_ ABSL_GUARDED_BY(mu_);

  // The jobs with rules that have not ended, as far as records seen on
  // ingest's threads tell: only their samples become inputs (a copy per
  // sample, which for a server taking other data was a tenth of ingest's
  // CPU). Replaced, never changed, so that OnSamples reads it unlocked.
  void SetRuleJob(const std::string& name, bool has_rules);
  std::shared_ptr<const std::set<std::string>> RuleJobs() const;
  mutable util::Mutex rule_jobs_mu_;
  std::shared_ptr<const std::set<std::string>> rule_jobs_ ABSL_GUARDED_BY(rule_jobs_mu_) =
      std::make_shared<const std::set<std::string>>();

  util::Histogram evaluation_seconds_;
  std::atomic<uint64_t> inputs_evaluated_{0};
  std::atomic<size_t> jobs_watched_{0};  // jobs_.size(), for other threads

  // The engine thread's own.
  std::map<std::string, std::unique_ptr<JobEvaluator>> jobs_;
  std::set<std::string> ended_jobs_;  // their later records start nothing
  int64_t last_tick_ms_ = 0;

  std::jthread thread_;  // last: joins before the members above go
};

}  // namespace trainwatch::rules
