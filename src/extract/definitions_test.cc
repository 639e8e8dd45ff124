#include "extract/definitions.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

using model::MetricDefinition;
using ::testing::HasSubstr;

std::string Error(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(ParseDefinitionsJsonTest, SageMakerList) {
  auto defs = ParseDefinitionsJson(R"json([
    {"Name": "train:loss", "Regex": "loss: ([0-9.]+)"},
    {"Name": "val:acc", "Regex": "acc=(\\S+)", "Unit": "ignored"}
  ])json");
  ASSERT_TRUE(defs.ok()) << defs.status();
  ASSERT_EQ(defs->size(), 2u);
  EXPECT_EQ((*defs)[0], (MetricDefinition{"train:loss", "loss: ([0-9.]+)"}));
  EXPECT_EQ((*defs)[1], (MetricDefinition{"val:acc", "acc=(\\S+)"}));
  auto empty = ParseDefinitionsJson("[]");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseDefinitionsJsonTest, AlsoInsideTrainingJobDocuments) {
  auto spec = ParseDefinitionsJson(R"json({"TrainingImage": "x",
      "MetricDefinitions": [{"Name": "a", "Regex": "a=(\\d)"}]})json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->size(), 1u);
  auto job = ParseDefinitionsJson(R"json({"TrainingJobName": "j",
      "AlgorithmSpecification": {"MetricDefinitions": [{"Name": "b", "Regex": "b=(\\d)"}]}})json");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)[0].name, "b");
}

TEST(ParseDefinitionsJsonTest, ShapeErrorsNameTheDefinition) {
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Name\": \"a\"").status()),
              HasSubstr("not valid JSON"));
  EXPECT_THAT(Error(ParseDefinitionsJson("\"loss\"").status()), HasSubstr("got a string"));
  EXPECT_THAT(Error(ParseDefinitionsJson("{\"Name\": \"a\"}").status()),
              HasSubstr("without \"MetricDefinitions\""));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Name\": \"a\", \"Regex\": \"(a)\"}, 7]").status()),
              HasSubstr("metric definition #2: expected an object"));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Regex\": \"(a)\"}]").status()),
              HasSubstr("metric definition #1: no \"Name\""));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"name\": \"a\", \"regex\": \"(a)\"}]").status()),
              HasSubstr("case-sensitive"));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Name\": \"loss\"}]").status()),
              HasSubstr("metric definition \"loss\": no \"Regex\""));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Name\": 3, \"Regex\": \"(a)\"}]").status()),
              HasSubstr("\"Name\" must be a string, got number"));
  EXPECT_THAT(Error(ParseDefinitionsJson("[{\"Name\": \"x\", \"Regex\": null}]").status()),
              HasSubstr("metric definition \"x\": \"Regex\" must be a string, got null"));
}

TEST(ParseMetricFlagTest, SplitsAtTheFirstEquals) {
  auto def = ParseMetricFlag("train:loss=loss=([0-9.]+)");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->name, "train:loss");
  EXPECT_EQ(def->regex, "loss=([0-9.]+)");
  EXPECT_THAT(Error(ParseMetricFlag("loss: ([0-9.]+)").status()), HasSubstr("expected NAME=REGEX"));
  auto empty_name = ParseMetricFlag("=(x)");
  ASSERT_TRUE(empty_name.ok());
  EXPECT_FALSE(ValidateDefinitions({*empty_name}).ok());
}

std::vector<MetricDefinition> Defs(size_t n) {
  std::vector<MetricDefinition> defs;
  for (size_t i = 0; i < n; ++i) defs.push_back({"m" + std::to_string(i), "v=([0-9]+)"});
  return defs;
}

TEST(ValidateDefinitionsTest, ZeroToFortyDefinitions) {
  EXPECT_TRUE(ValidateDefinitions({}).ok());
  EXPECT_TRUE(ValidateDefinitions(Defs(40)).ok());
  EXPECT_THAT(Error(ValidateDefinitions(Defs(41))), HasSubstr("41 metric definitions; at most 40"));
}

