// End-to-end tests of the rules with real processes: `trainwatch run` over a
// script, the rule statuses and findings as `describe`, `rules` and `rules
// replay` show them, and actions acting on the job.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tests/e2e/rules_fixture.h"
#include "tests/e2e/subprocess.h"

namespace trainwatch {
namespace {

using ::testing::HasSubstr;
using testing::Finished;
using testing::RulesTest;
using testing::RunCommand;

// A loss that turns into nan: ExplodingTensor finds it and, told to, stops
// the job within a second of the line.
TEST_F(RulesTest, NanLossIsFoundAndStopTrainingStopsTheJobWithinASecond) {
  const std::string script = Script("nan.py", R"(
import time
for step in range(1000):
    loss = 1.0 / (step + 1) if step < 10 else float('nan')
    print(f"step {step} loss: {loss}", flush=True)
    time.sleep(0.05)
)");
  Finished run = RunCommand(Tw({"run", "--name", "nan-1", "--metric", "train:loss=loss: (\\S+)",
                               "--metric", "step=step (\\d+)", "--rule",
                               "ExplodingTensor:action=StopTraining", "--stop-grace", "2s", "--",
                               "python3", script}));
  EXPECT_EQ(run.exit_code, 128 + 15) << run.err;
  EXPECT_THAT(run.err, HasSubstr("ExplodingTensor IssuesFound: train:loss was NaN at step 10."));

  nlohmann::json rules = Json({"rules", "nan-1", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u) << rules.dump();
  const nlohmann::json& status = rules["rule_statuses"][0];
  EXPECT_EQ(status["status"], "IssuesFound");
  EXPECT_EQ(status["findings"][0]["reason"], "nan");
  EXPECT_EQ(status["findings"][0]["step"], 10);
  const int64_t finding_ms = status["findings"][0]["t_ms"];

  // The job went Stopping within one second of the nan line, and says why.
  Finished describe = RunCommand(Tw({"describe", "nan-1", "--json"}));
  nlohmann::json job = nlohmann::json::parse(describe.out);
  EXPECT_EQ(job["TrainingJobStatus"], "Stopped");
  int64_t stopping_ms = -1;
  std::string stopped_message;
  for (const nlohmann::json& t : job["SecondaryStatusTransitions"]) {
    if (t["Status"] == "Stopping") stopping_ms = static_cast<int64_t>(t["StartTime"].get<double>() * 1000);
    if (t["Status"] == "Stopped") stopped_message = t["StatusMessage"];
  }
  ASSERT_GE(stopping_ms, 0) << describe.out;
  EXPECT_LE(stopping_ms - finding_ms, 1000) << "stopped " << stopping_ms - finding_ms << " ms late";
  EXPECT_EQ(stopped_message, "Stopped by rule ExplodingTensor: train:loss was NaN at step 10.");
  // DescribeTrainingJob lists the rule in SageMaker's shape.
  ASSERT_TRUE(job.contains("DebugRuleEvaluationStatuses")) << describe.out;
  EXPECT_EQ(job["DebugRuleEvaluationStatuses"][0]["RuleConfigurationName"], "ExplodingTensor");
  EXPECT_EQ(job["DebugRuleEvaluationStatuses"][0]["RuleEvaluationStatus"], "IssuesFound");

  // The finding is an event of the job's rules log stream too.
  Finished all = RunCommand(Tw({"rules", "nan-1", "--all", "--json"}));
  EXPECT_THAT(all.out, HasSubstr("\"reason\":\"nan\""));

  // Replayed from the store, the rule gives the same verdict.
  nlohmann::json replay = Json({"rules", "replay", "nan-1", "--json"});
  ASSERT_EQ(replay["rule_statuses"].size(), 1u) << replay.dump();
  EXPECT_EQ(replay["rule_statuses"][0]["status"], "IssuesFound");
  EXPECT_EQ(replay["rule_statuses"][0]["findings"][0], status["findings"][0]);
}

// A healthy run: every rule of the default set ends NoIssuesFound, and the
// ones that saw no input say so instead of passing silently.
TEST_F(RulesTest, AHealthyRunEndsNoIssuesFoundForEveryRule) {
  const std::string script = Script("ok.py", R"(
import time
for step in range(30):
    print(f"step {step} loss: {1.0 / (step + 1)}", flush=True)
    time.sleep(0.02)
)");
  Finished run = RunCommand(Tw({"run", "--name", "ok-1", "--metric", "train:loss=loss: (\\S+)",
                               "--metric", "step=step (\\d+)", "--profile-interval", "100ms",
                               "--", "python3", script}));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json rules = Json({"rules", "ok-1", "--json"});
  ASSERT_FALSE(rules["rule_statuses"].empty()) << rules.dump();
  for (const nlohmann::json& s : rules["rule_statuses"]) {
    EXPECT_EQ(s["status"], "NoIssuesFound") << s.dump();
  }
  Finished describe = RunCommand(Tw({"describe", "ok-1"}));
  EXPECT_THAT(describe.out, HasSubstr("\nRules:\n"));
  EXPECT_THAT(describe.out, HasSubstr("\n  ExplodingTensor "));
}

TEST_F(RulesTest, NoRulesRunsNone) {
  Finished run = RunCommand(Tw({"run", "--name", "plain-1", "--no-rules", "--", "true"}));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json rules = Json({"rules", "plain-1", "--json"});
  EXPECT_TRUE(rules["rule_statuses"].empty()) << rules.dump();
}

TEST_F(RulesTest, ABadRuleConfigurationRefusesToStartAndSaysWhy) {
  const std::string marker = dir_ + "/ran";
  auto refused = [&](std::vector<std::string> flags, const std::string& expected) {
    std::vector<std::string> args = {"run", "--name", "bad-1"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "touch", marker});
    Finished f = RunCommand(Tw(args));
    EXPECT_EQ(f.exit_code, 2) << f.err;
    EXPECT_THAT(f.err, HasSubstr(expected));
    EXPECT_FALSE(std::filesystem::exists(marker));
  };
  refused({"--rule", "ExplodingTensr"}, "did you mean \"ExplodingTensor\"?");
  refused({"--rule", "ExplodingTensor:onlynan=true"}, "did you mean \"only_nan\"?");
  refused({"--rule", "ExplodingTensor:only_nan=maybe"},
          "only_nan=\"maybe\" is not true or false; give true or false (default false)");
  refused({"--rule", "ExplodingTensor:action=Email"}, "actions are: StopTraining");
  refused({"--rules-profile", "strict"}, "choose default");
  refused({"--no-rules", "--rule", "ExplodingTensor"}, "--no-rules cannot be combined");
  Script("rules.json", R"([{"RuleConfigurationName": "x", "RuleParameters": {"threshold": 3}}])");
  refused({"--rules", dir_ + "/rules.json"}, "RuleParameters.threshold must be a string");
}

TEST_F(RulesTest, ExecActionGetsTheFindingAndSageMakerFilesWork) {
  const std::string got = dir_ + "/finding.json";
  const std::string hook = Script("hook.sh", "#!/bin/sh\ncat > '" + got + "'\n");
  ::chmod(hook.c_str(), 0755);
  Script("rules.json", R"({"DebugRuleConfigurations": [{
      "RuleConfigurationName": "loss-nan",
      "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
      "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "only_nan": "True",
                         "action": "exec:)" + hook + R"("}}]})");
  const std::string script = Script("inf.py", R"(
print("loss: inf", flush=True)
print("loss: nan", flush=True)
)");
  Finished run = RunCommand(Tw({"run", "--name", "exec-1", "--metric", "train:loss=loss: (\\S+)",
                               "--rules", dir_ + "/rules.json", "--", "python3", script}));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json rules = Json({"rules", "exec-1", "--json"});
  ASSERT_EQ(rules["rule_statuses"].size(), 1u);
  EXPECT_EQ(rules["rule_statuses"][0]["configuration_name"], "loss-nan");
  EXPECT_EQ(rules["rule_statuses"][0]["status"], "IssuesFound");
  // only_nan: the inf line is not an issue, the nan line is.
  EXPECT_EQ(rules["rule_statuses"][0]["findings_total"], 1);
  std::ifstream in(got);
  std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(payload, HasSubstr("{\"job\":\"exec-1\",\"action\":\"exec:"));
  EXPECT_THAT(payload, HasSubstr("\"reason\":\"nan\""));
}

}  // namespace
}  // namespace trainwatch
