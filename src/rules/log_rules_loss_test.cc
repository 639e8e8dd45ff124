// LossNotDecreasing and LossSpike on synthetic loss streams.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rules/catalog.h"
#include "rules/log_rules.h"
#include "rules/log_rules_testing.h"

namespace trainwatch::rules {
namespace {

using testing::FindingsOf;
using testing::Metric;

// --- LossNotDecreasing ---

TEST(LossNotDecreasing, SpecCadenceLossEveryThreeStepsComparesStep21WithStep9) {
  // spec/rules.md §5.8: saved every 3 steps, num_steps = 10: step 21 is
  // compared with step 9, and the next check is at step 33. A flat loss makes
  // every check an issue, so the checks show in the findings.
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  std::vector<int64_t> checked;
  for (int64_t step = 9; step <= 45; step += 3) {
    Verdict v = OnInput(p, s, Metric("train:loss", 0.5, step * 100, step));
    if (v.kind != Verdict::kPending) checked.push_back(step);
    if (step == 21) {
      ASSERT_EQ(v.findings.size(), 1u);
      EXPECT_EQ(v.findings[0].message,
                "train:loss did not change from step 9 to step 21 (needed a fall of at least 0.1 % "
                "every 10 steps): 0.5 -> 0.5.");
    }
    if (step == 33) {
      ASSERT_EQ(v.findings.size(), 1u);
      EXPECT_NE(v.findings[0].message.find("from step 21 to step 33"), std::string::npos);
    }
  }
  EXPECT_EQ(checked, (std::vector<int64_t>{21, 33, 45}));
}

TEST(LossNotDecreasing, FirstCheckAtTheFirstStepWithOneNumStepsOlder) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  std::vector<int64_t> checked;
  for (int64_t step = 0; step <= 40; step += 3) {
    if (OnInput(p, s, Metric("train:loss", 1, step, step)).kind != Verdict::kPending) {
      checked.push_back(step);
    }
  }
  EXPECT_EQ(checked, (std::vector<int64_t>{12, 24, 36}));
}

TEST(LossNotDecreasing, ADecreasingLossPasses) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  std::vector<Verdict> out;
  for (int64_t step = 0; step < 100; ++step) {
    out.push_back(OnInput(p, s, Metric("train:loss", 2.0 * std::exp(-0.01 * step), step, step)));
  }
  EXPECT_TRUE(FindingsOf(out).empty());
  EXPECT_EQ(out[10].kind, Verdict::kOk);
  Verdict end = OnEnd(p, s, 100);
  EXPECT_EQ(end.kind, Verdict::kOk);
  EXPECT_TRUE(end.findings.empty());
}

TEST(LossNotDecreasing, AtTheEdgeOfDiffPercent) {
  LossNotDecreasingParams p;  // diff_percent 0.1
  {
    LossNotDecreasingState s;
    OnInput(p, s, Metric("train:loss", 1000, 0, 0));
    EXPECT_EQ(OnInput(p, s, Metric("train:loss", 999, 10, 10)).kind, Verdict::kOk);  // 0.1 %
  }
  {
    LossNotDecreasingState s;
    OnInput(p, s, Metric("train:loss", 1000, 0, 0));
    EXPECT_EQ(OnInput(p, s, Metric("train:loss", 998.99, 10, 10)).kind, Verdict::kOk);
  }
  LossNotDecreasingState s;
  OnInput(p, s, Metric("train:loss", 1000, 0, 0));
  Verdict v = OnInput(p, s, Metric("train:loss", 999.01, 1234, 10));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  ASSERT_EQ(v.findings.size(), 1u);
  const Finding& f = v.findings[0];
  EXPECT_EQ(f.reason, "not_decreasing");
  EXPECT_EQ(f.subject, "train:loss");
  EXPECT_EQ(f.step, 10);
  EXPECT_EQ(f.t_ms, 1234);
  EXPECT_NEAR(f.observed, 0.099, 1e-9);
  EXPECT_EQ(f.threshold, 0.1);
  EXPECT_EQ(f.message,
            "train:loss fell 0.099 % from step 0 to step 10 (needed a fall of at least 0.1 % "
            "every 10 steps): 1000 -> 999.01.");
  EXPECT_FALSE(f.recommendation.empty());
}

