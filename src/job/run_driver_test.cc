// The runner as a process (tests/e2e/run_driver.cc, `trainwatch run` minus the store):
// its exit status, its output, Ctrl-C and kill -9 sent to it.

#include <errno.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "capture/exit_status.h"
#include "capture/spawn.h"
#include "tests/e2e/fake_trainer.h"

namespace trainwatch::job {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kDriver = std::string(TW_BINARY_DIR) + "/src/job/tw_run_driver";

// A running driver: its pid and what it has written so far.
class Driver {
 public:
  explicit Driver(std::vector<std::string> args) {
    capture::SpawnOptions options;
    options.argv = {kDriver};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.stdin_fd = -1;
    options.kill_with_parent = true;
    auto spawned = capture::Spawn(options);
    EXPECT_TRUE(spawned.ok()) << spawned.status();
    if (!spawned.ok()) return;
    pid_ = spawned->pid;
    out_ = std::move(spawned->stdout_fd);
    err_ = std::move(spawned->stderr_fd);
  }
  ~Driver() {
    if (!reaped_ && pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }
  pid_t pid() const { return pid_; }

  // Reads until `text` has appeared on stdout (true) or 20 s passed.
  bool WaitForOutput(const std::string& text) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (stdout_.find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      if (!ReadSome(100)) return stdout_.find(text) != std::string::npos;
    }
    return true;
  }
  // Reads everything and reaps the driver.
  capture::ExitStatus Wait() {
    while (ReadSome(-1)) {
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return capture::ExitStatus::FromWaitStatus(status);
  }
  const std::string& out() const { return stdout_; }
  const std::string& err() const { return stderr_; }

 private:
  // One poll round; false once both streams are at end of file.
  bool ReadSome(int timeout_ms) {
    struct pollfd fds[2];
    int n = 0;
    std::string* sinks[2];
    capture::UniqueFd* owners[2];
    for (auto [fd, sink] : {std::pair{&out_, &stdout_}, std::pair{&err_, &stderr_}}) {
      if (!fd->valid()) continue;
      fds[n] = {fd->get(), POLLIN, 0};
      sinks[n] = sink;
      owners[n++] = fd;
    }
    if (n == 0) return false;
    if (::poll(fds, n, timeout_ms) <= 0) return true;
    char buf[65536];
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        owners[i]->reset();
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  capture::UniqueFd out_;
  capture::UniqueFd err_;
  std::string stdout_;
  std::string stderr_;
};

class RunDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tw-driver-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Args(std::vector<std::string> actions) {
    std::vector<std::string> args = {"--name", "driven", "--record", RecordPath(),
                                     "--metric", "train:loss=\\bloss=([0-9.]+)", "--"};
    for (const auto& a : testing::FakeTrainer({})) args.push_back(a);
    args.insert(args.end(), actions.begin(), actions.end());
    return args;
  }
  std::string RecordPath() const { return (dir_ / "record.txt").string(); }
  std::string Record() const {
    std::ifstream in(RecordPath());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  testing::DefaultSignals default_signals_;  // the driver inherits them
  fs::path dir_;
};

TEST_F(RunDriverTest, ExitsWithTheCommandsStatus) {
  struct Case {
    std::string action;
    int code;
  };
  for (const Case& c : {Case{"exit:7", 7}, Case{"kill:15", 143}, Case{"epochs:1", 0}}) {
    Driver driver(Args({c.action}));
    EXPECT_EQ(driver.Wait().ShellCode(), c.code) << c.action;
  }
}

TEST_F(RunDriverTest, ItsOutputIsTheCommandsOutputByteForByte) {
  const std::string out = std::string("a\rb\r\nc\xff\x00 no newline", 19);
  const std::string err = "progress 1\rprogress 2\rdone\n";
  std::ofstream(dir_ / "out", std::ios::binary) << out;
  std::ofstream(dir_ / "err", std::ios::binary) << err;
  Driver driver(Args({"cat-out:" + (dir_ / "out").string(), "cat-err:" + (dir_ / "err").string(),
                      "epochs:1"}));
  EXPECT_TRUE(driver.Wait().success());
  EXPECT_EQ(driver.out().substr(0, out.size()), out);
  EXPECT_THAT(driver.out(), ::testing::EndsWith("validation: val_loss=0.2167 val_acc=0.7833\n"));
  EXPECT_EQ(driver.err(), err);
  EXPECT_THAT(Record(), HasSubstr("status=Completed\n"));
  EXPECT_THAT(Record(), HasSubstr("final train:loss=0.1667\n"));
}

TEST_F(RunDriverTest, CommandThatCannotStartIsOneLineAndExitStatus2) {
  Driver driver({"--", "trainx", "--epochs", "3"});
  EXPECT_EQ(driver.Wait().ShellCode(), 2);
  EXPECT_EQ(driver.err(),
            "tw_run_driver: cannot start \"trainx\": No such file or directory (is it on "
            "PATH?)\n");
  EXPECT_EQ(driver.out(), "");
}

TEST_F(RunDriverTest, CtrlCToTheRunnerStopsTheJob) {
  Driver driver(Args({"out:ready\\n", "hang"}));
  ASSERT_TRUE(driver.WaitForOutput("ready\n"));
  ::kill(driver.pid(), SIGINT);  // what the terminal does on Ctrl-C
  EXPECT_EQ(driver.Wait().ShellCode(), 130);
  EXPECT_EQ(driver.err(), "interrupted\n");
  EXPECT_THAT(Record(), HasSubstr("status=Stopped\nsecondary=Stopped\n"));
  EXPECT_THAT(Record(), HasSubstr("transitions=Starting,Training,Stopping,Stopped\n"));
}

TEST_F(RunDriverTest, SigtermToTheRunnerStopsTheJobWithSigterm) {
  Driver driver(Args({"out:ready\\n", "hang"}));
  ASSERT_TRUE(driver.WaitForOutput("ready\n"));
  ::kill(driver.pid(), SIGTERM);
  EXPECT_EQ(driver.Wait().ShellCode(), 143);
  EXPECT_THAT(Record(), HasSubstr("status=Stopped\n"));
}

// The state letter of /proc/<pid>/stat ('T' stopped, 'Z' zombie); "" when gone.
std::string ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return "";
  return text.substr(text.rfind(')') + 2, 1);
}

// Polls (up to 5 s) until `pid`'s state satisfies `want`.
template <typename Want>
bool WaitForState(pid_t pid, Want want) {
  for (int i = 0; i < 500; ++i) {
    if (want(ProcessState(pid))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t TrainerPid(const std::string& out) {
  size_t at = out.find("pid=");
  return at == std::string::npos ? 0 : std::stoi(out.substr(at + 4));
}

TEST_F(RunDriverTest, CtrlZStopsTheTrainingProcessAndFgContinuesIt) {
  Driver driver(Args({"pid", "out:ready\\n", "hang"}));
  ASSERT_TRUE(driver.WaitForOutput("ready\n"));
  pid_t trainer = TrainerPid(driver.out());
  ASSERT_GT(trainer, 0);
  ::kill(driver.pid(), SIGTSTP);  // what the terminal does on Ctrl-Z
  int status = 0;
  ASSERT_EQ(::waitpid(driver.pid(), &status, WUNTRACED), driver.pid());
  EXPECT_TRUE(WIFSTOPPED(status));
  EXPECT_TRUE(WaitForState(trainer, [](const std::string& s) { return s == "T"; }));
  ::kill(driver.pid(), SIGCONT);  // fg
  EXPECT_TRUE(WaitForState(trainer, [](const std::string& s) { return s == "S" || s == "R"; }));
  ::kill(driver.pid(), SIGTERM);
  EXPECT_EQ(driver.Wait().ShellCode(), 143);
}

TEST_F(RunDriverTest, KilledRunnerTakesTheTrainingProcessWithIt) {
  Driver driver(Args({"pid", "out:ready\\n", "hang"}));
  ASSERT_TRUE(driver.WaitForOutput("ready\n"));
  pid_t trainer = TrainerPid(driver.out());
  ASSERT_GT(trainer, 0);
  ::kill(driver.pid(), SIGKILL);
  EXPECT_EQ(driver.Wait().signal, SIGKILL);
  // Gone, or a zombie until init reaps it.
  EXPECT_TRUE(WaitForState(trainer, [](const std::string& s) { return s.empty() || s == "Z"; }))
      << "the training process outlived its runner";
}

}  // namespace
}  // namespace trainwatch::job