TEST(ValidateDefinitionsTest, NameLengthInCharacters) {
  EXPECT_THAT(Error(ValidateDefinitions({{"", "(a)"}})),
              HasSubstr("metric definition #1: empty \"Name\""));
  EXPECT_TRUE(ValidateDefinitions({{std::string(255, 'n'), "(a)"}}).ok());
  EXPECT_THAT(Error(ValidateDefinitions({{std::string(256, 'n'), "(a)"}})),
              HasSubstr("\"Name\" is 256 characters long; at most 255"));
  // 255 two-byte characters are 255 characters.
  std::string accents;
  for (int i = 0; i < 255; ++i) accents += "\xC3\xA9";
  EXPECT_TRUE(ValidateDefinitions({{accents, "(a)"}}).ok());
  EXPECT_FALSE(ValidateDefinitions({{accents + "e", "(a)"}}).ok());
}

TEST(ValidateDefinitionsTest, NamesUnique) {
  EXPECT_THAT(Error(ValidateDefinitions({{"a", "(a)"}, {"b", "(b)"}, {"a", "(c)"}})),
              HasSubstr("metric definition \"a\": the name is used twice (definitions #1 and #3)"));
  // Case matters: "Loss" and "loss" are two metrics.
  EXPECT_TRUE(ValidateDefinitions({{"loss", "(a)"}, {"Loss", "(a)"}}).ok());
  // The same regex under two names is fine.
  EXPECT_TRUE(ValidateDefinitions({{"a", "x=(\\d)"}, {"b", "x=(\\d)"}}).ok());
}

TEST(ValidateDefinitionsTest, RegexLengthInCharacters) {
  EXPECT_THAT(Error(ValidateDefinitions({{"a", ""}})),
              HasSubstr("metric definition \"a\": empty \"Regex\""));
  std::string r500 = "(" + std::string(498, 'x') + ")";
  EXPECT_TRUE(ValidateDefinitions({{"a", r500}}).ok());
  EXPECT_THAT(Error(ValidateDefinitions({{"a", r500 + "y"}})),
              HasSubstr("\"Regex\" is 501 characters long; at most 500"));
}

TEST(ValidateDefinitionsTest, AtLeastOneCaptureGroup) {
  EXPECT_THAT(
      Error(ValidateDefinitions({{"loss", "loss: [0-9.]+"}})),
      HasSubstr("metric definition \"loss\": regex \"loss: [0-9.]+\" has no capture group"));
  EXPECT_FALSE(ValidateDefinitions({{"loss", "loss: (?:[0-9.]+)"}}).ok());
  EXPECT_TRUE(ValidateDefinitions({{"loss", "loss: (?P<v>[0-9.]+)"}}).ok());
  EXPECT_TRUE(ValidateDefinitions({{"loss", "(l)oss: ([0-9.]+)"}}).ok());
}

TEST(ValidateDefinitionsTest, RefusesWhatRe2Lacks) {
  struct Case {
    const char* regex;
    const char* says;
  } cases[] = {
      {"loss(?=:) ([0-9.]+)", "lookahead \"(?=...)\""},
      {"loss(?!x)([0-9.]+)", "lookahead \"(?!...)\""},
      {"(?<=loss: )([0-9.]+)", "lookbehind \"(?<=...)\""},
      {"(?<!val_)loss: ([0-9.]+)", "lookbehind \"(?<!...)\""},
      {"(\\w+)=\\1", "backreference \"\\1\""},
      {"(?<v>[0-9]+)", "(?P<name>...)"},
      {"(?>a+)(b)", "atomic group"},
      {"a++(b)", "possessive quantifier \"++\""},
      {"loss: ([0-9.]+)\\Z", "\\Z"},
      {"(a", "does not compile in RE2: missing ): (a"},
      {"(a{1001})", "does not compile in RE2"},
  };
  for (const Case& c : cases) {
    std::string err = Error(ValidateDefinitions({{"m", c.regex}}));
    EXPECT_THAT(err, HasSubstr("metric definition \"m\": regex \"")) << c.regex;
    EXPECT_THAT(err, HasSubstr(c.says)) << c.regex;
  }
}

TEST(ValidateDefinitionsTest, ReportsEveryBrokenDefinition) {
  std::string err = Error(ValidateDefinitions(
      {{"ok", "a=(\\d)"}, {"no group", "b=\\d"}, {"", "(c)"}, {"look", "(?=d)(d)"}}));
  EXPECT_THAT(err, HasSubstr("metric definition \"no group\""));
  EXPECT_THAT(err, HasSubstr("metric definition #3"));
  EXPECT_THAT(err, HasSubstr("metric definition \"look\""));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("\"ok\"")));
}

}  // namespace
}  // namespace trainwatch::extract
