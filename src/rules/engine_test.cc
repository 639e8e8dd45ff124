#include "rules/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/job_events.h"
#include "util/clock.h"

namespace trainwatch::rules {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kT0 = 1736942400000;

model::JobRecord Job(std::vector<model::RuleConfiguration> rules, std::string profile = "") {
  model::JobRecord job;
  job.name = "mnist-7";
  job.creation_ms = job.last_modified_ms = kT0;
  job.rule_configurations = std::move(rules);
  job.rules_profile = std::move(profile);
  job.step_metric = "step";
  return job;
}

model::SeriesKey Metric(std::string name) {
  return *model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), std::move(name),
                               {{"TrainingJobName", "mnist-7"}});
}

model::SampleBatch NonFinite(std::string metric, std::string value, int64_t t_ms) {
  model::SampleBatch b;
  b.series.push_back({*model::MakeSeriesKey(std::string(model::kJobEventsNamespace),
                                            std::string(model::kNonFiniteMetricValues),
                                            {{"TrainingJobName", "mnist-7"},
                                             {"MetricName", std::move(metric)},
                                             {"Value", std::move(value)}},
                                            "Count"),
                      1,
                      {{t_ms, 1}}, {}, {}});
  return b;
}

model::SampleBatch Values(std::string metric, std::vector<model::Sample> samples) {
  model::SampleBatch b;
  b.series.push_back({Metric(std::move(metric)), 1, std::move(samples), {}, {}});
  return b;
}

Input In(Signal s, int64_t t, double v = 0, std::string_view name = {}) {
  Input in;
  in.signal = s;
  in.t_ms = t;
  in.value = v;
  in.name = name;
  return in;
}

TEST(JobEvaluator, StatusesFollowTheRuleAndTheJob) {
  JobEvaluator ev(Job({{"nan", "ExplodingTensor", {}, {"StopTraining"}},
                       {"quiet", "ExplodingTensor", {{"metrics", "val:acc"}}, {}}}),
                  kT0);
  ASSERT_EQ(ev.statuses().size(), 2u);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kInProgress);
  EXPECT_EQ(ev.statuses()[0].family, "debug");
  Outcome out;
  ev.Feed(In(Signal::kMetric, kT0 + 1, 7, "step"), &out);
  ev.Feed(In(Signal::kNonFinite, kT0 + 2, std::nan(""), "train:loss"), &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kIssuesFound);
  EXPECT_EQ(ev.statuses()[0].details, "train:loss was NaN at step 7.");
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].rule, "nan");
  EXPECT_EQ(out.findings[0].step, 7);
  ASSERT_EQ(out.actions.size(), 1u);
  EXPECT_EQ(out.actions[0].action, "StopTraining");
  EXPECT_EQ(out.actions[0].job, "mnist-7");

  // The same issue a second later is counted, not recorded again.
  Outcome again;
  ev.Feed(In(Signal::kNonFinite, kT0 + 1000, std::nan(""), "train:loss"), &again);
  EXPECT_TRUE(again.findings.empty());
  EXPECT_TRUE(again.actions.empty());
  EXPECT_EQ(ev.statuses()[0].findings_total, 2);
  EXPECT_EQ(ev.statuses()[0].findings.size(), 1u);

  Outcome end;
  model::JobRecord done = Job({});
  done.status = model::JobStatus::kCompleted;
  done.training_end_ms = kT0 + 5000;
  ev.JobChanged(done, &end);
  EXPECT_TRUE(ev.ended());
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kIssuesFound);  // latched
  EXPECT_EQ(ev.statuses()[1].status, model::RuleStatusKind::kNoIssuesFound);
  // Not silent: it says it saw none of its metrics.
  EXPECT_THAT(ev.statuses()[1].details, HasSubstr("No data"));
  EXPECT_EQ(ev.statuses()[1].findings.at(0).reason, "no_data");
}

