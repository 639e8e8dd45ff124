// JobRunner end to end: the fake trainer as the training command, the in-memory sink
// as the store. Statuses and transitions in order, times, FailureReason, max runtime,
// stop requests, Ctrl-C, final metrics, log events and datapoints (during the run).

#include "job/job_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "job/job_name.h"
#include "job/lifecycle.h"
#include "job/runner_identity.h"
#include "model/testing/memory_telemetry_sink.h"
#include "tests/e2e/fake_trainer.h"

namespace trainwatch::job {
namespace {

namespace fs = std::filesystem;
using model::JobStatus;
using model::SecondaryStatus;
using model::testing::MemoryTelemetrySink;
using testing::FakeTrainer;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kT0 = 1736942400000;  // 2025-01-15T12:00:00Z
const std::vector<model::MetricDefinition> kDefinitions = {
    {"train:loss", "\\bloss=([0-9.]+)"},
    {"validation:accuracy", "val_acc=([0-9.]+)"},
    {"never", "never=([0-9]+)"},
};

model::SeriesKey Key(const std::string& metric, const std::string& job = "test-job") {
  return *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", metric,
                               {{"TrainingJobName", job}}, "None");
}

// (status, secondary status, message of the last transition) of each record write.
struct Step {
  JobStatus status;
  SecondaryStatus secondary;
  std::string message;
  friend bool operator==(const Step&, const Step&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Step& s) {
    return os << model::JobStatusName(s.status) << "/" << model::SecondaryStatusName(s.secondary)
              << " \"" << s.message << "\"";
  }
};

std::vector<Step> Steps(const std::vector<model::JobRecord>& history) {
  std::vector<Step> out;
  for (const auto& r : history) {
    out.push_back({r.status, r.secondary_status, r.transitions.back().message});
  }
  return out;
}

std::vector<SecondaryStatus> Secondaries(const model::JobRecord& job) {
  std::vector<SecondaryStatus> out;
  for (const auto& t : job.transitions) out.push_back(t.status);
  return out;
}

class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tw-job-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunSpec Spec(std::initializer_list<std::string> actions) {
    RunSpec spec;
    spec.name = "test-job";
    spec.command = FakeTrainer(actions);
    spec.metric_definitions = kDefinitions;
    spec.stdout_fd = -1;
    spec.stderr_fd = -1;
    spec.stdin_fd = -1;
    spec.handle_signals = false;
    spec.stop_grace_ms = 5000;
    spec.drain_after_exit_ms = 200;
    return spec;
  }

  absl::StatusOr<RunResult> RunJob(RunSpec spec, JobRunnerOptions options = {}) {
    auto runner = JobRunner::Create(std::move(spec), &sink_, options);
    if (!runner.ok()) return runner.status();
    return (*runner)->Run();
  }

  // Runs `runner` on another thread.
  std::future<absl::StatusOr<RunResult>> RunAsync(JobRunner* runner) {
    return std::async(std::launch::async, [runner] { return runner->Run(); });
  }

  // The result of RunAsync; after 60 s the job is stopped (the test fails rather than
  // hanging).
  absl::StatusOr<RunResult> Await(std::future<absl::StatusOr<RunResult>>& done,
                                  JobRunner* runner) {
    if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << "the job did not end within 60 s";
      runner->RequestStop();
    }
    return done.get();
  }

  bool WaitForStatus(const std::string& name, JobStatus status) {
    return sink_.WaitUntil([&] {
      auto job = sink_.Job(name);
      return job && job->status == status;
    });
  }

  bool WaitForEvent(const std::string& message) {
    return sink_.WaitUntil([&] {
      for (const auto& stream : sink_.Streams()) {
        for (const auto& e : sink_.Events(stream)) {
          if (e.message == message) return true;
        }
      }
      return false;
    });
  }

  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  fs::path dir_;
  MemoryTelemetrySink sink_;
};

