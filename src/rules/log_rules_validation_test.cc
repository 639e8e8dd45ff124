// Overfit and Overtraining on synthetic training and validation streams.

#include <gtest/gtest.h>

#include <vector>

#include "rules/catalog.h"
#include "rules/log_rules.h"
#include "rules/log_rules_testing.h"

namespace trainwatch::rules {
namespace {

using testing::FindingsOf;
using testing::Metric;

// Feeds `train` training values, then `validation` validation values, at
// increasing steps; returns the verdicts.
struct Stream {
  int64_t step = 0;
  bool with_steps = true;
  std::vector<Verdict> out;

  template <class P, class S>
  void Round(const P& p, S& s, double train, int train_n, double validation, int validation_n) {
    for (int i = 0; i < train_n; ++i) {
      step += 10;
      out.push_back(OnInput(p, s, Metric("train:loss", train, step, with_steps ? step : -1)));
    }
    for (int i = 0; i < validation_n; ++i) {
      out.push_back(
          OnInput(p, s, Metric("validation:loss", validation, step, with_steps ? step : -1)));
    }
  }
};

// --- Overfit ---

TEST(Overfit, FiresWhenTheRoundEndsNamingBothAverages) {
  OverfitParams p;  // patience 1, ratio_threshold 0.1
  OverfitState s;
  Stream st;
  st.Round(p, s, 0.5, 3, 0.75, 2);  // r = 0.5; the round is open
  EXPECT_TRUE(FindingsOf(st.out).empty());
  Verdict v = OnInput(p, s, Metric("train:loss", 0.5, 999, 40));  // closes it
  ASSERT_EQ(v.kind, Verdict::kIssue);
  const Finding& f = v.findings[0];
  EXPECT_EQ(f.reason, "overfit");
  EXPECT_EQ(f.subject, "validation:loss");
  EXPECT_EQ(f.step, 30);
  EXPECT_EQ(f.t_ms, 999);
  EXPECT_DOUBLE_EQ(f.observed, 0.5);
  EXPECT_EQ(f.threshold, 0.1);
  EXPECT_EQ(f.message,
            "validation:loss averaged 0.75 over the evaluation round at step 30 (2 values), 50 % "
            "above train:loss's average 0.5 before it (3 values): (validation - train) / train "
            "= 0.5, above ratio_threshold 0.1 for 1 round(s) in a row (patience 1).");
  EXPECT_FALSE(f.recommendation.empty());
}

TEST(Overfit, AtTheEdgeOfRatioThreshold) {
  OverfitParams p;
  {
    OverfitState s;
    Stream st;
    st.Round(p, s, 10, 2, 11, 1);  // r = 0.1 exactly: not above
    st.Round(p, s, 10, 1, 0, 0);
    EXPECT_TRUE(FindingsOf(st.out).empty());
    EXPECT_EQ(st.out.back().kind, Verdict::kOk);
  }
  OverfitState s;
  Stream st;
  st.Round(p, s, 10, 2, 11.001, 1);
  st.Round(p, s, 10, 1, 0, 0);
  EXPECT_EQ(FindingsOf(st.out).size(), 1u);
}

TEST(Overfit, PatienceCountsRoundsInARowOncePerStreak) {
  OverfitParams p;
  p.patience = 2;
  OverfitState s;
  Stream st;
  for (double val : {2.0, 1.0, 2.0, 2.0, 2.0, 1.0, 2.0, 2.0, 1.0}) st.Round(p, s, 1, 2, val, 1);
  st.Round(p, s, 1, 1, 0, 0);
  const std::vector<Finding> found = FindingsOf(st.out);
  // Rounds (train 2 values, validation 1) end at steps 20, 40, ...: bad rounds
  // 1, 3, 4, 5, 7, 8; the streaks 3-5 and 7-8 reach patience at rounds 4 and 8.
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].step, 80);
  EXPECT_EQ(found[1].step, 160);
}

