#include "rules/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::rules {
namespace {

using ::testing::HasSubstr;

std::string Error(const absl::Status& s) { return std::string(s.message()); }

TEST(RuleFlag, NameParametersActionsAndCommasInValues) {
  absl::StatusOr<model::RuleConfiguration> c = ParseRuleFlag(
      "ExplodingTensor:metrics=train:loss,val:loss,only_nan=true,action=StopTraining,"
      "action=exec:/usr/local/bin/page-me,name=nan-watch");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rule, "ExplodingTensor");
  EXPECT_EQ(c->name, "nan-watch");
  EXPECT_EQ(c->parameters.at("metrics"), "train:loss,val:loss");
  EXPECT_EQ(c->parameters.at("only_nan"), "true");
  EXPECT_EQ(c->actions,
            (std::vector<std::string>{"StopTraining", "exec:/usr/local/bin/page-me"}));
  EXPECT_TRUE(ParseRuleFlag("StalledTrainingRule").ok());
  EXPECT_THAT(Error(ParseRuleFlag(":x=1").status()), HasSubstr("give a rule name first"));
  EXPECT_THAT(Error(ParseRuleFlag("R:x").status()), HasSubstr("\"x\" is not param=value"));
  EXPECT_THAT(Error(ParseRuleFlag("R:x=1,x=2").status()), HasSubstr("x is given twice"));
}

TEST(RuleConfigurations, SageMakerShape) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "DebugRuleConfigurations": [{
      "RuleConfigurationName": "LossNotDecreasing",
      "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
      "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "only_nan": "True",
                         "action_json": "[{\"name\": \"StopTraining\", \"training_job_prefix\": \"x\"}]"}
    }],
    "ProfilerRuleConfigurations": [{"RuleParameters": {"rule_to_invoke": "ExplodingTensor"}}]})");
  absl::StatusOr<std::vector<model::RuleConfiguration>> c = ParseRuleConfigurations(j, "rules.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  // Profiler configurations come first, as DescribeTrainingJob lists them.
  EXPECT_EQ((*c)[0].name, "");
  EXPECT_EQ((*c)[1].name, "LossNotDecreasing");
  EXPECT_EQ((*c)[1].parameters, (std::map<std::string, std::string>{{"only_nan", "True"}}));
  EXPECT_EQ((*c)[1].actions, std::vector<std::string>{"StopTraining"});
}

TEST(RuleConfigurations, ErrorsSayWhereAndWhat) {
  auto error = [](const char* text) {
    return Error(ParseRuleConfigurations(nlohmann::json::parse(text), "rules.json").status());
  };
  EXPECT_THAT(error(R"([{"RuleParameters": {"threshold": 5, "rule_to_invoke": "X"}}])"),
              HasSubstr("rules.json: rule configuration 1: RuleParameters.threshold must be a "
                        "string"));
  EXPECT_THAT(error(R"([{"RuleParameters": {}}])"),
              HasSubstr("RuleParameters.rule_to_invoke is missing"));
  EXPECT_THAT(error(R"([{"RuleParameters": {"rule_to_invoke": "X",
                        "action_json": "[{\"name\": \"email\", \"endpoint\": \"a@b.c\"}]"}}])"),
              HasSubstr("action_json action \"email\" is not supported"));
  EXPECT_THAT(error(R"({"Rules": []})"), HasSubstr("expected a list of rule configurations"));
}

TEST(RuleConfigurations, ValidationNamesTheRuleTheParameterAndTheChoices) {
  std::vector<model::RuleConfiguration> configs = {{"", "explodingtensor", {}, {}},
                                                   {"", "ExplodingTensor", {}, {}}};
  ASSERT_TRUE(ValidateRuleConfigurations(&configs, Profile::kDefault).ok());
  EXPECT_EQ(configs[0].rule, "ExplodingTensor");  // canonical spelling
  EXPECT_EQ(configs[0].name, "ExplodingTensor");
  EXPECT_EQ(configs[1].name, "ExplodingTensor-2");

  std::vector<model::RuleConfiguration> typo = {{"", "ExplodingTensr", {}, {}}};
  EXPECT_THAT(Error(ValidateRuleConfigurations(&typo, Profile::kDefault)),
              HasSubstr("did you mean \"ExplodingTensor\"?"));
  std::vector<model::RuleConfiguration> param = {{"", "ExplodingTensor", {{"onlynan", "1"}}, {}}};
  EXPECT_THAT(Error(ValidateRuleConfigurations(&param, Profile::kDefault)),
              HasSubstr("did you mean \"only_nan\"?"));
  std::vector<model::RuleConfiguration> action = {{"a", "ExplodingTensor", {}, {"stoptraining"}}};
  EXPECT_THAT(Error(ValidateRuleConfigurations(&action, Profile::kDefault)),
              HasSubstr("rule a: action \"stoptraining\" is spelled StopTraining"));
  std::vector<model::RuleConfiguration> dup = {{"x", "ExplodingTensor", {}, {}},
                                               {"x", "ExplodingTensor", {}, {}}};
  EXPECT_THAT(Error(ValidateRuleConfigurations(&dup, Profile::kDefault)),
              HasSubstr("two rule configurations are named \"x\""));
}

TEST(Actions, TheFormsThatExist) {
  EXPECT_TRUE(ValidateAction("StopTraining").ok());
  EXPECT_TRUE(ValidateAction("exec:/bin/true").ok());
  EXPECT_TRUE(ValidateAction("webhook:http://127.0.0.1:9/hook").ok());
  EXPECT_TRUE(ValidateAction("signal:SIGUSR1").ok());
  EXPECT_THAT(Error(ValidateAction("exec:true")), HasSubstr("needs an absolute program path"));
  EXPECT_THAT(Error(ValidateAction("webhook:https://x")), HasSubstr("https is not supported"));
  EXPECT_THAT(Error(ValidateAction("signal:SIGKILL")), HasSubstr("SIGUSR1, SIGUSR2"));
  EXPECT_THAT(Error(ValidateAction("email:a@b")), HasSubstr("actions are: StopTraining"));
}

TEST(Profiles, Names) {
  EXPECT_EQ(*ParseProfile(""), Profile::kDefault);
  EXPECT_EQ(*ParseProfile("sagemaker_compat"), Profile::kSageMakerCompat);
  EXPECT_THAT(Error(ParseProfile("compat").status()), HasSubstr("choose default"));
}

TEST(DefaultRules, AreTheCatalogsDefaultSetAndValid) {
  std::vector<model::RuleConfiguration> d = DefaultRuleConfigurations();
  ASSERT_FALSE(d.empty());
  EXPECT_TRUE(ValidateRuleConfigurations(&d, Profile::kDefault).ok());
  bool has_exploding = false;
  for (const auto& c : d) has_exploding |= c.rule == "ExplodingTensor";
  EXPECT_TRUE(has_exploding);
}

}  // namespace
}  // namespace trainwatch::rules
