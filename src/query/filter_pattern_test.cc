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
  for (std::string_view bad :
       {"\"open", "? x", "%(a)%", "%abc", "%%", "?\"\"", "{ $.x = 1", "{ $.x }", "{ x = 1 }",
        "{ $.x = }", "{ $.x > abc }", "{ $.x = 1 } y", "{ $.x[a] = 1 }", "{ $.x = %(a)% }",
        "{ ($.x = 1 }", "[a, b", "[a, b = ]", "[a, b = 1 || c = 2]", "[a, , b]", "{ $.x ! 1 }",
        "{ $.x IS MAYBE }"}) {
    auto p = FilterPattern::Parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
    EXPECT_THAT(p.status().message(), HasSubstr("Invalid filter pattern"));
  }
}

TEST(FilterPattern, JsonPatternsCompareFieldsOfJsonMessages) {
  const std::string line =
      R"({"phase": "train", "loss": 0.75, "step": 120, "lr": null, "nan_seen": false,
          "error": {"code": "CUDA_OOM", "gpu": 3}, "tags": ["warmup", "fp16"]})";
  EXPECT_TRUE(M(R"({ $.loss > 0.5 && $.phase = "train" })", line));
  EXPECT_FALSE(M(R"({ $.loss > 0.5 && $.phase = "eval" })", line));
  EXPECT_TRUE(M(R"({ $.phase = "eval" || ($.step >= 100 && $.step < 121) })", line));
  EXPECT_TRUE(M("{ $.step = 120 }", line));
  EXPECT_TRUE(M("{ $.step != 7 }", line));
  EXPECT_TRUE(M(R"({ $.error.code = "CUDA*" })", line)) << "wildcards";
  EXPECT_TRUE(M("{ $.error.code = *OOM }", line)) << "unquoted strings";
  EXPECT_TRUE(M("{ $.error.gpu = 3 }", line));
  EXPECT_TRUE(M("{ $.tags[1] = fp16 }", line)) << "array elements";
  EXPECT_FALSE(M("{ $.tags[2] = fp16 }", line));
  EXPECT_TRUE(M("{ $.lr IS NULL }", line));
  EXPECT_FALSE(M("{ $.loss IS NULL }", line));
  EXPECT_TRUE(M("{ $.grad NOT EXISTS }", line));
  EXPECT_FALSE(M("{ $.lr NOT EXISTS }", line)) << "null exists";
  EXPECT_TRUE(M("{ $.nan_seen IS FALSE }", line));
  EXPECT_TRUE(M("{ $.error.code = %OO[A-Z]% }", line));
  EXPECT_FALSE(M("{ $.missing != 3 }", line)) << "a missing field satisfies no comparison";
  EXPECT_FALSE(M("{ $.loss > 0.5 }", "loss=0.75")) << "not JSON";
  EXPECT_FALSE(M("{ $.loss > 0.5 }", "[1, 2]")) << "not an object";
}

TEST(FilterPattern, SpaceDelimitedPatternsMatchFieldsByPosition) {
  const std::string line = R"(2024-05-01T10:00:00Z ERROR [rank 3] "CUDA out of memory" 17)";
  EXPECT_TRUE(M("[time, level, rank, message, step]", line));
  EXPECT_FALSE(M("[time, level, rank, message]", line)) << "five fields, four slots";
  EXPECT_TRUE(M("[time, level = ERROR, ...]", line));
  EXPECT_FALSE(M("[time, level = WARN, ...]", line));
  EXPECT_TRUE(M("[..., step > 10]", line));
  EXPECT_TRUE(M("[time, ..., message = *memory*, step]", line)) << "quoted text is one field";
  EXPECT_TRUE(M("[time, level, rank = \"rank 3\", ...]", line)) << "bracketed text is one field";
  EXPECT_TRUE(M("[..., step = 5 || step = 17]", line));
  EXPECT_TRUE(M("[..., step >= 17 && step < 18]", line));
  EXPECT_TRUE(M("[..., level, ..., step]", line));
  EXPECT_FALSE(M("[..., level = INFO, ..., step]", line));
  EXPECT_TRUE(M("[a, b, ..., c, d, e]", line)) << "an ellipsis may stand for no field";
}

}  // namespace
}  // namespace trainwatch::query