TEST(Overfit, RoundsBeforeStartStepAreSkipped) {
  OverfitParams p;
  p.start_step = 45;
  OverfitState s;
  Stream st;
  st.Round(p, s, 1, 2, 5, 1);  // round at step 20
  st.Round(p, s, 1, 2, 5, 1);  // 40
  st.Round(p, s, 1, 2, 5, 1);  // 60
  st.Round(p, s, 1, 1, 0, 0);
  const std::vector<Finding> found = FindingsOf(st.out);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].step, 60);
}

TEST(Overfit, WithoutStepsARoundIsAtTheTrainingValuesSeen) {
  OverfitParams p;
  p.start_step = 4;
  OverfitState s;
  Stream st;
  st.with_steps = false;
  st.Round(p, s, 1, 2, 5, 1);  // after 2 training values: skipped
  st.Round(p, s, 1, 2, 5, 1);  // after 4
  st.Round(p, s, 1, 1, 0, 0);
  const std::vector<Finding> found = FindingsOf(st.out);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].step, 4);
  EXPECT_NE(found[0].message.find("round at step 4"), std::string::npos);
}

TEST(Overfit, TheLastRoundIsJudgedAtTheEnd) {
  OverfitParams p;
  OverfitState s;
  Stream st;
  st.Round(p, s, 1, 2, 1.5, 2);
  Verdict end = OnEnd(p, s, 5000);
  ASSERT_EQ(end.kind, Verdict::kIssue);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].t_ms, 5000);
}

TEST(Overfit, ValidationBeforeAnyTrainingIsNotARound) {
  OverfitParams p;
  OverfitState s;
  EXPECT_EQ(OnInput(p, s, Metric("validation:loss", 9, 0, 0)).kind, Verdict::kPending);
  EXPECT_EQ(OnInput(p, s, Metric("train:loss", 1, 1, 1)).kind, Verdict::kPending);
  Verdict end = OnEnd(p, s, 2);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].message,
            "No evaluation round (validation:loss values after train:loss values) at or after "
            "start_step 0, so overfitting was never checked.");
}

TEST(Overfit, NoDataNamesEachMissingMetric) {
  OverfitParams p;
  OverfitState s;
  OnInput(p, s, Metric("train:loss", 1, 0, 0));
  Verdict end = OnEnd(p, s, 7);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].subject, "validation:loss");
  EXPECT_EQ(end.findings[0].severity, Severity::kWarning);

  OverfitState empty;
  EXPECT_EQ(OnEnd(p, empty, 7).findings.size(), 2u);
}

