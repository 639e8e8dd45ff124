#include "extract/non_finite_probe.h"

#include <gtest/gtest.h>

namespace trainwatch::extract {
namespace {

TEST(NonFiniteProbe, WidensTheFirstCapturingGroupOnly) {
  const std::string g = "(?i:[-+]?(?:nan|inf(?:inity)?))";
  EXPECT_EQ(NonFiniteProbePattern("loss: ([0-9.eE+-]+)"), "loss: (" + g + ")");
  EXPECT_EQ(NonFiniteProbePattern("step=\\d+ loss=([0-9.]+) acc=([0-9.]+)"),
            "step=\\d+ loss=(" + g + ") acc=([0-9.]+)");
  // Non-capturing groups, escaped parentheses and classes holding ( ) are skipped.
  EXPECT_EQ(NonFiniteProbePattern("(?:train|val) \\(x\\) [()] loss: (\\d+(?:\\.\\d+)?)"),
            "(?:train|val) \\(x\\) [()] loss: (" + g + ")");
  EXPECT_EQ(NonFiniteProbePattern("(?P<v>[0-9.]+)"), "(?P<v>" + g + ")");
  EXPECT_EQ(NonFiniteProbePattern("[[:digit:]] (x)"), "[[:digit:]] (" + g + ")");
  EXPECT_FALSE(NonFiniteProbePattern("no group").has_value());
  EXPECT_FALSE(NonFiniteProbePattern("(unclosed").has_value());
  EXPECT_FALSE(NonFiniteProbePattern("bad \\").has_value());
}

TEST(NonFiniteProbe, LinesWorthProbing) {
  EXPECT_TRUE(MayHoldNonFinite("loss: nan"));
  EXPECT_TRUE(MayHoldNonFinite("loss=-INF"));
  EXPECT_TRUE(MayHoldNonFinite("INFO step 3"));  // cheap test: the probe decides
  EXPECT_FALSE(MayHoldNonFinite("loss: 0.25 acc: 0.9"));
  EXPECT_FALSE(MayHoldNonFinite("na"));
}

}  // namespace
}  // namespace trainwatch::extract
