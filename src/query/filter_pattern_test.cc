#include "query/filter_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::query {
namespace {

using ::testing::HasSubstr;

bool M(std::string_view pattern, std::string_view message) {
  auto p = FilterPattern::Parse(pattern);
  EXPECT_TRUE(p.ok()) << pattern << ": " << p.status();
  return p.ok() && p->Matches(message);
}

TEST(FilterPattern, EmptyMatchesEverything) {
  auto p = FilterPattern::Parse("  ");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->MatchesAll());
  EXPECT_TRUE(p->Matches(""));
  // "" is AWS's documented pattern for every event.
  auto quoted = FilterPattern::Parse("\"\"");
  ASSERT_TRUE(quoted.ok()) << quoted.status();
  EXPECT_TRUE(quoted->MatchesAll());
}

TEST(FilterPattern, TermsAreAndedSubstrings) {
  EXPECT_TRUE(M("ERROR", "2024 ERROR disk"));
  EXPECT_FALSE(M("ERROR", "2024 error disk"));  // case-sensitive
  EXPECT_TRUE(M("ERROR disk", "ERROR: disk full"));
  EXPECT_FALSE(M("ERROR disk", "ERROR: net down"));
}

TEST(FilterPattern, PhrasesKeepSpacesAndSymbols) {
  EXPECT_TRUE(M("\"train_loss=0\"", "epoch 3 train_loss=0.52"));
  EXPECT_FALSE(M("\"loss = 1\"", "loss=1"));
  EXPECT_TRUE(M("\"say \\\"hi\\\"\"", "they say \"hi\" now"));
}

TEST(FilterPattern, AlternativesAndExclusions) {
  EXPECT_TRUE(M("?ERROR ?WARN", "WARN low memory"));
  EXPECT_FALSE(M("?ERROR ?WARN", "INFO ok"));
  EXPECT_TRUE(M("ERROR -DEBUG", "ERROR x"));
  EXPECT_FALSE(M("ERROR -DEBUG", "DEBUG ERROR x"));
  EXPECT_TRUE(M("-DEBUG", "anything"));
}

TEST(FilterPattern, RegexUsesRe2Search) {
  EXPECT_TRUE(M("%loss=[0-9]+\\.[0-9]+%", "step 5 loss=0.25"));
  EXPECT_FALSE(M("%^loss%", "step loss"));
  EXPECT_TRUE(M("epoch %acc=0\\.9[0-9]*%", "epoch 3 acc=0.93"));
}

TEST(FilterPattern, MalformedPatternsSayWhatIsWrong) {
  for (std::string_view bad : {"\"open", "? x", "%(a)%", "%abc", "{ $.x = 1 }", "[a, b]",
                               "%%", "?\"\""}) {
    auto p = FilterPattern::Parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
    EXPECT_THAT(p.status().message(), HasSubstr("Invalid filter pattern"));
  }
}

}  // namespace
}  // namespace trainwatch::query
