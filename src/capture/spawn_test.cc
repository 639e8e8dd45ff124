// Spawn and ExitStatus: start failures are clear errors before anything runs; the
// environment, working directory and exit statuses are what the command sees/gives.

#include "capture/spawn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "capture/exit_status.h"
#include "tests/e2e/fake_trainer.h"

namespace trainwatch::capture {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SpawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tw-spawn-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& text, fs::perms perms) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    fs::permissions(p, perms);
    return p.string();
  }

  // Runs the command to the end; returns its stdout and exit status.
  std::pair<std::string, ExitStatus> RunToEnd(SpawnOptions options) {
    auto spawned = Spawn(options);
    EXPECT_TRUE(spawned.ok()) << spawned.status();
    if (!spawned.ok()) return {};
    std::string out;
    char buf[4096];
    for (;;) {
      struct pollfd p = {spawned->stdout_fd.get(), POLLIN, 0};
      ::poll(&p, 1, -1);
      ssize_t n = ::read(spawned->stdout_fd.get(), buf, sizeof(buf));
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        break;
      }
    }
    int status = 0;
    ::waitpid(spawned->pid, &status, 0);
    return {out, ExitStatus::FromWaitStatus(status)};
  }

  fs::path dir_;
};

TEST_F(SpawnTest, CommandNotOnPathIsNotFoundWithAHint) {
  SpawnOptions options;
  options.argv = {"trainx-does-not-exist", "--epochs", "3"};
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(spawned.status().message(),
            "cannot start \"trainx-does-not-exist\": No such file or directory (is it on PATH?)");
}

TEST_F(SpawnTest, MissingPathIsNotFound) {
  SpawnOptions options;
  options.argv = {(dir_ / "nope.sh").string()};
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(spawned.status().message(), HasSubstr("No such file or directory"));
  EXPECT_THAT(spawned.status().message(), HasSubstr("nope.sh"));
}

TEST_F(SpawnTest, NotExecutableSaysHowToFixIt) {
  std::string script = WriteFile("train.py", "print('hi')\n", fs::perms::owner_read |
                                                                  fs::perms::owner_write);
  SpawnOptions options;
  options.argv = {script};
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(spawned.status().message(), HasSubstr("Permission denied (is it executable?"));
  EXPECT_THAT(spawned.status().message(), HasSubstr("chmod +x"));
}

TEST_F(SpawnTest, DirectoryIsNotAProgram) {
  SpawnOptions options;
  options.argv = {dir_.string()};
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_THAT(spawned.status().message(), HasSubstr("it is a directory, not a program"));
}

TEST_F(SpawnTest, MissingInterpreterIsNamed) {
  std::string script =
      WriteFile("train.sh", "#!/no/such/python9 -u\nprint(1)\n", fs::perms::owner_all);
  SpawnOptions options;
  options.argv = {script};
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(spawned.status().message(),
              HasSubstr("its interpreter \"/no/such/python9\" (named on its first line) was not "
                        "found"));
}

TEST_F(SpawnTest, BadWorkingDirectoryIsNamed) {
  SpawnOptions options;
  options.argv = {"/bin/true"};
  options.working_dir = (dir_ / "missing").string();
  auto spawned = Spawn(options);
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(spawned.status().message(), HasSubstr("cannot change to the working directory"));
  EXPECT_THAT(spawned.status().message(), HasSubstr("missing"));
}

TEST_F(SpawnTest, EmptyCommandAndBadEnvironmentNamesAreRefused) {
  SpawnOptions options;
  EXPECT_EQ(Spawn(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.argv = {"/bin/true"};
  options.env = {{"A=B", "1"}};
  EXPECT_EQ(Spawn(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SpawnTest, ScriptWithoutShebangRunsThroughSh) {
  std::string script = WriteFile("plain", "echo from-sh\n", fs::perms::owner_all);
  SpawnOptions options;
  options.argv = {script};
  auto [out, status] = RunToEnd(options);
  EXPECT_EQ(out, "from-sh\n");
  EXPECT_TRUE(status.success());
}

TEST_F(SpawnTest, EnvironmentGetsPythonUnbufferedAndExtras) {
  ::unsetenv("PYTHONUNBUFFERED");
  SpawnOptions options;
  options.argv = testing::FakeTrainer({"env:PYTHONUNBUFFERED", "env:TW_EXTRA", "cwd"});
  options.env = {{"TW_EXTRA", "one"}, {"TW_EXTRA", "two"}};
  options.working_dir = dir_.string();
  auto [out, status] = RunToEnd(options);
  EXPECT_EQ(out, "PYTHONUNBUFFERED=1\nTW_EXTRA=two\ncwd=" + fs::canonical(dir_).string() + "\n");
  EXPECT_TRUE(status.success());
}

TEST_F(SpawnTest, PathOfTheChildEnvironmentIsSearched) {
  WriteFile("mytool", "#!/bin/sh\necho found-on-path\n", fs::perms::owner_all);
  SpawnOptions options;
  options.argv = {"mytool"};
  options.env = {{"PATH", dir_.string() + ":/usr/bin:/bin"}};
  auto [out, status] = RunToEnd(options);
  EXPECT_EQ(out, "found-on-path\n");
}

TEST_F(SpawnTest, ChildRunsInItsOwnSessionAndInheritsNoOtherFds) {
  // A descriptor of ours without close-on-exec (as a library might leave one).
  int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 3);
  SpawnOptions options;
  std::string fd = std::to_string(leaked);
  options.argv = {"/bin/sh", "-c",
                  "echo pid=$$ pgid=$(cut -d' ' -f5 /proc/$$/stat) sid=$(cut -d' ' -f6 "
                  "/proc/$$/stat); [ -e /proc/$$/fd/" + fd + " ] && echo leaked || echo closed"};
  auto [out, status] = RunToEnd(options);
  ::close(leaked);
  std::string pid = out.substr(4, out.find(' ') - 4);
  EXPECT_EQ(out, "pid=" + pid + " pgid=" + pid + " sid=" + pid + "\nclosed\n");
}

TEST(ExitStatus, ShellCodeAndDescription) {
  ExitStatus code;
  code.exit_code = 3;
  EXPECT_EQ(code.ShellCode(), 3);
  EXPECT_EQ(code.Describe(), "exited with code 3");
  ExitStatus killed;
  killed.signal = SIGKILL;
  EXPECT_EQ(killed.ShellCode(), 137);
  EXPECT_EQ(killed.Describe(), "was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
}

}  // namespace
}  // namespace trainwatch::capture
