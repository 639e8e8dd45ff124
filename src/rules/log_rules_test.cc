#include "rules/log_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rules/catalog.h"
#include "rules/log_rules_testing.h"

namespace trainwatch::rules {
namespace {

using testing::Metric;
using testing::Signalled;

TEST(ExplodingTensor, NanIsAnIssueNamingMetricAndStep) {
  ExplodingTensorParams p;
  ExplodingTensorState s;
  EXPECT_EQ(OnInput(p, s, Metric("train:loss", 0.5, 1000)).kind, Verdict::kOk);
  Verdict v = OnInput(p, s, Metric("train:loss", std::nan(""), 2000, 17));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].reason, "nan");
  EXPECT_EQ(v.findings[0].subject, "train:loss");
  EXPECT_EQ(v.findings[0].step, 17);
  EXPECT_EQ(v.findings[0].t_ms, 2000);
  EXPECT_EQ(v.findings[0].message, "train:loss was NaN at step 17.");
  EXPECT_FALSE(v.findings[0].recommendation.empty());
}

TEST(ExplodingTensor, InfinityUnlessOnlyNan) {
  ExplodingTensorParams p;
  ExplodingTensorState s;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(OnInput(p, s, Metric("loss", -inf, 1)).kind, Verdict::kIssue);
  p.only_nan = true;
  EXPECT_EQ(OnInput(p, s, Metric("loss", inf, 2)).kind, Verdict::kOk);
  EXPECT_EQ(OnInput(p, s, Metric("loss", std::nan(""), 3)).kind, Verdict::kIssue);
}

TEST(ExplodingTensor, WatchesOnlyTheNamedMetrics) {
  ExplodingTensorParams p;
  p.metrics = {"train:loss"};
  ExplodingTensorState s;
  EXPECT_EQ(OnInput(p, s, Metric("lr", std::nan(""), 1)).kind, Verdict::kPending);
  Verdict end = OnEnd(p, s, 5);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);  // not silent: it saw nothing it watches
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].severity, Severity::kWarning);
}

TEST(ExplodingTensor, ThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r =
      MakeRule("ExplodingTensor", {{"metrics", "a, b"}}, Profile::kDefault);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->OnInput(Metric("b", std::nan(""), 1)).kind, Verdict::kIssue);
  EXPECT_EQ((*r)->OnInput(Metric("c", std::nan(""), 1)).kind, Verdict::kPending);
}

// --- StalledTrainingRule ---

constexpr int64_t kThresholdMs = 1800 * 1000;

TEST(StalledTraining, FiresAtTheThresholdNamingTheLastThingSeen) {
  StalledTrainingParams p;
  StalledTrainingState s;
  EXPECT_EQ(OnInput(p, s, Metric("train:loss", 0.42, 1000, 120)).kind, Verdict::kPending);
  EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 1000 + kThresholdMs - 1, 0, 120)).kind,
            Verdict::kOk);
  Verdict v = OnInput(p, s, Signalled(Signal::kTick, 1000 + kThresholdMs, 0, 120));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  ASSERT_EQ(v.findings.size(), 1u);
  const Finding& f = v.findings[0];
  EXPECT_EQ(f.reason, "stalled");
  EXPECT_EQ(f.subject, "job");
  EXPECT_EQ(f.step, 120);
  EXPECT_EQ(f.t_ms, 1000 + kThresholdMs);
  EXPECT_EQ(f.observed, 1800);
  EXPECT_EQ(f.threshold, 1800);
  EXPECT_EQ(f.message,
            "No log line, metric or step for 1800 s (30 min), the threshold being 1800 s (30 "
            "min); the last thing seen was metric train:loss = 0.42 at step 120.");
  EXPECT_FALSE(f.recommendation.empty());
}