TEST_F(JobRunnerTest, CompletedJobGoesThroughEveryStatusInOrder) {
  auto result = RunJob(Spec({"epochs:2"}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  const model::JobRecord& job = result->job;
  EXPECT_EQ(job.status, JobStatus::kCompleted);
  EXPECT_EQ(job.secondary_status, SecondaryStatus::kCompleted);
  EXPECT_EQ(sink_.Job("test-job"), job);
  EXPECT_THAT(Steps(sink_.JobHistory("test-job")),
              ElementsAre(Step{JobStatus::kInProgress, SecondaryStatus::kStarting,
                               "Starting the training job."},
                          Step{JobStatus::kInProgress, SecondaryStatus::kStarting,
                               "Preparing the instances for training."},
                          Step{JobStatus::kInProgress, SecondaryStatus::kTraining,
                               "Training image download completed. Training in progress."},
                          Step{JobStatus::kInProgress, SecondaryStatus::kUploading,
                               "Uploading generated training model"},
                          Step{JobStatus::kCompleted, SecondaryStatus::kCompleted,
                               "Training job completed"}));
  EXPECT_THAT(Secondaries(job), ElementsAre(SecondaryStatus::kStarting, SecondaryStatus::kTraining,
                                            SecondaryStatus::kUploading,
                                            SecondaryStatus::kCompleted));
  // Times: each transition ends where the next starts; the last has EndTime = StartTime.
  for (size_t i = 0; i + 1 < job.transitions.size(); ++i) {
    EXPECT_EQ(job.transitions[i].end_ms, job.transitions[i + 1].start_ms);
  }
  EXPECT_EQ(job.transitions.back().end_ms, job.transitions.back().start_ms);
  ASSERT_TRUE(job.training_start_ms && job.training_end_ms);
  EXPECT_LE(job.creation_ms, *job.training_start_ms);
  EXPECT_LE(*job.training_start_ms, *job.training_end_ms);
  EXPECT_EQ(job.last_modified_ms, *job.training_end_ms);
  EXPECT_GE(TrainingTimeSeconds(job), 1);
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_TRUE(job.failure_reason.empty());
  EXPECT_EQ(job.arn, "arn:aws:sagemaker:us-east-1:000000000000:training-job/test-job");
  EXPECT_EQ(job.runner, CurrentRunnerIdentity());
  EXPECT_EQ(job.metric_definitions, kDefinitions);
  // Every record write carries the runner.
  for (const auto& r : sink_.JobHistory("test-job")) EXPECT_EQ(r.runner.pid, ::getpid());
}

TEST_F(JobRunnerTest, FinalMetricsAreTheLastValuesInDefinitionOrder) {
  auto result = RunJob(Spec({"epochs:2"}));
  ASSERT_TRUE(result.ok());
  const auto& final_metrics = result->job.final_metrics;
  ASSERT_EQ(final_metrics.size(), 2u);  // "never" produced nothing
  EXPECT_EQ(final_metrics[0].name, "train:loss");
  EXPECT_DOUBLE_EQ(final_metrics[0].value, 0.1111);  // epoch 2, step 2: 1/9
  EXPECT_EQ(final_metrics[1].name, "validation:accuracy");
  EXPECT_DOUBLE_EQ(final_metrics[1].value, 0.8389);
  // The timestamp is the read time of the line the value came from.
  auto events = sink_.Events({"/aws/sagemaker/TrainingJobs", result->job.log_stream});
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(final_metrics[1].t_ms, events.back().t_ms);
  // Only the terminal record has them (spec/aws-api.md §5.4).
  for (const auto& r : sink_.JobHistory("test-job")) {
    if (!model::IsTerminal(r.status)) {
      EXPECT_TRUE(r.final_metrics.empty());
    }
  }
  EXPECT_EQ(result->metrics[0].values, 6u);
  EXPECT_EQ(result->metrics[2].values, 0u);
}

TEST_F(JobRunnerTest, EveryLineIsALogEventInTheJobsStream) {
  util::FakeClock clock(kT0);
  JobRunnerOptions options;
  options.clock = &clock;
  auto result = RunJob(Spec({"epochs:1", "err:warning: slow\\n", "out:last"}), options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->job.log_stream, "test-job/algo-1-1736942400");
  EXPECT_THAT(sink_.Streams(),
              ElementsAre(model::LogStreamId{"/aws/sagemaker/TrainingJobs",
                                             "test-job/algo-1-1736942400"}));
  std::vector<std::string> messages;
  for (const auto& e : sink_.Events(sink_.Streams()[0])) {
    messages.push_back(e.message);
    EXPECT_EQ(e.t_ms, kT0);
  }
  EXPECT_THAT(messages, ElementsAre("epoch=1 step=0 loss=0.2500 accuracy=0.7500",
                                    "epoch=1 step=1 loss=0.2000 accuracy=0.8000",
                                    "epoch=1 step=2 loss=0.1667 accuracy=0.8333",
                                    "validation: val_loss=0.2167 val_acc=0.7833",
                                    "warning: slow", "last"));
}

TEST_F(JobRunnerTest, DatapointsHaveSageMakersSeriesKeys) {
  util::FakeClock clock(kT0);
  JobRunnerOptions options;
  options.clock = &clock;
  auto result = RunJob(Spec({"epochs:2"}), options);
  ASSERT_TRUE(result.ok());
  EXPECT_THAT(sink_.Keys(), ElementsAre(Key("train:loss"), Key("validation:accuracy")));
  auto loss = sink_.Samples(Key("train:loss"));
  ASSERT_EQ(loss.size(), 6u);
  EXPECT_EQ(loss[0], (model::Sample{kT0, 0.25}));
  EXPECT_EQ(sink_.StorageResolution(Key("train:loss")), 1);
  EXPECT_EQ(Key("train:loss").unit, "None");
}

TEST_F(JobRunnerTest, DatapointsAndLogsAreQueryableWhileTheJobRuns) {
  std::string go = Path("go");
  auto runner = JobRunner::Create(Spec({"out:loss=0.5\\n", "wait-file:" + go}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  EXPECT_TRUE(sink_.WaitUntil([&] { return sink_.Samples(Key("train:loss")).size() == 1; }));
  EXPECT_TRUE(WaitForEvent("loss=0.5"));
  // The process is still running: the job is InProgress/Training.
  auto job = sink_.Job("test-job");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->status, JobStatus::kInProgress);
  EXPECT_EQ(job->secondary_status, SecondaryStatus::kTraining);
  EXPECT_EQ((*runner)->Snapshot().secondary_status, SecondaryStatus::kTraining);
  std::ofstream(go).close();
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->job.status, JobStatus::kCompleted);
}

TEST_F(JobRunnerTest, CrashFailsWithTheTracebacksLastLine) {
  auto result = RunJob(Spec({"epochs:1", "crash"}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 1);
  const model::JobRecord& job = result->job;
  EXPECT_EQ(job.status, JobStatus::kFailed);
  EXPECT_EQ(job.secondary_status, SecondaryStatus::kFailed);
  EXPECT_THAT(job.failure_reason,
              StartsWith("AlgorithmError: the training command exited with code 1. Last lines "
                         "of stderr:\nTraceback (most recent call last):\n"));
  EXPECT_THAT(job.failure_reason,
              EndsWith("\nValueError: learning rate must be positive, got -0.1"));
  EXPECT_LE(job.failure_reason.size(), 1024u);
  EXPECT_EQ(job.transitions.back().message, job.failure_reason);
  EXPECT_THAT(Secondaries(job), ElementsAre(SecondaryStatus::kStarting,
                                            SecondaryStatus::kTraining, SecondaryStatus::kFailed));
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_EQ(job.final_metrics.size(), 2u);  // what the job printed before it failed
  ASSERT_TRUE(job.training_end_ms.has_value());
}

TEST_F(JobRunnerTest, KilledBySignalFailsAndExitsWith128PlusSignal) {
  auto result = RunJob(Spec({"out:about to die\\n", "kill:9"}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 137);
  EXPECT_EQ(result->job.exit_signal, 9);
  EXPECT_FALSE(result->job.exit_code.has_value());
  EXPECT_THAT(result->job.failure_reason,
              StartsWith("AlgorithmError: the training command was killed by signal 9 (SIGKILL)"));
  EXPECT_THAT(result->job.failure_reason, EndsWith("Last lines of output:\nabout to die"));
}

TEST_F(JobRunnerTest, MaxRuntimeSendsSigtermThenSigkillAfterTheGracePeriod) {
  util::FakeClock clock(kT0);
  JobRunnerOptions options;
  options.clock = &clock;
  RunSpec spec = Spec({"ignore-term", "out:ready\\n", "hang"});
  spec.max_runtime_s = 10;
  spec.stop_grace_ms = 5000;
  auto runner = JobRunner::Create(spec, &sink_, options);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  clock.AdvanceMs(10000);
  ASSERT_TRUE(WaitForStatus("test-job", JobStatus::kStopping));
  auto stopping = sink_.Job("test-job");
  EXPECT_EQ(stopping->secondary_status, SecondaryStatus::kMaxRuntimeExceeded);
  EXPECT_EQ(stopping->transitions.back().message, "Training job exceeded MaxRuntimeInSeconds");
  // The program ignores SIGTERM: it is still running until the grace period ends.
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  clock.AdvanceMs(5000);
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 137);
  const model::JobRecord& job = result->job;
  EXPECT_EQ(job.status, JobStatus::kStopped);
  EXPECT_EQ(job.secondary_status, SecondaryStatus::kMaxRuntimeExceeded);
  EXPECT_THAT(Secondaries(job), ElementsAre(SecondaryStatus::kStarting, SecondaryStatus::kTraining,
                                            SecondaryStatus::kMaxRuntimeExceeded));
  EXPECT_EQ(job.transitions.back().start_ms, kT0 + 10000);
  EXPECT_EQ(job.transitions.back().end_ms, kT0 + 10000);
  EXPECT_EQ(job.training_start_ms, kT0);
  EXPECT_EQ(job.training_end_ms, kT0 + 15000);
  EXPECT_EQ(TrainingTimeSeconds(job), 15);
  EXPECT_TRUE(job.failure_reason.empty());
}

TEST_F(JobRunnerTest, MaxRuntimeWithAProgramThatHonoursSigterm) {
  util::FakeClock clock(kT0);
  JobRunnerOptions options;
  options.clock = &clock;
  RunSpec spec = Spec({"out:ready\\n", "hang"});
  spec.max_runtime_s = 60;
  auto runner = JobRunner::Create(spec, &sink_, options);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  clock.AdvanceMs(60000);
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 143);
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
  EXPECT_EQ(result->job.secondary_status, SecondaryStatus::kMaxRuntimeExceeded);
  EXPECT_THAT(Steps(sink_.JobHistory("test-job")).back(),
              (Step{JobStatus::kStopped, SecondaryStatus::kMaxRuntimeExceeded,
                    "Training job exceeded MaxRuntimeInSeconds"}));
}

TEST_F(JobRunnerTest, StopRequestStopsTheJob) {
  auto runner = JobRunner::Create(Spec({"out:ready\\n", "hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  (*runner)->RequestStop();
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 143);
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
  EXPECT_THAT(Secondaries(result->job),
              ElementsAre(SecondaryStatus::kStarting, SecondaryStatus::kTraining,
                          SecondaryStatus::kStopping, SecondaryStatus::kStopped));
  auto steps = Steps(sink_.JobHistory("test-job"));
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[steps.size() - 2],
            (Step{JobStatus::kStopping, SecondaryStatus::kStopping, "Stopping the training job"}));
  EXPECT_EQ(steps.back(),
            (Step{JobStatus::kStopped, SecondaryStatus::kStopped, "Training job stopped"}));
}

TEST_F(JobRunnerTest, StopRequestedBeforeTheStartStopsAtOnce) {
  auto runner = JobRunner::Create(Spec({"hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  (*runner)->RequestStop();
  auto result = (*runner)->Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
}

TEST_F(JobRunnerTest, StoppingKillsWhatTheProgramLeftInItsGroup) {
  // The orphan ignores SIGTERM (inherited); the program itself dies of it.
  auto runner = JobRunner::Create(
      Spec({"ignore-term", "orphan:60000", "default-term", "out:ready\\n", "hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  pid_t orphan = 0;
  for (const auto& e : sink_.Events(sink_.Streams()[0])) {
    if (e.message.rfind("orphan pid=", 0) == 0) orphan = std::stoi(e.message.substr(11));
  }
  ASSERT_GT(orphan, 0);
  (*runner)->RequestStop();
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 143);
  auto dead = [orphan] {
    std::ifstream stat("/proc/" + std::to_string(orphan) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return true;
    return text.substr(text.rfind(')') + 2, 1) == "Z";
  };
  for (int i = 0; i < 500 && !dead(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(dead());
}

TEST_F(JobRunnerTest, OneMegabyteLineIsSplitIntoEventsAndStillMatched) {
  auto result = RunJob(Spec({"bigline:1000000"}));
  ASSERT_TRUE(result.ok());
  auto events = sink_.Events({"/aws/sagemaker/TrainingJobs", result->job.log_stream});
  ASSERT_EQ(events.size(), 4u);  // 1,000,000 bytes / 262,118 per event
  std::string joined;
  for (const auto& e : events) {
    EXPECT_LE(e.message.size(), model::kMaxLogEventBytes);
    EXPECT_EQ(e.t_ms, events[0].t_ms);
    joined += e.message;
  }
  EXPECT_EQ(joined.size(), 1000000u);
  EXPECT_THAT(joined, EndsWith("xx loss=0.25"));
  EXPECT_EQ(sink_.Samples(Key("train:loss")), (std::vector<model::Sample>{{events[0].t_ms, 0.25}}));
}

TEST_F(JobRunnerTest, RawBytesProgressBarsAndAMissingLastNewlineAreKept) {
  auto result = RunJob(Spec({"binary", "bar:2", "out:tail without newline"}));
  ASSERT_TRUE(result.ok());
  std::vector<std::string> messages;
  for (const auto& e : sink_.Events({"/aws/sagemaker/TrainingJobs", result->job.log_stream})) {
    messages.push_back(e.message);
  }
  EXPECT_THAT(messages,
              ElementsAre(std::string("bytes \xff\xfe \xc3\x28 nul=\0 end loss=0.5", 30),
                          // tqdm starts each redraw with "\r": the first ends an empty line.
                          "", "  0%|          | 0/2", " 50%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                                                  "\xe2\x96\x88\xe2\x96\x88     | 1/2",
                          "100%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                          "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 2/2",
                          "tail without newline"));
  EXPECT_EQ(sink_.Samples(Key("train:loss")).size(), 1u);  // from the non-UTF-8 line
}

TEST_F(JobRunnerTest, ExistingNameIsAnErrorAndNothingRuns) {
  model::JobRecord existing;
  existing.name = "Test-Job";
  BeginJob(&existing, kT0);
  ASSERT_TRUE(sink_.CreateJob(existing).ok());
  std::string marker = Path("ran");
  auto result = RunJob(Spec({"touch:" + marker}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(result.status().message(),
            "a training job named \"Test-Job\" already exists (InProgress, created "
            "2025-01-15T12:00:00Z): choose another --name, or leave --name out to get a new "
            "generated one");
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(sink_.JobHistory("test-job").size(), 1u);
  EXPECT_TRUE(sink_.Streams().empty());
}

TEST_F(JobRunnerTest, CommandThatCannotStartIsAnErrorAndNothingIsWritten) {
  RunSpec spec = Spec({});
  spec.command = {"trainx", "--epochs", "3"};
  auto result = RunJob(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "cannot start \"trainx\": No such file or directory (is it on PATH?)");
  EXPECT_FALSE(sink_.Job("test-job").has_value());
  EXPECT_TRUE(sink_.Streams().empty());
}

TEST_F(JobRunnerTest, InvalidSpecIsRefusedBeforeAnythingRuns) {
  RunSpec spec = Spec({"out:x\\n"});
  spec.metric_definitions = {{"train:loss", "loss=[0-9.]+"}};  // no capture group
  auto runner = JobRunner::Create(spec, &sink_);
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(runner.status().message(), HasSubstr("\"train:loss\""));

  spec = Spec({"out:x\\n"});
  spec.name = "my_job";
  EXPECT_THAT(std::string(JobRunner::Create(spec, &sink_).status().message()),
              StartsWith("job name \"my_job\" is not valid"));
  spec = Spec({"out:x\\n"});
  spec.max_runtime_s = 0;
  EXPECT_EQ(JobRunner::Create(spec, &sink_).status().code(), absl::StatusCode::kInvalidArgument);
  spec = Spec({});
  spec.command.clear();
  EXPECT_THAT(std::string(JobRunner::Create(spec, &sink_).status().message()),
              StartsWith("no command to run"));
  EXPECT_FALSE(sink_.Job("test-job").has_value());
}

TEST_F(JobRunnerTest, GeneratedNameAvoidsAnExistingOne) {
  util::FakeClock clock(kT0);
  JobRunnerOptions options;
  options.clock = &clock;
  RunSpec spec = Spec({"epochs:1"});
  spec.name.clear();
  model::JobRecord taken;
  taken.name = GenerateJobName(spec.command, kT0);
  ASSERT_EQ(taken.name, "fake-trainer-2025-01-15-12-00-00-000");
  ASSERT_TRUE(sink_.CreateJob(taken).ok());
  auto result = RunJob(spec, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->job.name, "fake-trainer-2025-01-15-12-00-00-000-2");
  // The datapoints carry the name the job got.
  EXPECT_EQ(sink_.Samples(Key("train:loss", result->job.name)).size(), 3u);
}

class RecordingObserver : public JobObserver {
 public:
  void OnTrainingStarted(const model::JobRecord& job, pid_t pid) override {
    calls.push_back("started " + std::string(model::SecondaryStatusName(job.secondary_status)));
    started_pid = pid;
  }
  void OnTrainingExited(const model::JobRecord&, const capture::ExitStatus& status) override {
    calls.push_back("exited " + status.Describe());
  }
  void OnJobWritten(const model::JobRecord&) override { ++writes; }
  std::vector<std::string> calls;
  pid_t started_pid = 0;
  int writes = 0;
};

TEST_F(JobRunnerTest, ObserversHearOfTheProcessAndEveryWrite) {
  auto runner = JobRunner::Create(Spec({"exit:3"}), &sink_);
  ASSERT_TRUE(runner.ok());
  RecordingObserver observer;
  (*runner)->AddObserver(&observer);
  auto result = (*runner)->Run();
  ASSERT_TRUE(result.ok());
  EXPECT_THAT(observer.calls, ElementsAre("started Training", "exited exited with code 3"));
  EXPECT_GT(observer.started_pid, 0);
  EXPECT_EQ(observer.writes, static_cast<int>(sink_.JobHistory("test-job").size()));
}

TEST_F(JobRunnerTest, SlowSinkLosesNothing) {
  sink_.SetLatency(std::chrono::milliseconds(3), std::chrono::milliseconds(3));
  auto result = RunJob(Spec({"epochs:40"}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(sink_.Events({"/aws/sagemaker/TrainingJobs", result->job.log_stream}).size(), 160u);
  EXPECT_EQ(sink_.Samples(Key("train:loss")).size(), 120u);
  EXPECT_EQ(result->telemetry.events_dropped + result->telemetry.samples_dropped, 0u);
}

TEST_F(JobRunnerTest, RecordWriteFailuresAreRetriedAndTheJobGoesOn) {
  sink_.FailNextUpdates(2, absl::UnavailableError("disk busy"));
  auto result = RunJob(Spec({"epochs:1"}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->record_write_failures, 0u);
  EXPECT_EQ(sink_.Job("test-job")->status, JobStatus::kCompleted);
}

class JobRunnerSignalTest : public JobRunnerTest {
 protected:
  testing::DefaultSignals default_signals_;
  RunSpec SignalSpec(std::initializer_list<std::string> actions) {
    RunSpec spec = Spec(actions);
    spec.handle_signals = true;
    return spec;
  }
};

TEST_F(JobRunnerSignalTest, CtrlCStopsTheJobAndExitsWithTheProgramsStatus) {
  auto runner = JobRunner::Create(SignalSpec({"out:ready\\n", "hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  ::kill(::getpid(), SIGINT);
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 130);  // the program's KeyboardInterrupt exit
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
  EXPECT_TRUE(WaitForEvent("interrupted"));
}

TEST_F(JobRunnerSignalTest, SecondCtrlCKills) {
  auto runner = JobRunner::Create(SignalSpec({"ignore-int", "out:ready\\n", "hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  ::kill(::getpid(), SIGINT);
  ASSERT_TRUE(WaitForStatus("test-job", JobStatus::kStopping));
  ::kill(::getpid(), SIGINT);
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 137);
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
}

// A sink whose GetJob (the name check, after signal handling is set up and before the
// command starts) delivers Ctrl-C to this process.
class InterruptingSink : public MemoryTelemetrySink {
 public:
  absl::StatusOr<std::optional<model::JobRecord>> GetJob(std::string_view name) override {
    ::kill(::getpid(), SIGINT);
    return MemoryTelemetrySink::GetJob(name);
  }
};

TEST_F(JobRunnerSignalTest, CtrlCBeforeTheCommandStartsRunsNothing) {
  InterruptingSink sink;
  std::string marker = Path("ran");
  auto runner = JobRunner::Create(SignalSpec({"touch:" + marker}), &sink);
  ASSERT_TRUE(runner.ok());
  auto result = (*runner)->Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(sink.Job("test-job").has_value());
}

TEST_F(JobRunnerSignalTest, SigtermToTheRunnerIsAStopRequest) {
  auto runner = JobRunner::Create(SignalSpec({"out:ready\\n", "hang"}), &sink_);
  ASSERT_TRUE(runner.ok());
  auto done = RunAsync(runner->get());
  ASSERT_TRUE(WaitForEvent("ready"));
  // What `trainwatch stop` does from another terminal.
  ASSERT_TRUE(RequestStop(*sink_.Job("test-job")).ok());
  auto result = Await(done, runner->get());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 143);
  EXPECT_EQ(result->job.status, JobStatus::kStopped);
  EXPECT_EQ(result->job.secondary_status, SecondaryStatus::kStopped);
}

}  // namespace
}  // namespace trainwatch::job
