// `trainwatch extract` as a user runs it: exit statuses, what goes to stdout
// and stderr, and the real SageMaker logs of ../shared/testdata/logcases.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class ExtractCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("extract_command_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // Runs `trainwatch extract ARGS` through the shell.
  Outcome Extract(const std::string& args, const std::string& stdin_text = "") {
    fs::path in = Write("stdin.txt", stdin_text);
    std::string cmd = Quote(std::string(TW_BINARY_DIR) + "/trainwatch") + " extract " + args +
                      " < " + Quote(in) + " > " + Quote(dir_ / "out.txt") + " 2> " +
                      Quote(dir_ / "err.txt");
    int status = std::system(cmd.c_str());
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadFile(dir_ / "out.txt");
    o.err = ReadFile(dir_ / "err.txt");
    return o;
  }

  fs::path dir_;
};

TEST_F(ExtractCommandTest, JsonlInLogOrder) {
  fs::path log = Write("train.log", "step 1 loss: 0.5 acc: 0.1\r\nstep 2 loss: 0.25\racc: 0.2\n");
  fs::path defs = Write("defs.json", R"json([{"Name": "loss", "Regex": "loss: ([0-9.]+)"},
                                          {"Name": "acc", "Regex": "acc: ([0-9.]+)"}])json");
  Outcome o = Extract("--definitions " + Quote(defs) + " --input " + Quote(log));
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out,
            "{\"metric\": \"loss\", \"value\": 0.5}\n"
            "{\"metric\": \"acc\", \"value\": 0.1}\n"
            "{\"metric\": \"loss\", \"value\": 0.25}\n"
            "{\"metric\": \"acc\", \"value\": 0.2}\n");
  EXPECT_EQ(o.err, "");
}

TEST_F(ExtractCommandTest, MetricFlagsAndStdin) {
  Outcome o = Extract("--metric 'lr=lr=([0-9.e-]+)' --metric 'step=step ([0-9]+)' --input -",
                      "step 3 lr=1e-05\n");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out,
            "{\"metric\": \"lr\", \"value\": 1e-05}\n{\"metric\": \"step\", \"value\": 3}\n");
  // No --input reads stdin too.
  EXPECT_EQ(Extract("--metric 'step=step ([0-9]+)'", "step 4\n").out,
            "{\"metric\": \"step\", \"value\": 4}\n");
}

TEST_F(ExtractCommandTest, InvalidDefinitionsExit2BeforePrintingAnything) {
  fs::path log = Write("train.log", "loss: 1\n");
  fs::path defs = Write("defs.json", R"json([{"Name": "ok", "Regex": "loss: ([0-9]+)"},
                                          {"Name": "val:loss", "Regex": "(?<=val_)loss: ([0-9]+)"}])json");
  Outcome o = Extract("--definitions " + Quote(defs) + " --input " + Quote(log));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_THAT(o.err, HasSubstr("metric definition \"val:loss\""));
  EXPECT_THAT(o.err, HasSubstr("lookbehind"));

  Outcome none = Extract("--metric 'loss=loss: [0-9]+' --input " + Quote(log));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_THAT(none.err, HasSubstr("no capture group"));

  Outcome bad_json = Extract("--definitions " + Quote(Write("bad.json", "[{\"Name\": ")) +
                             " --input " + Quote(log));
  EXPECT_EQ(bad_json.exit_code, 2);
  EXPECT_THAT(bad_json.err, HasSubstr("bad.json: metric definitions are not valid JSON"));

  Outcome nothing = Extract("--input " + Quote(log));
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_THAT(nothing.err, HasSubstr("nothing to extract"));
}

TEST_F(ExtractCommandTest, MissingInputIsAOneLineErrorWithExit2) {
  Outcome o = Extract("--metric 'loss=loss: ([0-9]+)' --input " + Quote(dir_ / "nope.log"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_THAT(o.err, HasSubstr("nope.log"));
  EXPECT_THAT(o.err, HasSubstr("No such file"));
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);

  Outcome defs = Extract("--definitions " + Quote(dir_ / "nope.json"));
  EXPECT_EQ(defs.exit_code, 2);
  EXPECT_THAT(defs.err, HasSubstr("nope.json"));
}

TEST_F(ExtractCommandTest, TableSaysWhatNeverMatchedOrWasRejected) {
  fs::path log = Write("train.log", "loss: 2\nloss: 1\nloss: 3\nacc: high\nacc: 0.5\n");
  Outcome o = Extract(
      "--format table --metric 'loss=loss: ([0-9]+)' --metric 'acc=acc: (\\S+)' "
      "--metric 'val=val_loss: ([0-9.]+)' --input " +
      Quote(log));
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("METRIC  DATAPOINTS  REJECTED  LAST  MIN  MAX\n"
                               "loss             3         0     3    1    3\n"
                               "acc              1         1   0.5  0.5  0.5\n"
                               "val              0         0     -    -    -\n"));
  EXPECT_THAT(o.out, HasSubstr("5 lines"));
  EXPECT_THAT(o.err, HasSubstr("\"val\" never matched in 5 lines"));
  EXPECT_THAT(o.err, HasSubstr("\"acc\": 1 of 2 matches captured text that is not a number, e.g. "
                               "\"high\""));
}

TEST_F(ExtractCommandTest, SageMakerEscaped) {
  fs::path log = Write("xgb.log", "[0]\ttrain-error:0.25\tvalidation-error:0.5\n");
  std::string metric = "--metric 'e=#011train-error:([0-9.]+)' --input " + Quote(log);
  EXPECT_EQ(Extract(metric).out, "");
  EXPECT_EQ(Extract("--sagemaker-escaped " + metric).out, "{\"metric\": \"e\", \"value\": 0.25}\n");
}

TEST_F(ExtractCommandTest, UsageErrorsExit2) {
  EXPECT_EQ(Extract("--format xml --metric 'a=(a)'").exit_code, 2);
  EXPECT_EQ(Extract("--metric").exit_code, 2);
  Outcome help = Extract("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("Examples:"));
}

// The real SageMaker logs and their checker, in ../shared (skipped when absent).
TEST(LogCasesTest, AllPass) {
  fs::path check = fs::path(TW_SHARED_DIR) / "testdata/logcases/check.sh";
  if (!fs::exists(check)) GTEST_SKIP() << "no " << check << "; the shared folder is absent";
  fs::path out = fs::path(::testing::TempDir()) / ("logcases_" + std::to_string(::getpid()));
  std::string cmd = "TRAINWATCH_CMD=" +
                    Quote(Quote(std::string(TW_BINARY_DIR) + "/trainwatch") +
                          " extract --definitions {defs} --input {log} --format jsonl") +
                    " bash " + Quote(check) + " > " + Quote(out) + " 2>&1";
  int status = std::system(cmd.c_str());
  std::string report = ReadFile(out);
  fs::remove(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << report;
  EXPECT_THAT(report, HasSubstr(" passed, 0 failed")) << report;
}

}  // namespace
}  // namespace trainwatch::cli