TEST(StalledTraining, FiresOncePerStallAndAgainAfterProgressResumes) {
  StalledTrainingParams p;
  p.threshold_ms = 60'000;
  StalledTrainingState s;
  std::vector<Verdict> out;
  OnInput(p, s, Signalled(Signal::kStep, 0, 7));
  out.push_back(OnInput(p, s, Signalled(Signal::kTick, 60'000)));
  out.push_back(OnInput(p, s, Signalled(Signal::kTick, 120'000)));
  out.push_back(OnInput(p, s, Signalled(Signal::kTick, 500'000)));
  EXPECT_EQ(out[0].kind, Verdict::kIssue);
  EXPECT_EQ(out[1].kind, Verdict::kPending);
  EXPECT_EQ(out[2].kind, Verdict::kPending);
  EXPECT_NE(out[0].findings[0].message.find("the last thing seen was step 7"), std::string::npos)
      << out[0].findings[0].message;

  OnInput(p, s, Signalled(Signal::kLogLine, 510'000, 0, 8));
  EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 569'999)).kind, Verdict::kOk);
  Verdict again = OnInput(p, s, Signalled(Signal::kTick, 570'000));
  ASSERT_EQ(again.kind, Verdict::kIssue);
  EXPECT_NE(again.findings[0].message.find("a log line at step 8"), std::string::npos)
      << again.findings[0].message;
}

TEST(StalledTraining, EveryKindOfOutputIsProgressButProfilerSamplesAreNot) {
  StalledTrainingParams p;
  p.threshold_ms = 10'000;
  for (Input progress : {Signalled(Signal::kLogLine, 9'000), Signalled(Signal::kStep, 9'000, 3),
                         Metric("loss", 1, 9'000), Metric("loss", std::nan(""), 9'000)}) {
    StalledTrainingState s;
    OnInput(p, s, Signalled(Signal::kLogLine, 0));
    OnInput(p, s, progress);
    EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 18'999)).kind, Verdict::kOk)
        << static_cast<int>(progress.signal);
  }
  StalledTrainingState s;
  OnInput(p, s, Signalled(Signal::kLogLine, 0));
  OnInput(p, s, Signalled(Signal::kGpuUtil, 9'000, 99));
  EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 10'000)).kind, Verdict::kIssue);
}

TEST(StalledTraining, BeforeAnyOutputTimeCountsFromTheFirstInput) {
  StalledTrainingParams p;
  p.threshold_ms = 60'000;
  StalledTrainingState s;
  EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 5'000)).kind, Verdict::kOk);
  EXPECT_EQ(OnInput(p, s, Signalled(Signal::kTick, 64'999)).kind, Verdict::kOk);
  Verdict v = OnInput(p, s, Signalled(Signal::kTick, 65'000));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].message,
            "No log line, metric or step for 60 s, the threshold being 60 s; the job has printed "
            "nothing since the rule started.");
  Verdict end = OnEnd(p, s, 70'000);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].severity, Severity::kWarning);
}

TEST(StalledTraining, EndsOkAfterOutput) {
  StalledTrainingParams p;
  StalledTrainingState s;
  OnInput(p, s, Signalled(Signal::kLogLine, 0));
  Verdict end = OnEnd(p, s, 10);
  EXPECT_EQ(end.kind, Verdict::kOk);
  EXPECT_TRUE(end.findings.empty());
}

TEST(StalledTraining, ParametersThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule("StalledTrainingRule",
                                                     {{"threshold", "15m"},
                                                      {"stop_training_on_fire", "True"},
                                                      {"training_job_name_prefix", "my-job"}},
                                                     Profile::kSageMakerCompat);
  ASSERT_TRUE(r.ok()) << r.status();
  (*r)->OnInput(Signalled(Signal::kLogLine, 0));
  EXPECT_EQ((*r)->OnInput(Signalled(Signal::kTick, 899'999)).kind, Verdict::kOk);
  EXPECT_EQ((*r)->OnInput(Signalled(Signal::kTick, 900'000)).kind, Verdict::kIssue);

  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("StalledTrainingRule", {{"threshold", "0.5"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "rule StalledTrainingRule: threshold=\"0.5\" is out of range; give a duration (90, "
            "90s, 15m, 2h) from 1 to 604800 s (default 1800)");
  EXPECT_FALSE(MakeRule("StalledTrainingRule", {{"threshold", "soon"}}, Profile::kDefault).ok());
  EXPECT_FALSE(
      MakeRule("StalledTrainingRule", {{"stop_training_on_fire", "maybe"}}, Profile::kDefault)
          .ok());
}

// --- the catalog's log rules ---

TEST(LogRuleCatalog, TheRulesInOrderWithHelpAndDefaultsThatParse) {
  const std::vector<RuleInfo> infos = LogRuleInfos();
  std::vector<std::string> names;
  for (const RuleInfo& info : infos) {
    names.emplace_back(info.name);
    EXPECT_EQ(info.family, RuleFamily::kDebug) << info.name;
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_FALSE(info.watches.empty()) << info.name;
    for (const ParamSpec& spec : info.params) {
      EXPECT_FALSE(spec.help.empty()) << info.name << "." << spec.name;
    }
    for (Profile profile : {Profile::kDefault, Profile::kSageMakerCompat}) {
      absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule(info.name, {}, profile);
      EXPECT_TRUE(r.ok()) << info.name << ": " << r.status();
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ExplodingTensor", "LossNotDecreasing", "Overfit",
                                             "Overtraining", "StalledTrainingRule", "LossSpike"}));
  for (const RuleInfo& info : infos) {
    const bool by_default = info.name == "ExplodingTensor" || info.name == "StalledTrainingRule";
    EXPECT_EQ(info.in_default_set, by_default) << info.name;
  }
}

TEST(LogRuleCatalog, EveryLogRuleWarnsWhenItSawNothing) {
  for (const RuleInfo& info : LogRuleInfos()) {
    absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule(info.name, {}, Profile::kDefault);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->OnInput(Signalled(Signal::kGpuUtil, 1, 50, -1)).kind, Verdict::kPending)
        << info.name;
    Verdict end = (*r)->OnEnd(100);
    EXPECT_EQ(end.kind, Verdict::kOk) << info.name;
    ASSERT_FALSE(end.findings.empty()) << info.name;
    for (const Finding& f : end.findings) {
      EXPECT_EQ(f.reason, "no_data") << info.name;
      EXPECT_EQ(f.severity, Severity::kWarning) << info.name;
      EXPECT_EQ(f.t_ms, 100) << info.name;
    }
  }
}

}  // namespace
}  // namespace trainwatch::rules