TEST(LossNotDecreasing, ARiseSaysRose) {
  LossNotDecreasingParams p;
  p.increase_threshold_percent = 100;
  LossNotDecreasingState s;
  OnInput(p, s, Metric("train:loss", 2, 0, 0));
  Verdict v = OnInput(p, s, Metric("train:loss", 2.5, 10, 10));
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].observed, -25);
  EXPECT_NE(v.findings[0].message.find("train:loss rose 25 % from step 0 to step 10"),
            std::string::npos)
      << v.findings[0].message;
}

TEST(LossNotDecreasing, WithoutStepsTheValuesCountAsSteps) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  std::vector<Verdict> out;
  for (int i = 0; i <= 20; ++i) out.push_back(OnInput(p, s, Metric("train:loss", 3, i)));
  const std::vector<Finding> found = FindingsOf(out);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].step, 10);
  EXPECT_NE(found[0].message.find("from step 0 to step 10"), std::string::npos);
  EXPECT_EQ(found[1].step, 20);
}

TEST(LossNotDecreasing, SeveralValuesAtOneStepKeepTheNewest) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  OnInput(p, s, Metric("train:loss", 5, 0, 0));
  OnInput(p, s, Metric("train:loss", 1, 1, 0));  // the step's newest value: the reference
  Verdict v = OnInput(p, s, Metric("train:loss", 1, 2, 10));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_NE(v.findings[0].message.find("1 -> 1"), std::string::npos) << v.findings[0].message;
  // A second value at a step already checked does not check again.
  EXPECT_EQ(OnInput(p, s, Metric("train:loss", 1, 3, 10)).kind, Verdict::kPending);
}

TEST(LossNotDecreasing, DivergingAtTheEdgeAndOncePerExcursion) {
  LossNotDecreasingParams p;  // increase_threshold_percent 5
  p.num_steps = 1000;         // no decrease checks here
  LossNotDecreasingState s;
  std::vector<Verdict> out;
  int64_t step = 0;
  for (double v : {100.0, 105.0, 105.001, 120.0, 104.0, 110.0}) {
    out.push_back(OnInput(p, s, Metric("train:loss", v, step * 10, step)));
    ++step;
  }
  EXPECT_EQ(out[1].kind, Verdict::kPending);  // 5 % above: at the limit
  ASSERT_EQ(out[2].kind, Verdict::kIssue);
  EXPECT_EQ(out[3].kind, Verdict::kPending);  // still the same excursion
  EXPECT_EQ(out[4].kind, Verdict::kPending);  // back under the limit
  ASSERT_EQ(out[5].kind, Verdict::kIssue);    // a new excursion
  const Finding& f = out[2].findings[0];
  EXPECT_EQ(f.reason, "diverging");
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.observed, 105.001);
  EXPECT_EQ(f.threshold, 105);
  EXPECT_EQ(f.message,
            "train:loss rose to 105.001 at step 2, 5.001 % above its lowest value 100 (step 0); "
            "the limit is 5 % above it (105).");
}

TEST(LossNotDecreasing, DivergingForANegativeLossUsesItsMagnitude) {
  LossNotDecreasingParams p;
  p.metric = "nll";
  p.num_steps = 1000;
  LossNotDecreasingState s;
  OnInput(p, s, Metric("nll", -2, 0, 0));
  EXPECT_EQ(OnInput(p, s, Metric("nll", -1.95, 1, 1)).kind, Verdict::kPending);
  Verdict v = OnInput(p, s, Metric("nll", -1.8, 2, 2));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_DOUBLE_EQ(v.findings[0].threshold, -1.9);  // -2 + 5 % of |-2|
}

TEST(LossNotDecreasing, ARestartFromACheckpointStartsOver) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  for (int64_t step = 0; step <= 20; ++step) OnInput(p, s, Metric("train:loss", 1, step, step));
  // Back to step 5: no value of the new run is 10 steps older until step 15.
  std::vector<int64_t> checked;
  for (int64_t step = 5; step <= 16; ++step) {
    if (OnInput(p, s, Metric("train:loss", 9, 100 + step, step)).kind != Verdict::kPending) {
      checked.push_back(step);
    }
  }
  EXPECT_EQ(checked, (std::vector<int64_t>{15}));
}