TEST(Overfit, ParametersThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule(
      "Overfit", {{"train_metric", "loss"}, {"validation_metric", "val_loss"}}, Profile::kDefault);
  ASSERT_TRUE(r.ok()) << r.status();
  (*r)->OnInput(Metric("loss", 1, 0, 0));
  (*r)->OnInput(Metric("val_loss", 2, 1, 0));
  EXPECT_EQ((*r)->OnInput(Metric("loss", 1, 2, 1)).kind, Verdict::kIssue);

  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("Overfit", {{"patience", "0"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "rule Overfit: patience=\"0\" is out of range; give a whole number from 1 to 100000 "
            "(default 1)");
  EXPECT_FALSE(MakeRule("Overfit", {{"ratio_threshold", "-0.1"}}, Profile::kDefault).ok());
  EXPECT_FALSE(MakeRule("Overfit", {{"start_step", "1.5"}}, Profile::kDefault).ok());
}

// --- Overtraining ---

TEST(Overtraining, TrainingPlateauAtTheEdgeOfDelta) {
  OvertrainingParams p;
  p.delta = 0.5;
  p.patience_train = 3;
  OvertrainingState s;
  std::vector<Verdict> out;
  int64_t step = 0;
  // 3.5 = best - delta is not a new best; 3.4 is.
  for (double v : {4.0, 3.5, 3.5, 3.4, 3.0, 3.0, 3.0}) {
    step += 10;
    out.push_back(OnInput(p, s, Metric("train:loss", v, step, step)));
  }
  const std::vector<Finding> found = FindingsOf(out);
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.reason, "training_plateau");
  EXPECT_EQ(f.subject, "train:loss");
  EXPECT_EQ(f.step, 70);
  EXPECT_EQ(f.observed, 3);
  EXPECT_EQ(f.threshold, 3);
  EXPECT_EQ(f.message,
            "train:loss has not improved on its best 3.4 at step 40 by more than delta 0.5 for 3 "
            "values in a row (patience_train 3); now 3 at step 70.");
  EXPECT_FALSE(f.recommendation.empty());
}

TEST(Overtraining, OncePerPlateauAndAgainAfterANewBest) {
  OvertrainingParams p;  // patience_train 5, delta 0.01
  OvertrainingState s;
  std::vector<Verdict> out;
  auto feed = [&](double v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(OnInput(p, s, Metric("train:loss", v, 0)));
  };
  feed(1.0, 1);
  feed(1.0, 4);
  EXPECT_TRUE(FindingsOf(out).empty());
  feed(1.0, 1);  // the 5th value without a new best
  EXPECT_EQ(FindingsOf(out).size(), 1u);
  feed(1.0, 20);
  EXPECT_EQ(FindingsOf(out).size(), 1u);
  feed(0.5, 1);
  feed(0.5, 5);
  EXPECT_EQ(FindingsOf(out).size(), 2u);
}

TEST(Overtraining, ValidationPlateauUsesItsOwnPatience) {
  OvertrainingParams p;  // patience_validation 10
  OvertrainingState s;
  std::vector<Verdict> out;
  for (int i = 0; i <= 10; ++i) {
    out.push_back(OnInput(p, s, Metric("train:loss", 1.0 - 0.05 * i, i, i)));
    out.push_back(OnInput(p, s, Metric("validation:loss", 0.8, i, i)));
  }
  const std::vector<Finding> found = FindingsOf(out);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].reason, "validation_plateau");
  EXPECT_EQ(found[0].subject, "validation:loss");
  EXPECT_EQ(found[0].step, 10);
  EXPECT_NE(found[0].message.find("(patience_validation 10)"), std::string::npos);
}

TEST(Overtraining, NoDataNamesEachMissingMetric) {
  OvertrainingParams p;
  OvertrainingState s;
  OnInput(p, s, Metric("validation:loss", 1, 0));
  Verdict end = OnEnd(p, s, 3);
  EXPECT_EQ(end.kind, Verdict::kOk);
  ASSERT_EQ(end.findings.size(), 1u);
  EXPECT_EQ(end.findings[0].reason, "no_data");
  EXPECT_EQ(end.findings[0].subject, "train:loss");
}

TEST(Overtraining, ParametersThroughTheCatalog) {
  absl::StatusOr<std::unique_ptr<Rule>> r =
      MakeRule("Overtraining", {{"patience_train", "1"}}, Profile::kSageMakerCompat);
  ASSERT_TRUE(r.ok()) << r.status();
  (*r)->OnInput(Metric("train:loss", 1, 0));
  EXPECT_EQ((*r)->OnInput(Metric("train:loss", 1, 1)).kind, Verdict::kIssue);

  EXPECT_FALSE(MakeRule("Overtraining", {{"patience_train", "0"}}, Profile::kDefault).ok());
  EXPECT_FALSE(MakeRule("Overtraining", {{"delta", "-1"}}, Profile::kDefault).ok());
  absl::StatusOr<std::unique_ptr<Rule>> bad =
      MakeRule("Overtraining", {{"patience", "3"}}, Profile::kDefault);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("has no parameter \"patience\"; did you mean"),
            std::string::npos);
}

}  // namespace
}  // namespace trainwatch::rules
