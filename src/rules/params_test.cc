#include "rules/params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "rules/catalog.h"

namespace trainwatch::rules {
namespace {

using ::testing::HasSubstr;

constexpr ParamSpec kSpecs[] = {
    {"threshold", ParamType::kNumber, "50", "", 0, 100, "percent"},
    {"patience", ParamType::kSeconds, "500s", "1000", 0, 86400, "warm-up"},
    {"only_nan", ParamType::kBool, "false", "", 0, 0, ""},
    {"count", ParamType::kInteger, "3", "", 1, 1000, ""},
    {"metrics", ParamType::kString, "", "", 0, 0, ""},
};

TEST(Params, DefaultsAndProfiles) {
  absl::StatusOr<ParamValues> v = ParseParams("R", kSpecs, {}, Profile::kDefault);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->Number("threshold"), 50);
  EXPECT_EQ(v->Seconds("patience"), 500);
  EXPECT_FALSE(v->Bool("only_nan"));
  EXPECT_EQ(v->Integer("count"), 3);
  EXPECT_EQ(v->String("metrics"), "");
  EXPECT_FALSE(v->Has("metrics"));
  absl::StatusOr<ParamValues> compat = ParseParams("R", kSpecs, {}, Profile::kSageMakerCompat);
  ASSERT_TRUE(compat.ok());
  EXPECT_EQ(compat->Seconds("patience"), 1000);
}

TEST(Params, GivenValuesAsSageMakerWritesThem) {
  absl::StatusOr<ParamValues> v = ParseParams(
      "R", kSpecs, {{"threshold", " 75.5 "}, {"only_nan", "True"}, {"patience", "15m"}},
      Profile::kDefault);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->Number("threshold"), 75.5);
  EXPECT_TRUE(v->Bool("only_nan"));
  EXPECT_EQ(v->Seconds("patience"), 900);
}

TEST(Params, UnknownParameterNamesTheNearest) {
  absl::StatusOr<ParamValues> v = ParseParams("CPUBottleneck", kSpecs, {{"treshold", "1"}},
                                              Profile::kDefault);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("rule CPUBottleneck has no parameter \"treshold\"; did you mean "
                        "\"threshold\"? Its parameters: threshold,"));
}

TEST(Params, BadValuesSayWhatIsAccepted) {
  auto message = [](std::map<std::string, std::string> given) {
    absl::StatusOr<ParamValues> v = ParseParams("R", kSpecs, given, Profile::kDefault);
    EXPECT_FALSE(v.ok());
    return std::string(v.status().message());
  };
  EXPECT_EQ(message({{"threshold", "abc"}}),
            "rule R: threshold=\"abc\" is not a number; give a number from 0 to 100 (default 50)");
  EXPECT_EQ(message({{"threshold", "101"}}),
            "rule R: threshold=\"101\" is out of range; give a number from 0 to 100 (default 50)");
  EXPECT_THAT(message({{"threshold", "nan"}}), HasSubstr("is not a number"));
  EXPECT_THAT(message({{"count", "2.5"}}), HasSubstr("is not a whole number"));
  EXPECT_THAT(message({{"only_nan", "yes please"}}), HasSubstr("give true or false"));
  EXPECT_THAT(message({{"patience", "soon"}}), HasSubstr("give a duration"));
}

TEST(Catalog, UnknownRuleNamesTheNearest) {
  absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule("ExplodingTensors", {}, Profile::kDefault);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("no built-in rule \"ExplodingTensors\"; did you mean \"ExplodingTensor\"?"));
  // The start of a name is its abbreviation, nearer than a short name a few
  // letters away ("LossSpike").
  r = MakeRule("lowgpu", {}, Profile::kDefault);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("did you mean \"LowGPUUtilization\"?"));
}

TEST(Catalog, NamesAreCaseInsensitiveAndUnique) {
  ASSERT_NE(FindRule("explodingtensor"), nullptr);
  std::set<std::string> seen;
  for (const RuleInfo& info : BuiltinRules()) {
    EXPECT_TRUE(seen.insert(std::string(info.name)).second) << info.name;
    // Every rule's defaults parse, in both profiles (TensorVariance needs a
    // threshold: it has no default that could ever find anything;
    // SimilarAcrossRuns the job it compares with).
    std::map<std::string, std::string> needed;
    if (info.name == "TensorVariance") needed["max_threshold"] = "10";
    if (info.name == "SimilarAcrossRuns") needed["other_trials"] = "job-1";
    for (Profile profile : {Profile::kDefault, Profile::kSageMakerCompat}) {
      absl::StatusOr<std::unique_ptr<Rule>> r = MakeRule(info.name, needed, profile);
      EXPECT_TRUE(r.ok()) << info.name << ": " << r.status();
    }
  }
}

}  // namespace
}  // namespace trainwatch::rules