TEST(LossNotDecreasing, NoDataAndTooShort) {
  LossNotDecreasingParams p;
  LossNotDecreasingState s;
  OnInput(p, s, Metric("validation:loss", 1, 0, 0));
  Verdict end = OnEnd(p, s, 50);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].subject, "train:loss");
  EXPECT_EQ(end.findings[0].severity, Severity::kWarning);
  EXPECT_NE(end.findings[0].message.find("no metric named train:loss"), std::string::npos);

  OnInput(p, s, Metric("train:loss", 1, 1, 0));
  OnInput(p, s, Metric("train:loss", 1, 2, 9));
  end = OnEnd(p, s, 60);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].message,
            "train:loss never spanned num_steps=10 steps (2 values), so its decrease was never "
            "checked.");
}

TEST(LossNotDecreasing, ParametersThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r =
      MakeRule("LossNotDecreasing", {{"metric", "loss"}, {"num_steps", "2"}}, Profile::kDefault);
  ASSERT_TRUE(r.ok()) << r.status();
  (*r)->OnInput(Metric("loss", 1, 0, 0));
  EXPECT_EQ((*r)->OnInput(Metric("loss", 1, 2, 2)).kind, Verdict::kIssue);

  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("LossNotDecreasing", {{"num_steps", "0"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "rule LossNotDecreasing: num_steps=\"0\" is out of range; give a whole number from 1 "
            "to 100000 (default 10)");
  bad = MakeRule("LossNotDecreasing", {{"diff_percent", "lots"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("is not a number"), std::string::npos);
  EXPECT_FALSE(
      MakeRule("LossNotDecreasing", {{"increase_threshold_percent", "-1"}}, Profile::kDefault)
          .ok());
  bad = MakeRule("LossNotDecreasing", {{"num_step", "5"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("did you mean \"num_steps\""),
            std::string::npos);
}

// --- LossSpike ---

TEST(LossSpike, AtTheEdgeOfKTimesTheMedian) {
  LossSpikeParams p;  // k 3, window 50, min_values 20
  {
    LossSpikeState s;
    for (int i = 0; i < 20; ++i) OnInput(p, s, Metric("train:loss", 1, i, i));
    EXPECT_EQ(OnInput(p, s, Metric("train:loss", 3, 20, 20)).kind, Verdict::kOk);
  }
  LossSpikeState s;
  for (int i = 0; i < 20; ++i) OnInput(p, s, Metric("train:loss", 1, i, i));
  Verdict v = OnInput(p, s, Metric("train:loss", 3.5, 777, 20));
  ASSERT_EQ(v.kind, Verdict::kIssue);
  const Finding& f = v.findings[0];
  EXPECT_EQ(f.reason, "spike");
  EXPECT_EQ(f.subject, "train:loss");
  EXPECT_EQ(f.step, 20);
  EXPECT_EQ(f.t_ms, 777);
  EXPECT_EQ(f.observed, 3.5);
  EXPECT_EQ(f.threshold, 3);
  EXPECT_EQ(f.message,
            "train:loss jumped to 3.5 at step 20: 3.5 x the median 1 of the previous 20 values "
            "(limit 3 x, 3).");
  EXPECT_FALSE(f.recommendation.empty());
}

TEST(LossSpike, NothingIsJudgedBeforeMinValues) {
  LossSpikeParams p;
  LossSpikeState s;
  for (int i = 0; i < 19; ++i) OnInput(p, s, Metric("train:loss", 1, i));
  EXPECT_EQ(OnInput(p, s, Metric("train:loss", 100, 19)).kind, Verdict::kPending);
  Verdict end = OnEnd(p, s, 20);
  ASSERT_EQ(end.findings.size(), 1u);  // nothing was judged: not a silent Ok
  EXPECT_EQ(end.findings[0].reason, "no_data");
}

TEST(LossSpike, ANoisyFallingLossDoesNotFire) {
  LossSpikeParams p;
  LossSpikeState s;
  std::vector<Verdict> out;
  for (int i = 0; i < 500; ++i) {
    const double noise = (i % 7) * 0.05 - 0.15;
    out.push_back(OnInput(p, s, Metric("train:loss", 2.0 * std::exp(-0.005 * i) + noise, i, i)));
  }
  EXPECT_TRUE(FindingsOf(out).empty());
  EXPECT_EQ(OnEnd(p, s, 500).findings.size(), 0u);
}

TEST(LossSpike, OncePerExcursionAndTheWindowForgets) {
  LossSpikeParams p;
  LossSpikeState s;
  std::vector<Verdict> out;
  int64_t i = 0;
  auto feed = [&](double v, int n) {
    for (int k = 0; k < n; ++k, ++i) out.push_back(OnInput(p, s, Metric("train:loss", v, i, i)));
  };
  feed(1, 50);
  feed(10, 50);  // a new level: one spike, then the median catches up
  feed(29, 1);   // under 3 x 10
  feed(31, 1);   // over it
  const std::vector<Finding> found = FindingsOf(out);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].step, 50);
  EXPECT_EQ(found[1].step, 101);
  EXPECT_EQ(found[1].threshold, 30);
}

TEST(LossSpike, MedianOfAnEvenCount) {
  LossSpikeParams p;
  p.k = 2;
  p.window = 4;
  p.min_values = 4;
  p.metric = "loss";
  LossSpikeState t;
  for (double v : {4.0, 1.0, 3.0, 2.0}) OnInput(p, t, Metric("loss", v, 0));
  EXPECT_EQ(OnInput(p, t, Metric("loss", 5, 1)).kind, Verdict::kOk);  // median 2.5, limit 5
  Verdict v = OnInput(p, t, Metric("loss", 5.5, 2));  // window now 1, 3, 2, 5: median 2.5
  ASSERT_EQ(v.kind, Verdict::kIssue);
  EXPECT_EQ(v.findings[0].threshold, 5);
}

TEST(LossSpike, ANonPositiveMedianUsesTheSpread) {
  LossSpikeParams p;
  p.metric = "nll";
  {
    LossSpikeState s;  // flat at -1: scale |median| = 1, limit -1 + 3 = 2
    for (int i = 0; i < 20; ++i) OnInput(p, s, Metric("nll", -1, i));
    EXPECT_EQ(OnInput(p, s, Metric("nll", 2, 20)).kind, Verdict::kOk);
    Verdict v = OnInput(p, s, Metric("nll", 2.01, 21));
    ASSERT_EQ(v.kind, Verdict::kIssue);
    EXPECT_EQ(v.findings[0].threshold, 2);
    EXPECT_EQ(v.findings[0].message,
              "nll jumped to 2.01, above the limit 2: the median -1 of the previous 21 values "
              "plus 3 x their spread 1.");
  }
  LossSpikeState s;  // all zeros: nothing to compare with
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(OnInput(p, s, Metric("nll", 0, i)).kind, Verdict::kPending);
  EXPECT_EQ(OnInput(p, s, Metric("nll", 5, 30)).kind, Verdict::kPending);
  EXPECT_EQ(OnEnd(p, s, 31).findings.size(), 1u);
}

TEST(LossSpike, ParametersThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r =
      MakeRule("LossSpike", {{"window", "10"}, {"min_values", "100"}}, Profile::kDefault);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < 10; ++i) (*r)->OnInput(Metric("train:loss", 1, i));
  // min_values is capped at the window: the 11th value is judged.
  EXPECT_EQ((*r)->OnInput(Metric("train:loss", 4, 10)).kind, Verdict::kIssue);

  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("LossSpike", {{"window", "2"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "rule LossSpike: window=\"2\" is out of range; give a whole number from 3 to 100000 "
            "(default 50)");
  EXPECT_FALSE(MakeRule("LossSpike", {{"k", "0.5"}}, Profile::kDefault).ok());
  EXPECT_FALSE(MakeRule("LossSpike", {{"k", "x"}}, Profile::kDefault).ok());
  EXPECT_FALSE(MakeRule("LossSpike", {{"min_values", "1"}}, Profile::kDefault).ok());
}

}  // namespace
}  // namespace trainwatch::rules
