#include "job/runner_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "job/lifecycle.h"

namespace trainwatch::job {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A /proc tree with a boot id and processes: pid -> (state, start ticks).
class FakeProc {
 public:
  FakeProc() {
    root_ = fs::temp_directory_path() / ("tw-fakeproc-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys/kernel/random");
    SetBootId("boot-1");
  }
  ~FakeProc() { fs::remove_all(root_); }
  void SetBootId(const std::string& id) {
    std::ofstream(root_ / "sys/kernel/random/boot_id") << id << "\n";
  }
  void AddProcess(int pid, char state, uint64_t ticks) {
    fs::create_directories(root_ / std::to_string(pid));
    // comm with spaces and a ')' must not confuse the parser.
    std::ofstream(root_ / std::to_string(pid) / "stat")
        << pid << " (train (x) y) " << state
        << " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 " << ticks << " 99 100\n";
  }
  HostView View() const { return HostView{root_.string(), std::string("host-a")}; }

 private:
  fs::path root_;
};

model::RunnerIdentity Identity(int64_t pid, uint64_t ticks) {
  return model::RunnerIdentity{"host-a", "boot-1", pid, ticks};
}

TEST(RunnerIdentity, StatesFromAFakeProcTree) {
  FakeProc proc;
  proc.AddProcess(100, 'S', 5000);
  proc.AddProcess(200, 'Z', 6000);
  HostView host = proc.View();
  EXPECT_EQ(CheckRunner(Identity(100, 5000), host), RunnerState::kAlive);
  EXPECT_EQ(CheckRunner(Identity(100, 4999), host), RunnerState::kGone);   // pid reused
  EXPECT_EQ(CheckRunner(Identity(300, 5000), host), RunnerState::kGone);   // no such pid
  EXPECT_EQ(CheckRunner(Identity(200, 6000), host), RunnerState::kGone);   // exited (zombie)
  EXPECT_EQ(CheckRunner(Identity(0, 0), host), RunnerState::kGone);        // none recorded
  model::RunnerIdentity other_host = Identity(100, 5000);
  other_host.hostname = "host-b";
  EXPECT_EQ(CheckRunner(other_host, host), RunnerState::kOnOtherHost);
  EXPECT_TRUE(IsRunnerAlive(other_host, host));
  proc.SetBootId("boot-2");  // the machine restarted
  EXPECT_EQ(CheckRunner(Identity(100, 5000), host), RunnerState::kGone);
  EXPECT_FALSE(IsRunnerAlive(Identity(100, 5000), host));
}

TEST(RunnerIdentity, ThisProcessIsAliveAndADeadChildIsGone) {
  model::RunnerIdentity self = CurrentRunnerIdentity();
  EXPECT_EQ(self.pid, ::getpid());
  EXPECT_FALSE(self.boot_id.empty());
  EXPECT_GT(self.start_ticks, 0u);
  EXPECT_EQ(CheckRunner(self), RunnerState::kAlive);

  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto id = ProcessIdentity(child);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(CheckRunner(*id), RunnerState::kAlive);
  ::kill(child, SIGKILL);
  int status;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(CheckRunner(*id), RunnerState::kGone);
}

model::JobRecord RunningJob() {
  model::JobRecord job;
  job.name = "mnist-7";
  BeginJob(&job, 1000);
  EnterStatus(&job, model::JobStatus::kInProgress, model::SecondaryStatus::kTraining,
              kMessageTraining, 2000);
  job.runner = Identity(4242, 77);
  return job;
}

TEST(RunnerIdentity, RecordRunnerGoneFailsTheJobAndSaysWhy) {
  model::JobRecord job = RunningJob();
  RecordRunnerGone(&job, 9000);
  EXPECT_EQ(job.status, model::JobStatus::kFailed);
  EXPECT_EQ(job.secondary_status, model::SecondaryStatus::kFailed);
  EXPECT_THAT(job.failure_reason,
              StartsWith("InternalServerError: the trainwatch runner (pid 4242 on host-a) "
                         "stopped without finishing the job"));
  EXPECT_THAT(job.failure_reason, HasSubstr("last in status Training"));
  EXPECT_EQ(job.training_end_ms, 9000);
  EXPECT_EQ(job.transitions[1].end_ms, 9000);
  EXPECT_EQ(job.transitions.back().status, model::SecondaryStatus::kFailed);
  // Terminal jobs are left alone.
  model::JobRecord before = job;
  RecordRunnerGone(&job, 10000);
  EXPECT_EQ(job, before);
}

TEST(RunnerIdentity, ReconcileOnlyWhenTheRunnerIsGone) {
  FakeProc proc;
  proc.AddProcess(4242, 'S', 77);
  model::JobRecord job = RunningJob();
  EXPECT_FALSE(ReconcileRunner(&job, 5000, proc.View()));
  EXPECT_EQ(job.status, model::JobStatus::kInProgress);
  proc.SetBootId("boot-2");
  EXPECT_TRUE(ReconcileRunner(&job, 5000, proc.View()));
  EXPECT_EQ(job.status, model::JobStatus::kFailed);
}

TEST(RequestStop, RefusesJobsThatAreNotInProgress) {
  model::JobRecord job = RunningJob();
  job.status = model::JobStatus::kStopped;
  absl::Status status = RequestStop(job);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "The request was rejected because the training job is in status Stopped.");
}

TEST(RequestStop, GoneAndRemoteRunnersAreErrors) {
  FakeProc proc;
  model::JobRecord job = RunningJob();
  EXPECT_EQ(RequestStop(job, proc.View()).code(), absl::StatusCode::kNotFound);
  job.runner.hostname = "host-b";
  absl::Status remote = RequestStop(job, proc.View());
  EXPECT_EQ(remote.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(remote.message(), HasSubstr("runs on host host-b"));
}

TEST(RequestStop, SendsSigtermToALiveRunner) {
  pid_t child = ::fork();
  if (child == 0) {
    for (;;) ::pause();
  }
  model::JobRecord job = RunningJob();
  auto id = ProcessIdentity(child);
  ASSERT_TRUE(id.has_value());
  job.runner = *id;
  ASSERT_TRUE(RequestStop(job).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace trainwatch::job