// Live, an input may arrive after a step metric of a later time (a profiler
// sample taken before a line but delivered after it): it gets the step of its
// own time, as replay (which feeds in time order) gives it.
TEST(JobEvaluator, AnInputGetsTheStepOfItsTimeWhateverItsArrival) {
  JobEvaluator ev(Job({{"nan", "ExplodingTensor", {}, {}}}), kT0);
  Outcome out;
  ev.Feed(In(Signal::kNonFinite, kT0 - 10, std::nan(""), "a"), &out);
  ev.Feed(In(Signal::kMetric, kT0, 6, "step"), &out);
  ev.Feed(In(Signal::kMetric, kT0 + 100, 7, "step"), &out);
  ev.Feed(In(Signal::kNonFinite, kT0 + 50, std::nan(""), "b"), &out);   // late
  ev.Feed(In(Signal::kNonFinite, kT0 + 100, std::nan(""), "c"), &out);  // same time
  ev.Feed(In(Signal::kNonFinite, kT0 + 150, std::nan(""), "d"), &out);
  ASSERT_EQ(out.findings.size(), 4u);
  EXPECT_EQ(out.findings[0].step, -1);  // before any step
  EXPECT_EQ(out.findings[1].step, 6);
  EXPECT_EQ(out.findings[2].step, 7);
  EXPECT_EQ(out.findings[3].step, 7);
}

TEST(JobEvaluator, ABadConfigurationIsAnErrorAndTheOthersGoOn) {
  JobEvaluator ev(Job({{"bad", "ExplodingTensor", {{"only_nan", "perhaps"}}, {}},
                       {"unknown", "NoSuchRule", {}, {}},
                       {"good", "ExplodingTensor", {}, {}}}),
                  kT0);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kError);
  EXPECT_THAT(ev.statuses()[0].details, HasSubstr("only_nan=\"perhaps\""));
  EXPECT_EQ(ev.statuses()[1].status, model::RuleStatusKind::kError);
  EXPECT_THAT(ev.statuses()[1].details, HasSubstr("no built-in rule \"NoSuchRule\""));
  Outcome out;
  ev.Feed(In(Signal::kNonFinite, kT0, INFINITY, "loss"), &out);
  EXPECT_EQ(ev.statuses()[2].status, model::RuleStatusKind::kIssuesFound);
  ev.End(model::JobStatus::kCompleted, kT0 + 10, &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kError);
}

TEST(JobEvaluator, AStoppedJobStopsItsRules) {
  JobEvaluator ev(Job({{"nan", "ExplodingTensor", {}, {}}}), kT0);
  Outcome out;
  ev.Feed(In(Signal::kMetric, kT0, 0.5, "loss"), &out);
  model::JobRecord stopping = Job({});
  stopping.status = model::JobStatus::kStopping;
  ev.JobChanged(stopping, &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kStopping);
  model::JobRecord stopped = Job({});
  stopped.status = model::JobStatus::kStopped;
  ev.JobChanged(stopped, &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kStopped);
}

TEST(JobEvaluator, CompatProfileStopsARuleAtItsFirstIssue) {
  JobEvaluator ev(Job({{"nan", "ExplodingTensor", {}, {}}}, "sagemaker_compat"), kT0, 0);
  Outcome out;
  ev.Feed(In(Signal::kNonFinite, kT0, std::nan(""), "a"), &out);
  ev.Feed(In(Signal::kNonFinite, kT0 + 1, std::nan(""), "b"), &out);
  EXPECT_EQ(ev.statuses()[0].findings_total, 1);
  JobEvaluator live(Job({{"nan", "ExplodingTensor", {}, {}}}), kT0, 0);
  live.Feed(In(Signal::kNonFinite, kT0, std::nan(""), "a"), &out);
  live.Feed(In(Signal::kNonFinite, kT0 + 1, std::nan(""), "b"), &out);
  EXPECT_EQ(live.statuses()[0].findings_total, 2);
}

