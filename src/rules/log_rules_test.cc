#include "rules/log_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rules/catalog.h"

namespace trainwatch::rules {
namespace {

Input Metric(std::string_view name, double v, int64_t t_ms, int64_t step = -1) {
  Input in;
  in.signal = std::isfinite(v) ? Signal::kMetric : Signal::kNonFinite;
  in.name = name;
  in.value = v;
  in.t_ms = t_ms;
  in.step = step;
  return in;
}

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

}  // namespace
}  // namespace trainwatch::rules
