// End-to-end tests of the `trainwatch` binary as a user drives it: `run` over
// the fake trainer, and the read commands (describe, jobs, logs, metrics, stop)
// from "another terminal" while it runs and after it ends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

#include "tests/e2e/fake_trainer.h"
#include "tests/e2e/subprocess.h"

namespace trainwatch {
namespace {

using testing::Finished;
using testing::RunCommand;
using testing::Subprocess;

const std::string kBinary = std::string(TW_BINARY_DIR) + "/trainwatch";

// The values of `trainwatch metrics --format csv` (header "timestamp,STAT"), in order.
std::vector<double> CsvValues(const std::string& csv) {
  std::vector<double> values;
  std::istringstream rows(csv);
  std::string row;
  std::getline(rows, row);
  while (std::getline(rows, row)) values.push_back(std::stod(row.substr(row.find(',') + 1)));
  return values;
}

double CsvSum(const std::string& csv) {
  double sum = 0;
  for (double v : CsvValues(csv)) sum += v;
  return sum;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tw-cli-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    data_ = dir_ + "/data";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `trainwatch ARGS... --data DIR` (the data flag goes to the subcommand).
  std::vector<std::string> Tw(std::vector<std::string> args) const {
    args.insert(args.begin(), kBinary);
    // Insert --data right after the subcommand so that `run ... -- CMD` keeps CMD last.
    args.insert(args.begin() + 2, {"--data", data_});
    return args;
  }
  std::vector<std::string> RunArgs(std::vector<std::string> flags,
                                   std::initializer_list<std::string> trainer) const {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    for (const std::string& a : testing::FakeTrainer(trainer)) args.push_back(a);
    return Tw(args);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  // `trainwatch server` on the data folder, once it serves (server.json).
  std::unique_ptr<Subprocess> StartServer(const std::string& port) const {
    auto server = std::make_unique<Subprocess>(Tw({"server", "--listen", "127.0.0.1:" + port}),
                                               std::map<std::string, std::string>{});
    EXPECT_TRUE(WaitForFile(data_ + "/server.json"));
    return server;
  }
  static bool WaitForFile(const std::string& path, int timeout_ms = 30000) {
    for (int waited = 0; waited < timeout_ms; waited += 20) {
      if (::access(path.c_str(), F_OK) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // Polls `trainwatch describe` until its output contains `text`.
  bool WaitForDescribe(const std::string& job, const std::string& text, int timeout_ms = 30000) {
    for (int waited = 0; waited < timeout_ms; waited += 100) {
      Finished f = RunCommand(Tw({"describe", job}));
      if (f.out.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::string dir_;
  std::string data_;
};

const std::vector<std::string> kDefinitions = {
    "--metric", "train:loss=step=\\d+ loss=([0-9.]+)", "--metric", "train:accuracy=accuracy=([0-9.]+)",
    "--metric", "validation:loss=val_loss=([0-9.]+)"};

TEST_F(CliTest, RunPassesOutputThroughAndRecordsLogsMetricsAndTheJob) {
  Finished direct = RunCommand(testing::FakeTrainer({"epochs:2", "bar:3", "out:no newline"}));
  ASSERT_EQ(direct.exit_code, 0) << direct.err;

  std::vector<std::string> flags = {"--name", "e2e-ok", "--profile-interval", "off"};
  flags.insert(flags.end(), kDefinitions.begin(), kDefinitions.end());
  Finished run = RunCommand(RunArgs(flags, {"epochs:2", "bar:3", "out:no newline"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Byte for byte what the trainer prints without trainwatch.
  EXPECT_EQ(run.out, direct.out);
  EXPECT_NE(run.err.find(direct.err), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("job e2e-ok Completed"), std::string::npos) << run.err;

  Finished describe = RunCommand(Tw({"describe", "e2e-ok"}));
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("Status:         Completed (Completed)"), std::string::npos)
      << describe.out;
  // epochs:2 -> last step E=2, S=2: loss = 1/(2*3+2+1) = 0.1111, val_loss = loss + 0.05.
  EXPECT_NE(describe.out.find("train:loss       0.1111 "), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("validation:loss  0.1611 "), std::string::npos) << describe.out;

  // DescribeTrainingJob's own shape and field names.
  Finished json = RunCommand(Tw({"describe", "e2e-ok", "--json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json described = nlohmann::json::parse(json.out);
  EXPECT_EQ(described["TrainingJobName"], "e2e-ok");
  EXPECT_EQ(described["TrainingJobStatus"], "Completed");
  EXPECT_EQ(described["SecondaryStatus"], "Completed");
  ASSERT_FALSE(described["SecondaryStatusTransitions"].empty()) << json.out;
  EXPECT_EQ(described["SecondaryStatusTransitions"].back()["Status"], "Completed");
  std::map<std::string, double> final_metrics;
  for (const auto& m : described["FinalMetricDataList"]) {
    final_metrics[m["MetricName"].get<std::string>()] = m["Value"].get<double>();
  }
  EXPECT_NEAR(final_metrics["train:loss"], 1.0 / 9, 1e-4) << json.out;
  EXPECT_NEAR(final_metrics["validation:loss"], 1.0 / 9 + 0.05, 1e-4) << json.out;

  // New definitions over the stored log, exactly as if applied live.
  Finished again = RunCommand(
      Tw({"extract", "--job", "e2e-ok", "--metric", "loss=step=\\d+ loss=([0-9.]+)"}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(std::count(again.out.begin(), again.out.end(), '\n'), 6) << again.out;
  EXPECT_NE(again.out.find("{\"metric\": \"loss\", \"value\": 0.1111"), std::string::npos)
      << again.out;
  Finished missing = RunCommand(Tw({"extract", "--job", "no-such-job", "--metric", "x=(1)"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-job"), std::string::npos) << missing.err;

  Finished logs = RunCommand(Tw({"logs", "e2e-ok"}));
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("epoch=1 step=1 loss="), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("no newline\n"), std::string::npos) << "last segment is a line";

  Finished filtered = RunCommand(Tw({"logs", "e2e-ok", "--filter", "validation"}));
  ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_EQ(std::count(filtered.out.begin(), filtered.out.end(), '\n'), 2) << filtered.out;

  Finished count = RunCommand(Tw({"metrics", "e2e-ok", "--metric", "train:loss", "--stat",
                           "SampleCount", "--period", "60", "--format", "csv"}));
  ASSERT_EQ(count.exit_code, 0) << count.err;
  // 2 epochs x 3 steps, in one or two minute buckets.
  EXPECT_EQ(count.out.substr(0, count.out.find('\n')), "timestamp,SampleCount");
  EXPECT_EQ(CsvSum(count.out), 6) << count.out;

  Finished jobs = RunCommand(Tw({"jobs"}));
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find("e2e-ok  Completed"), std::string::npos) << jobs.out;
}

TEST_F(CliTest, ExitStatusIsTheCommandsAndFailuresAreExplained) {
  Finished crash = RunCommand(RunArgs({"--name", "e2e-crash", "--profile-interval", "off"},
                               {"out:starting", "crash"}));
  EXPECT_EQ(crash.exit_code, 1);
  Finished describe = RunCommand(Tw({"describe", "e2e-crash"}));
  EXPECT_NE(describe.out.find("Status:         Failed (Failed)"), std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("AlgorithmError"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("ValueError"), std::string::npos) << describe.out;

  // The command's own options after "--", right after a --metric.
  Finished options = RunCommand(Tw({"run", "--name", "e2e-options", "--profile-interval", "off",
                                    "--metric", "x=x=(1)", "--", "/bin/sh", "-c", "exit 3"}));
  EXPECT_EQ(options.exit_code, 3) << options.err;

  Finished killed = RunCommand(RunArgs({"--name", "e2e-killed", "--profile-interval", "off"},
                                {"kill:9"}));
  EXPECT_EQ(killed.exit_code, 128 + 9);
}

TEST_F(CliTest, BadInputIsAOneLineErrorWithExitCode2AndNothingRuns) {
  const std::string touched = File("started");
  // An invalid definition: named in the message, the command never starts.
  Finished bad_def = RunCommand(RunArgs({"--name", "e2e-bad", "--metric", "lookahead=loss(?=x)([0-9]+)"},
                                 {"touch:" + touched}));
  EXPECT_EQ(bad_def.exit_code, 2);
  EXPECT_NE(bad_def.err.find("lookahead"), std::string::npos) << bad_def.err;
  EXPECT_FALSE(std::filesystem::exists(touched));

  // A command that cannot be started.
  Finished missing = RunCommand(Tw({"run", "--name", "e2e-missing", "--", "no-such-trainer-xyz"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-trainer-xyz"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find("running job"), std::string::npos) << missing.err;  // it never ran

  // A job name that exists (names compare ignoring case, as SageMaker's ARNs).
  ASSERT_EQ(RunCommand(RunArgs({"--name", "e2e-dup", "--profile-interval", "off"}, {"out:first"}))
                .exit_code,
            0);
  Finished dup = RunCommand(RunArgs({"--name", "E2E-Dup"}, {"touch:" + touched}));
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("exists"), std::string::npos) << dup.err;
  EXPECT_EQ(dup.err.find("running job"), std::string::npos) << dup.err;
  // The advice once, not twice.
  EXPECT_EQ(dup.err.find("choose another --name"), dup.err.rfind("choose another --name"));
  EXPECT_EQ(dup.err.find("pick another --name"), std::string::npos) << dup.err;
  EXPECT_FALSE(std::filesystem::exists(touched));
  EXPECT_NE(RunCommand(Tw({"describe", "e2e-dup"})).out.find("Completed"), std::string::npos);

  // Unknown job for a read command.
  Finished unknown = RunCommand(Tw({"describe", "nope"}));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no training job named \"nope\""), std::string::npos) << unknown.err;

  // An option that wants a value, given another option instead.
  Finished swallowed = RunCommand(Tw({"metrics", "e2e-dup", "--metric", "--all"}));
  EXPECT_EQ(swallowed.exit_code, 2);
  EXPECT_NE(swallowed.err.find("--metric: needs a value, and --all is an option"),
            std::string::npos)
      << swallowed.err;
  // ... unless it is attached with '=': then it is the value.
  Finished attached = RunCommand(Tw({"logs", "e2e-dup", "--filter=--all"}));
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  // --json wherever JSON can be printed.
  Finished as_json = RunCommand(Tw({"metrics", "e2e-dup", "--json"}));
  EXPECT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(as_json.out.substr(0, 1), "[") << as_json.out;

  // A bad time names its flag; a relative one says which units there are.
  Finished bad_time = RunCommand(Tw({"metrics", "e2e-dup", "--start", "now-1y"}));
  EXPECT_EQ(bad_time.exit_code, 2);
  EXPECT_NE(bad_time.err.find("--start: time \"now-1y\""), std::string::npos) << bad_time.err;
  EXPECT_NE(bad_time.err.find("5m, 3h"), std::string::npos) << bad_time.err;
  // A range that ends before it starts says which end it met.
  Finished future = RunCommand(Tw({"metrics", "e2e-dup", "--start", "2100-01-01T00:00:00Z"}));
  EXPECT_EQ(future.exit_code, 2);
  EXPECT_NE(future.err.find("must be before the job's end"), std::string::npos) << future.err;
  // Stopping a job that ended names it and its status.
  Finished ended = RunCommand(Tw({"stop", "e2e-dup", "--timeout", "5m"}));
  EXPECT_EQ(ended.exit_code, 2);
  EXPECT_NE(ended.err.find("job e2e-dup has already ended (Completed)"), std::string::npos)
      << ended.err;

  // A mistyped command is named, with the nearest one.
  Finished typo = RunCommand({kBinary, "jbos"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("no command \"jbos\"; did you mean \"jobs\"?"), std::string::npos)
      << typo.err;
  Finished version = RunCommand({kBinary, "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_FALSE(version.out.empty());
  EXPECT_NE(RunCommand({kBinary, "help"}).out.find("trainwatch <command> --help"),
            std::string::npos);
  // `help COMMAND` is that command's --help.
  Finished help_run = RunCommand({kBinary, "help", "admin", "compact"});
  EXPECT_EQ(help_run.exit_code, 0);
  EXPECT_EQ(help_run.out, RunCommand({kBinary, "admin", "compact", "--help"}).out);
  Finished help_typo = RunCommand({kBinary, "help", "rnu"});
  EXPECT_EQ(help_typo.exit_code, 2);
  EXPECT_NE(help_typo.err.find("no command \"rnu\"; did you mean \"run\"?"), std::string::npos)
      << help_typo.err;

  // --data naming a file, and a folder with no data for a command that writes.
  const std::string file = File("not-a-folder");
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  Finished on_file = RunCommand({kBinary, "jobs", "--data", file});
  EXPECT_EQ(on_file.exit_code, 2);
  EXPECT_NE(on_file.err.find("is a file, not a data folder"), std::string::npos) << on_file.err;
  const std::string nowhere = File("no-data-here");
  Finished compact = RunCommand({kBinary, "admin", "compact", "--data", nowhere});
  EXPECT_EQ(compact.exit_code, 2);
  EXPECT_NE(compact.err.find("nothing to compact"), std::string::npos) << compact.err;
  EXPECT_FALSE(std::filesystem::exists(nowhere));  // not made empty
}

TEST_F(CliTest, ReadCommandsWorkWhileAJobRunsAndStopStopsIt) {
  const std::string ready = File("ready");
  std::vector<std::string> flags = {"--name", "e2e-live", "--profile-interval", "100ms",
                                    "--stop-grace", "5s"};
  flags.insert(flags.end(), kDefinitions.begin(), kDefinitions.end());
  Subprocess runner(RunArgs(flags, {"epochs:1", "touch:" + ready, "hang"}), {});
  ASSERT_TRUE(WaitForFile(ready));

  // A second writer is refused with a message that names the holder.
  Finished second = RunCommand(RunArgs({"--name", "e2e-second"}, {"out:x"}));
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find(std::to_string(runner.pid())), std::string::npos) << second.err;

  ASSERT_TRUE(WaitForDescribe("e2e-live", "InProgress (Training)"));
  // Datapoints are queryable while the job runs, not at its end.
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    Finished m = RunCommand(Tw({"metrics", "e2e-live", "--metric", "train:loss", "--stat", "SampleCount",
                         "--format", "csv", "--period", "60"}));
    seen = m.exit_code == 0 && m.out.find("\n20") != std::string::npos;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen) << "no train:loss datapoints while the job runs";
  Finished logs = RunCommand(Tw({"logs", "e2e-live"}));
  EXPECT_NE(logs.out.find("validation: val_loss="), std::string::npos) << logs.out;
  Finished jobs = RunCommand(Tw({"jobs", "--status", "InProgress"}));
  EXPECT_NE(jobs.out.find("e2e-live"), std::string::npos) << jobs.out;

  Finished stop = RunCommand(Tw({"stop", "e2e-live"}));
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_NE(stop.err.find("Stopped"), std::string::npos) << stop.err;
  Finished done = runner.Wait();
  EXPECT_EQ(done.exit_code, 128 + SIGTERM) << done.err;
  Finished describe = RunCommand(Tw({"describe", "e2e-live"}));
  EXPECT_NE(describe.out.find("Status:         Stopped (Stopped)"), std::string::npos)
      << describe.out;
  // The profiler sampled the job while it ran.
  Finished cpu = RunCommand(Tw({"metrics", "e2e-live", "--metric", "CPUUtilization", "--period", "1",
                         "--stat", "SampleCount", "--format", "csv"}));
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_GE(std::count(cpu.out.begin(), cpu.out.end(), '\n'), 2) << cpu.out;
}

TEST_F(CliTest, AJobWhoseRunnerDiedIsRecordedFailedByTheNextReader) {
  const std::string ready = File("ready");
  Subprocess runner(RunArgs({"--name", "e2e-orphan", "--profile-interval", "off"},
                            {"out:working", "touch:" + ready, "hang"}),
                    {});
  ASSERT_TRUE(WaitForFile(ready));
  ASSERT_TRUE(WaitForDescribe("e2e-orphan", "InProgress"));
  runner.Signal(SIGKILL);
  runner.Wait();

  Finished describe = RunCommand(Tw({"describe", "e2e-orphan"}));
  EXPECT_NE(describe.out.find("Status:         Failed (Failed)"), std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("stopped without finishing"), std::string::npos) << describe.out;
  // ...and recorded so: the status filter sees it as Failed.
  Finished failed = RunCommand(Tw({"jobs", "--status", "Failed"}));
  EXPECT_NE(failed.out.find("e2e-orphan"), std::string::npos) << failed.out;
}

TEST_F(CliTest, MaxRuntimeStopsTheJobWithSigkillAfterTheGracePeriod) {
  // 3 s: time for the interpreter to start and ignore SIGTERM before it comes.
  Finished run = RunCommand(RunArgs({"--name", "e2e-slow", "--max-runtime", "3", "--stop-grace", "500ms",
                              "--profile-interval", "off"},
                             {"ignore-term", "out:stubborn", "hang"}));
  EXPECT_EQ(run.exit_code, 128 + SIGKILL) << run.err;
  Finished describe = RunCommand(Tw({"describe", "e2e-slow"}));
  EXPECT_NE(describe.out.find("Status:         Stopped (MaxRuntimeExceeded)"), std::string::npos)
      << describe.out;
}

TEST_F(CliTest, CtrlCIsForwardedAndTheExitStatusIsTheCommands) {
  const std::string ready = File("ready");
  Subprocess runner(RunArgs({"--name", "e2e-int", "--profile-interval", "off"},
                            {"touch:" + ready, "hang"}),
                    {});
  ASSERT_TRUE(WaitForFile(ready));
  runner.Signal(SIGINT);
  Finished done = runner.Wait();
  EXPECT_EQ(done.exit_code, 130) << done.err;  // the trainer's KeyboardInterrupt exit
  EXPECT_NE(done.err.find("interrupted"), std::string::npos) << done.err;
}

TEST_F(CliTest, LogsFollowPrintsLinesAsTheyComeAndEndsWithTheJob) {
  const std::string ready = File("ready");
  const std::string go = File("go");
  Subprocess runner(RunArgs({"--name", "e2e-follow", "--profile-interval", "off"},
                            {"out:first line\\n", "touch:" + ready, "wait-file:" + go,
                             "out:second line\\n"}),
                    {});
  ASSERT_TRUE(WaitForFile(ready));
  ASSERT_TRUE(WaitForDescribe("e2e-follow", "InProgress"));
  Subprocess follow(Tw({"logs", "e2e-follow", "--follow"}), {});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::close(::open(go.c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_EQ(runner.Wait().exit_code, 0);
  Finished followed = follow.Wait();
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(followed.out, "first line\nsecond line\n");
}

// `logs -n N`: the last N lines of a log of many pages (10,000 lines a
// read), of those that match a filter too, as `tail -n` gives them.
TEST_F(CliTest, LogsTailPrintsTheLastLines) {
  Finished run = RunCommand(Tw({"run", "--name", "e2e-tail", "--profile-interval", "off", "--",
                                "/usr/bin/python3", "-c",
                                "for i in range(25000): print(f'line {i}')"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Finished last = RunCommand(Tw({"logs", "e2e-tail", "-n", "3"}));
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(last.out, "line 24997\nline 24998\nline 24999\n");
  Finished matching = RunCommand(Tw({"logs", "e2e-tail", "--tail", "3", "--filter", "%^line.1?7$%"}));
  EXPECT_EQ(matching.exit_code, 0) << matching.err;
  EXPECT_EQ(matching.out, "line 7\nline 17\n") << "fewer match than asked: all of them";
  Finished many = RunCommand(Tw({"logs", "e2e-tail", "-n", "12345", "--follow"}));
  EXPECT_EQ(many.exit_code, 0) << many.err;  // the job has ended: --follow stops
  EXPECT_EQ(std::count(many.out.begin(), many.out.end(), '\n'), 12345);
  EXPECT_EQ(many.out.substr(0, 11), "line 12655\n");
  Finished none = RunCommand(Tw({"logs", "e2e-tail", "-n", "0"}));
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "");
  Finished negative = RunCommand(Tw({"logs", "e2e-tail", "-n", "-1"}));
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("--tail"), std::string::npos) << negative.err;

  // With --follow while the job runs: its last 2 lines when it starts, then
  // every line after them, once each and in order, to the job's end.
  Subprocess runner(Tw({"run", "--name", "e2e-tail-live", "--profile-interval", "off", "--",
                        "/usr/bin/python3", "-u", "-c",
                        "import time\nfor i in range(40): print(f'line {i}'); time.sleep(0.1)"}),
                    {});
  auto stored = [&] {
    Finished f = RunCommand(Tw({"logs", "e2e-tail-live"}));
    return std::count(f.out.begin(), f.out.end(), '\n');
  };
  for (int waited = 0; stored() < 5 && waited < 30000; waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Finished live = RunCommand(Tw({"logs", "e2e-tail-live", "-n", "2", "--follow"}));
  EXPECT_EQ(runner.Wait().exit_code, 0);
  EXPECT_EQ(live.exit_code, 0) << live.err;
  std::istringstream lines(live.out);
  std::vector<int> numbers;
  for (std::string line; std::getline(lines, line);) numbers.push_back(std::stoi(line.substr(5)));
  ASSERT_FALSE(numbers.empty()) << live.out;
  EXPECT_GE(numbers.front(), 3) << "the lines before the last 2 were printed: " << live.out;
  EXPECT_EQ(numbers.back(), 39) << live.out;
  for (size_t i = 1; i < numbers.size(); ++i) EXPECT_EQ(numbers[i], numbers[i - 1] + 1) << live.out;
}


// The profiler through the binary: a job that burns CPU for 2 s and then
// sleeps 2 s, sampled every 100 ms, has about 40 samples per series and the
// burn in CPUUtilization, found by `trainwatch metrics` from the job's Host.
TEST_F(CliTest, ProfilerSeriesOfAJobAreThereAt100msAndShowTheBurn) {
  const auto started = std::chrono::steady_clock::now();
  Finished run = RunCommand(Tw({"run", "--name", "e2e-burn", "--profile-interval", "100ms", "--",
                                "/usr/bin/python3", "-c",
                                "import time\nt = time.time()\nwhile time.time() - t < 2: pass\n"
                                "time.sleep(2)\n"}));
  const double wall_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The job's own CPU (its process tree), so that other load on the machine does not count.
  Finished csv = RunCommand(Tw({"metrics", "e2e-burn", "--metric", "JobCPUUtilization",
                                "--period", "1", "--stat", "Maximum", "--format", "csv"}));
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::vector<double> per_second = CsvValues(csv.out);
  ASSERT_GE(per_second.size(), 4u) << csv.out;
  // 100 per busy core: the burn keeps one core busy, or a good part of it when
  // the other tests of the suite share the machine's cores with it.
  EXPECT_GT(*std::max_element(per_second.begin(), per_second.begin() + 2), 30) << csv.out;
  // The sleep: a whole second with the job idle (the last bucket may hold the
  // interpreter's own shutdown).
  EXPECT_LT(*std::min_element(per_second.begin() + 2, per_second.end()), 10) << csv.out;
  Finished count = RunCommand(Tw({"metrics", "e2e-burn", "--metric", "CPUUtilization", "--period",
                                  "60", "--stat", "SampleCount", "--format", "csv"}));
  ASSERT_EQ(count.exit_code, 0) << count.err;
  // One sample per 100 ms while the job ran: at least its 4 s (a tenth of the
  // ticks may be late on a loaded machine), at most the command's whole wall time.
  const double samples = CsvSum(count.out);
  EXPECT_GE(samples, 36) << count.out;
  EXPECT_LE(samples, wall_ms / 100 + 2) << count.out << " in " << wall_ms << " ms";
}

// ---------------------------------------------------------------- server

// A free port below the kernel's ephemeral range (ip_local_port_range), so
// that no outgoing connection of another test takes it while a server that
// the test stops is away, to be started again on the same port.
int FreePort() {
  int ephemeral_low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> ephemeral_low;
  const int low = std::min(10000, ephemeral_low / 2);
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = low + static_cast<int>(rng() % static_cast<unsigned>(ephemeral_low - low));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (free) return port;
  }
  ADD_FAILURE() << "no free port below " << ephemeral_low;
  return 0;
}

// One job on two hosts: host 1 here, host 2 in its own UTS namespace so that it
// is "another machine" to the server (which cannot signal it, only record a stop
// request that the runner polls for).
TEST_F(CliTest, AJobOnTwoHostsIsOneJobAndStopReachesBothHosts) {
  if (Finished probe = RunCommand({"unshare", "--uts", "true"}); probe.exit_code != 0) {
    GTEST_SKIP() << "needs `unshare --uts` (root) to give host 2 another host name: "
                 << probe.err;
  }
  const std::string port = std::to_string(FreePort());
  const std::string endpoint = "http://127.0.0.1:" + port;
  Subprocess server(Tw({"server", "--listen", "127.0.0.1:" + port}), {});
  ASSERT_TRUE(WaitForFile(data_ + "/server.json"));
  auto host_args = [&](int host, const std::string& ready) {
    return RunArgs({"--name", "e2e-hosts", "--host", std::to_string(host), "--endpoint", endpoint,
                    "--stop-grace", "5s", "--profile-interval", "1s", "--metric",
                    "train:loss=loss=([0-9.]+)"},
                   // Host 2 prints once host 1's line is stored: its loss is the job's last.
                   {"wait-file:" + File(host == 1 ? "go1" : "go2"),
                    "out:from host " + std::to_string(host) + " loss=0." + std::to_string(host) +
                        "\\n",
                    "touch:" + ready, "hang"});
  };
  { std::ofstream touch(File("go1")); }
  Subprocess first(host_args(1, File("ready1")), {});
  std::vector<std::string> other_machine = {"unshare", "--uts", "sh", "-c",
                                            "hostname e2e-other-machine && exec \"$0\" \"$@\""};
  for (const std::string& a : host_args(2, File("ready2"))) other_machine.push_back(a);
  Subprocess second(other_machine, {});
  ASSERT_TRUE(WaitForFile(File("ready1")));
  bool stored = false;
  for (int i = 0; i < 100 && !stored; ++i) {
    stored = RunCommand(Tw({"logs", "e2e-hosts"})).out.find("from host 1") != std::string::npos;
    if (!stored) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(stored) << "host 1's line never reached the server";
  { std::ofstream touch(File("go2")); }
  ASSERT_TRUE(WaitForFile(File("ready2")));
  ASSERT_TRUE(WaitForDescribe("e2e-hosts", "Hosts (2;"));
  Finished describe = RunCommand(Tw({"describe", "e2e-hosts"}));
  EXPECT_NE(describe.out.find("Status:         InProgress (Training)"), std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("on e2e-other-machine"), std::string::npos) << describe.out;

  // One job in the list, each host's output under --host, and both hosts' series.
  Finished jobs = RunCommand(Tw({"jobs"}));
  EXPECT_EQ(jobs.out.find("e2e-hosts"), jobs.out.rfind("e2e-hosts")) << jobs.out;
  // Lines reach the server through the runners' spools: wait for both.
  Finished logs;
  for (int i = 0; i < 100; ++i) {
    logs = RunCommand(Tw({"logs", "e2e-hosts", "--host", "2"}));
    Finished first_logs = RunCommand(Tw({"logs", "e2e-hosts", "--host", "1"}));
    if (logs.out.find("from host 2") != std::string::npos &&
        first_logs.out.find("from host 1") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("from host 2"), std::string::npos) << logs.out;
  EXPECT_EQ(logs.out.find("from host 1"), std::string::npos) << logs.out;
  logs = RunCommand(Tw({"logs", "e2e-hosts"}));
  EXPECT_NE(logs.out.find("from host 1"), std::string::npos) << logs.out;
  EXPECT_NE(logs.err.find("ran on 2 hosts"), std::string::npos) << logs.err;
  Finished no_host = RunCommand(Tw({"logs", "e2e-hosts", "--host", "3"}));
  EXPECT_EQ(no_host.exit_code, 2);
  EXPECT_NE(no_host.err.find("ran on hosts 1, 2"), std::string::npos) << no_host.err;
  bool both = false;
  for (int i = 0; i < 100 && !both; ++i) {
    Finished cpu = RunCommand(Tw({"metrics", "e2e-hosts", "--metric", "CPUUtilization", "--stat",
                                  "SampleCount", "--period", "60", "--format", "csv"}));
    both = cpu.out.find("Host=e2e-hosts/algo-1") != std::string::npos &&
           cpu.out.find("Host=e2e-hosts/algo-2") != std::string::npos;
    if (!both) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(both) << "CPUUtilization of both hosts, labelled by Host";
  // A host number is taken once.
  Finished again = RunCommand(
      RunArgs({"--name", "e2e-hosts", "--host", "2", "--endpoint", endpoint}, {"out:x"}));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("host algo-2 of training job \"e2e-hosts\" already ran"),
            std::string::npos)
      << again.err;

  Finished stop = RunCommand(Tw({"stop", "e2e-hosts"}));
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_NE(stop.err.find("is Stopped"), std::string::npos) << stop.err;
  EXPECT_EQ(first.Wait().exit_code, 128 + SIGTERM);
  Finished second_done = second.Wait();
  EXPECT_EQ(second_done.exit_code, 128 + SIGTERM) << second_done.err;
  Finished json = RunCommand(Tw({"describe", "e2e-hosts", "--json"}));
  nlohmann::json described = nlohmann::json::parse(json.out);
  EXPECT_EQ(described["TrainingJobStatus"], "Stopped") << json.out;
  EXPECT_EQ(described["ResourceConfig"]["InstanceCount"], 2) << json.out;
  EXPECT_EQ(described["FinalMetricDataList"][0]["Value"], 0.2) << "the later host's value";

  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait().exit_code, 0);
}

// A runner on another machine that dies cannot be checked by the server: it
// goes silent, and the server records its job as Failed after --runner-timeout.
TEST_F(CliTest, ARunnerOnAnotherMachineThatDiesIsRecordedFailedWhenSilent) {
  if (Finished probe = RunCommand({"unshare", "--uts", "true"}); probe.exit_code != 0) {
    GTEST_SKIP() << "needs `unshare --uts` (root) to run a runner on another host name: "
                 << probe.err;
  }
  const std::string port = std::to_string(FreePort());
  Subprocess server(
      Tw({"server", "--listen", "127.0.0.1:" + port, "--runner-timeout", "6s"}), {});
  ASSERT_TRUE(WaitForFile(data_ + "/server.json"));
  std::vector<std::string> args = {"unshare", "--uts", "sh", "-c",
                                   "hostname e2e-lost-machine && exec \"$0\" \"$@\""};
  for (const std::string& a :
       RunArgs({"--name", "e2e-lost", "--endpoint", "http://127.0.0.1:" + port,
                "--profile-interval", "off"},
               {"out:working\\n", "touch:" + File("ready"), "hang"})) {
    args.push_back(a);
  }
  Subprocess runner(args, {});
  ASSERT_TRUE(WaitForFile(File("ready")));
  ASSERT_TRUE(WaitForDescribe("e2e-lost", "InProgress (Training)"));
  // Alive and beating (about once a second): not recorded, however long it runs.
  // 6 s leaves room for beats late on a loaded machine, 7 s of waiting outlasts it.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  Finished alive = RunCommand(Tw({"describe", "e2e-lost"}));
  EXPECT_NE(alive.out.find("InProgress (Training)"), std::string::npos) << alive.out;

  runner.Signal(SIGKILL);
  runner.Wait();
  ASSERT_TRUE(WaitForDescribe("e2e-lost", "Status:         Failed (Failed)", 30000));
  Finished describe = RunCommand(Tw({"describe", "e2e-lost"}));
  EXPECT_NE(describe.out.find("(pid " + std::to_string(runner.pid()) +
                              " on e2e-lost-machine) has not been heard from for 6s"),
            std::string::npos)
      << describe.out;
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait().exit_code, 0);
}

// The fault test of the agent path: a job runs through `trainwatch server`,
// the server is stopped for 60 s in the middle, and after it is back every
// log line and datapoint is there exactly once, while the training process
// never noticed (its own schedule shows no delay).
TEST_F(CliTest, AServerAwayFor60sMidJobLosesNothingAndNeverSlowsTheJob) {
  const std::string port = std::to_string(FreePort());
  auto start_server = [&] { return StartServer(port); };
  std::unique_ptr<Subprocess> server = start_server();

  constexpr int kLines = 100, kIntervalMs = 800;  // 79.2 s of training
  Subprocess run(RunArgs({"--name", "e2e-fault", "--profile-interval", "1s", "--metric",
                          "train:loss=\\bloss=([0-9.]+)"},
                         {"paced:" + std::to_string(kLines) + ":" + std::to_string(kIntervalMs)}),
                 {});
  std::this_thread::sleep_for(std::chrono::seconds(8));
  server->Signal(SIGTERM);
  Finished stopped = server->Wait();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_FALSE(std::filesystem::exists(data_ + "/server.json"));
  std::this_thread::sleep_for(std::chrono::seconds(60));
  server = start_server();

  Finished done = run.Wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.err.find("data to the server at http://127.0.0.1:" + port), std::string::npos)
      << done.err;
  // The training process kept its schedule: nothing it wrote waited.
  int elapsed_ms = 0, late_ms = 0;
  ASSERT_EQ(std::sscanf(done.out.substr(done.out.find("paced ")).c_str(),
                        "paced elapsed_ms=%d max_late_ms=%d", &elapsed_ms, &late_ms),
            2)
      << done.out;
  const int expected_ms = (kLines - 1) * kIntervalMs;
  std::printf("fault test: trainer elapsed %d ms for a %d ms schedule (%+.2f%%), latest line %d ms "
              "late\n",
              elapsed_ms, expected_ms, 100.0 * (elapsed_ms - expected_ms) / expected_ms, late_ms);
  EXPECT_LT(elapsed_ms, expected_ms * 1.01) << "wall time changed by more than 1%";
  // A job that waited on monitoring would be late by most of the 60 s; 500 ms
  // is scheduling noise on a machine whose cores the rest of the suite keeps busy.
  EXPECT_LT(late_ms, 500) << "a line was written late: the job waited";

  // Exactly once: every line, every datapoint, the final status.
  Finished logs = RunCommand(Tw({"logs", "e2e-fault"}));
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  for (int i = 0; i < kLines; ++i) {
    const std::string line = "step=" + std::to_string(i) + " loss=";
    const size_t first = logs.out.find(line);
    ASSERT_NE(first, std::string::npos) << "line " << i << " missing";
    EXPECT_EQ(logs.out.find(line, first + 1), std::string::npos) << "line " << i << " twice";
  }
  EXPECT_EQ(std::count(logs.out.begin(), logs.out.end(), '\n'), kLines + 1) << logs.out;
  Finished count = RunCommand(Tw({"metrics", "e2e-fault", "--metric", "train:loss", "--stat",
                                  "SampleCount", "--period", "60", "--format", "csv"}));
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(CsvSum(count.out), kLines) << count.out;
  Finished json = RunCommand(Tw({"describe", "e2e-fault", "--json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json described = nlohmann::json::parse(json.out);
  EXPECT_EQ(described["TrainingJobStatus"], "Completed") << json.out;
  EXPECT_FALSE(std::filesystem::exists(data_ + "/spool") &&
               !std::filesystem::is_empty(data_ + "/spool"))
      << "the spool is gone once everything is delivered";

  server->Signal(SIGTERM);
  EXPECT_EQ(server->Wait().exit_code, 0);
}

// A run on one machine sends to a server elsewhere (--endpoint), which is away
// when the job ends: its spool stays in the run's own data folder. A server
// started there does not take it (it is not that job's server);
// `trainwatch admin deliver` sends it to its own, once that one is back.
TEST_F(CliTest, ASpoolForAnotherServerWaitsForItAndAdminDeliverSendsItThere) {
  const std::string port = std::to_string(FreePort());
  std::unique_ptr<Subprocess> server = StartServer(port);
  const std::string ready = File("ready"), go = File("go"), here = dir_ + "/here";
  std::vector<std::string> args = {kBinary, "run", "--data", here, "--endpoint",
                                   "http://127.0.0.1:" + port, "--name", "e2e-elsewhere",
                                   "--delivery-timeout", "1s", "--profile-interval", "off", "--"};
  for (const std::string& a : testing::FakeTrainer(
           {"paced:5:50", "touch:" + ready, "wait-file:" + go, "paced:5:50"})) {
    args.push_back(a);
  }
  Subprocess run(args, {});
  ASSERT_TRUE(WaitForFile(ready));
  server->Signal(SIGTERM);
  ASSERT_EQ(server->Wait().exit_code, 0);
  std::ofstream(go).put('\n');
  Finished done = run.Wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.err.find("`trainwatch admin deliver --data " + here + "` sends them to"),
            std::string::npos)
      << done.err;

  // A server of the run's own folder leaves the spool alone, and says whose it is.
  const std::string other_port = std::to_string(FreePort());
  auto local = std::make_unique<Subprocess>(
      std::vector<std::string>{kBinary, "server", "--data", here, "--listen",
                               "127.0.0.1:" + other_port},
      std::map<std::string, std::string>{});
  ASSERT_TRUE(WaitForFile(here + "/server.json"));
  local->Signal(SIGTERM);
  Finished local_done = local->Wait();
  EXPECT_NE(local_done.err.find("holds batches for the server at http://127.0.0.1:" + port),
            std::string::npos)
      << local_done.err;
  ASSERT_FALSE(std::filesystem::is_empty(here + "/spool"));
  Finished listed = RunCommand({kBinary, "jobs", "--data", here});
  EXPECT_EQ(listed.out.find("e2e-elsewhere"), std::string::npos) << listed.out;

  // While its server is away: it says so, and keeps the spool.
  Finished away = RunCommand({kBinary, "admin", "deliver", "--data", here, "--timeout", "1s"});
  EXPECT_EQ(away.exit_code, 1) << away.err;
  EXPECT_NE(away.err.find("still not delivered"), std::string::npos) << away.err;
  server = StartServer(port);
  Finished delivered = RunCommand({kBinary, "admin", "deliver", "--data", here});
  EXPECT_EQ(delivered.exit_code, 0) << delivered.err;
  EXPECT_NE(delivered.out.find("to http://127.0.0.1:" + port), std::string::npos)
      << delivered.out;
  EXPECT_TRUE(std::filesystem::is_empty(here + "/spool"));
  Finished described = RunCommand(Tw({"describe", "e2e-elsewhere", "--json"}));
  EXPECT_EQ(nlohmann::json::parse(described.out)["TrainingJobStatus"], "Completed")
      << described.out;
  Finished logs = RunCommand(Tw({"logs", "e2e-elsewhere"}));
  EXPECT_EQ(std::count(logs.out.begin(), logs.out.end(), '\n'), 12) << logs.out;
  server->Signal(SIGTERM);
  EXPECT_EQ(server->Wait().exit_code, 0);
}

// A server that answers the runner's check of the job's name and is gone
// before it takes the job record: the run stops its command and says so, and
// no server that comes later finds a record of a job that was not kept.
TEST_F(CliTest, ARunWhoseServerStopsBeforeTakingTheJobRecordSaysSoAndLeavesNoRecord) {
  const std::string port_file = File("port");
  Subprocess fake({"/usr/bin/python3", "-c", R"(
import http.server, sys
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # no job of that name yet
        body = b'{"error": {"code": "NotFound", "message": "no such job"}}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.asked = True
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
server.asked = False
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_port))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while not server.asked:
    server.handle_request()
server.server_close()
)", port_file},
                  {});
  ASSERT_TRUE(WaitForFile(port_file));
  std::string port;
  std::ifstream(port_file) >> port;
  Finished run = RunCommand(RunArgs({"--name", "e2e-never", "--endpoint", "http://127.0.0.1:" + port,
                                     "--delivery-timeout", "1s"},
                                    {"out:trained"}));
  EXPECT_EQ(fake.Wait().exit_code, 0);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("did not take the job record"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("the command was stopped, and nothing of it is kept"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("not delivered yet"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(data_ + "/spool") &&
               !std::filesystem::is_empty(data_ + "/spool"))
      << "a spooled record of a job that never ran";
}

// A job that ended while its server was away: its runner left the rest in
// its spool, and the next server delivers it to the rules and the reports
// like any data (they once started after the delivery and never saw the end).
TEST_F(CliTest, AJobThatEndedWhileItsServerWasAwayGetsItsRulesAndReportFromTheSpool) {
  const std::string port = std::to_string(FreePort());
  auto start_server = [&] { return StartServer(port); };
  std::unique_ptr<Subprocess> server = start_server();
  // The trainer runs under the server, which stops between its two halves.
  const std::string ready = File("ready"), go = File("go");
  Subprocess run(RunArgs({"--name", "e2e-spooled", "--delivery-timeout", "1s", "--metric",
                          "train:loss=\\bloss=([0-9.]+)"},
                         {"paced:10:100", "touch:" + ready, "wait-file:" + go, "paced:20:100"}),
                 {});
  ASSERT_TRUE(WaitForFile(ready));
  server->Signal(SIGTERM);
  ASSERT_EQ(server->Wait().exit_code, 0);
  std::ofstream(go).put('\n');
  Finished done = run.Wait();  // the job ends while no server takes its data
  EXPECT_NE(done.err.find("spool"), std::string::npos) << done.err;
  ASSERT_TRUE(std::filesystem::exists(data_ + "/spool") &&
              !std::filesystem::is_empty(data_ + "/spool")) << done.err;

  server = start_server();
  const std::string report = data_ + "/jobs/e2e-spooled/report.html";
  EXPECT_TRUE(WaitForFile(report)) << "no report for the job that ended from the spool";
  Finished json = RunCommand(Tw({"rules", "e2e-spooled", "--json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json rules = nlohmann::json::parse(json.out);
  ASSERT_FALSE(rules["rule_statuses"].empty()) << json.out;
  for (const nlohmann::json& status : rules["rule_statuses"]) {
    EXPECT_NE(status["status"], "InProgress") << status.dump();
  }
  Finished described = RunCommand(Tw({"describe", "e2e-spooled", "--json"}));
  EXPECT_EQ(nlohmann::json::parse(described.out)["TrainingJobStatus"], "Completed")
      << described.out;
  server->Signal(SIGTERM);
  Finished served = server->Wait();
  EXPECT_EQ(served.exit_code, 0);
  if (HasFailure()) std::printf("the runner said:\n%s\nthe server said:\n%s\n", done.err.c_str(), served.err.c_str());
}

}  // namespace
}  // namespace trainwatch