TEST(JobEvaluator, StepRulesWithoutAStepMetricSayWhyTheyDidNotRun) {
  model::JobRecord job = Job({{"init", "MaxInitializationTime", {{"threshold", "1s"}}, {}}});
  job.step_metric.clear();
  JobEvaluator ev(job, kT0);
  Outcome out;
  // Long past the threshold: with no step metric this is not "no step".
  ev.Feed(In(Signal::kJobCpu, kT0, 50), &out);
  ev.Feed(In(Signal::kTick, kT0 + 60'000), &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kInProgress);
  ev.End(model::JobStatus::kCompleted, kT0 + 61'000, &out);
  EXPECT_EQ(ev.statuses()[0].status, model::RuleStatusKind::kNoIssuesFound);
  EXPECT_THAT(ev.statuses()[0].details, HasSubstr("the job has no step metric"));

  // With one, a loop that never starts is an issue.
  JobEvaluator with_steps(Job({{"init", "MaxInitializationTime", {{"threshold", "1s"}}, {}}}),
                          kT0);
  with_steps.Feed(In(Signal::kJobCpu, kT0, 50), &out);
  with_steps.Feed(In(Signal::kTick, kT0 + 60'000), &out);
  EXPECT_EQ(with_steps.statuses()[0].status, model::RuleStatusKind::kIssuesFound);
}

class FakeResults : public RuleResultSink {
 public:
  absl::Status SetRuleStatuses(const std::string& job, int host,
                               const std::vector<model::RuleStatus>& statuses) override {
    std::lock_guard<std::mutex> lock(mu);
    last[job + "/" + std::to_string(host)] = statuses;
    ++status_writes;
    return absl::OkStatus();
  }
  absl::Status PutLogs(const model::LogBatch& batch) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : batch.events) logs.push_back(batch.stream.stream + " " + e.message);
    return absl::OkStatus();
  }
  std::mutex mu;
  std::map<std::string, std::vector<model::RuleStatus>> last;
  int status_writes = 0;
  std::vector<std::string> logs;
};

class FakeActions : public ActionHandler {
 public:
  void Run(const ActionRequest& r) override {
    std::lock_guard<std::mutex> lock(mu);
    runs.push_back(r.job + " " + r.action + " " + r.finding.reason);
  }
  std::mutex mu;
  std::vector<std::string> runs;
};

TEST(Engine, ANonFiniteMatchBecomesAnIssueALogEventAndAnAction) {
  util::FakeClock clock(kT0);
  FakeResults results;
  FakeActions actions;
  Engine engine(&results, &actions, {.clock = &clock});
  engine.OnJob(Job({{"nan", "ExplodingTensor", {}, {"StopTraining"}}}));
  engine.OnSamples(Values("train:loss", {{kT0 + 1, 0.5}}));
  engine.OnSamples(NonFinite("train:loss", "NaN", kT0 + 2));
  engine.Flush();
  std::optional<std::vector<model::RuleStatus>> statuses = engine.Statuses("mnist-7");
  ASSERT_TRUE(statuses.has_value());
  EXPECT_EQ(statuses->at(0).status, model::RuleStatusKind::kIssuesFound);
  EXPECT_EQ(results.last.at("mnist-7/1").at(0).status, model::RuleStatusKind::kIssuesFound);
  ASSERT_EQ(results.logs.size(), 1u);
  EXPECT_THAT(results.logs[0], HasSubstr("mnist-7/rules {\"rule\":\"nan\",\"severity\":\"issue\","
                                         "\"reason\":\"nan\",\"subject\":\"train:loss\""));
  EXPECT_THAT(results.logs[0], HasSubstr("\"observed\":\"NaN\""));
  EXPECT_EQ(actions.runs, std::vector<std::string>{"mnist-7 StopTraining nan"});

  // The job ends: statuses are final, and later data changes nothing.
  model::JobRecord done = Job({{"nan", "ExplodingTensor", {}, {"StopTraining"}}});
  done.status = model::JobStatus::kStopped;
  engine.OnJob(done);
  engine.OnSamples(NonFinite("train:loss", "NaN", kT0 + 3));
  engine.Flush();
  EXPECT_EQ(engine.Statuses("mnist-7")->at(0).findings_total, 1);
}

TEST(Engine, JobsWithoutRulesAndUnrelatedSeriesAreIgnored) {
  util::FakeClock clock(kT0);
  FakeResults results;
  Engine engine(&results, nullptr, {.clock = &clock});
  engine.OnJob(Job({}));
  engine.OnSamples(NonFinite("train:loss", "NaN", kT0 + 2));
  engine.Flush();
  EXPECT_FALSE(engine.Statuses("mnist-7").has_value());
  EXPECT_EQ(results.status_writes, 0);
}

}  // namespace
}  // namespace trainwatch::rules
