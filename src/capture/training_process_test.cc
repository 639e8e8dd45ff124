// TrainingProcess end to end with the fake trainer: byte-exact passthrough over pipes
// and ptys, lines per spec/extraction.md, exit statuses, Ctrl-C, stop requests,
// processes left behind, and back-pressure instead of loss.

#include "capture/training_process.h"

#include <errno.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "capture/line_splitter.h"
#include "tests/e2e/fake_trainer.h"
#include "util/clock.h"

namespace trainwatch::capture {
namespace {

namespace fs = std::filesystem;
using model::OutputStream;
using testing::FakeTrainer;
using testing::LineCollector;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Event = TrainingProcess::Event;

// Reads a blocking fd until end of file (or EIO from a pty master) on its own thread.
class FdReader {
 public:
  explicit FdReader(int fd) : fd_(fd), thread_([this] { Loop(); }) {}
  std::string Join() {
    thread_.join();
    return data_;
  }

 private:
  void Loop() {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n > 0) {
        data_.append(buf, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;
      }
    }
  }
  int fd_;
  std::string data_;
  std::thread thread_;
};

// Waits until the process exits, answering nothing else; returns Finish(). After
// 60 s the group is killed (the test fails on its status rather than hanging).
ExitStatus RunToExit(TrainingProcess& process) {
  for (int i = 0; process.Wait(1000) != Event::kExited; ++i) {
    if (i == 60) {
      ADD_FAILURE() << "the process did not exit within 60 s";
      process.SignalGroup(SIGKILL);
    }
  }
  return process.Finish();
}

std::vector<std::string> SplitAll(std::string_view bytes) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  splitter.Feed(bytes, on_line);
  splitter.Finish(on_line);
  return lines;
}

// What the trainer writes in the passthrough tests: partial lines, "\r" redraws,
// "\r\n", invalid UTF-8, NUL, ESC sequences, a 200 KB line, and no final newline.
std::string TrickyBytes(char tag) {
  std::string s = "epoch 1 loss=0.5\n";
  s += "progress 10%\rprogress 20%\rprogress 30%\r\n";
  s += std::string("colour \x1b[31mred\x1b[0m\n");
  s += std::string("bad utf8 \xff\xfe\xc3\x28 nul=") + '\0' + " end\n";
  s += std::string(200 * 1024, tag) + "\n";
  s += "windows line\r\n";
  s += "no newline at the end ";
  s += tag;
  return s;
}

class TrainingProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tw-tp-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  TrainingProcessOptions Options(std::vector<std::string> argv) {
    TrainingProcessOptions options;
    options.argv = std::move(argv);
    options.passthrough_stdout_fd = -1;
    options.passthrough_stderr_fd = -1;
    options.stdin_fd = -1;
    return options;
  }

  fs::path dir_;
  LineCollector lines_;
};

TEST_F(TrainingProcessTest, PipePassthroughIsByteExactAndLinesFollowTheSpec) {
  const std::string out_bytes = TrickyBytes('o');
  const std::string err_bytes = TrickyBytes('e');
  int out_pipe[2], err_pipe[2];
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  FdReader out_reader(out_pipe[0]);
  FdReader err_reader(err_pipe[0]);

  auto options = Options(FakeTrainer({"cat-out:" + WriteFile("out", out_bytes),
                                      "cat-err:" + WriteFile("err", err_bytes), "isatty"}));
  options.passthrough_stdout_fd = out_pipe[1];
  options.passthrough_stderr_fd = err_pipe[1];
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_EQ((*process)->stdout_kind(), OutputKind::kPipe);
  EXPECT_EQ((*process)->stderr_kind(), OutputKind::kPipe);
  ExitStatus status = RunToExit(**process);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  EXPECT_TRUE(status.success()) << status.Describe();

  const std::string tty_line = "stdout_tty=0 stderr_tty=0 cols=0 rows=0\n";
  // The unterminated last segment of stdout is continued by the isatty line.
  EXPECT_EQ(out_reader.Join(), out_bytes + tty_line);
  EXPECT_EQ(err_reader.Join(), err_bytes);
  EXPECT_EQ(lines_.Texts(OutputStream::kStdout), SplitAll(out_bytes + tty_line));
  EXPECT_EQ(lines_.Texts(OutputStream::kStderr), SplitAll(err_bytes));
  auto stats = (*process)->stats();
  EXPECT_EQ(stats.bytes[0], out_bytes.size() + tty_line.size());
  EXPECT_EQ(stats.bytes[1], err_bytes.size());
  EXPECT_EQ(stats.passthrough_failures, 0u);
}

TEST_F(TrainingProcessTest, PtyPassthroughIsByteExactAndTheProgramSeesATerminal) {
  // Our "terminal": a pty in raw mode, 100 columns by 30 rows.
  int master = -1, slave = -1;
  struct winsize ws = {30, 100, 0, 0};
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  struct termios tio;
  ASSERT_EQ(::tcgetattr(slave, &tio), 0);
  ::cfmakeraw(&tio);
  ASSERT_EQ(::tcsetattr(slave, TCSANOW, &tio), 0);
  FdReader terminal(master);
  int err_pipe[2];
  ASSERT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  FdReader err_reader(err_pipe[0]);

  const std::string out_bytes = TrickyBytes('t');
  auto options =
      Options(FakeTrainer({"isatty", "cat-out:" + WriteFile("out", out_bytes), "err:e\\n"}));
  options.passthrough_stdout_fd = slave;
  options.passthrough_stderr_fd = err_pipe[1];  // not a terminal: a pipe for stderr
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_EQ((*process)->stdout_kind(), OutputKind::kPty);
  EXPECT_EQ((*process)->stderr_kind(), OutputKind::kPipe);
  ExitStatus status = RunToExit(**process);
  ::close(slave);
  ::close(err_pipe[1]);
  EXPECT_TRUE(status.success());

  const std::string tty_line = "stdout_tty=1 stderr_tty=0 cols=100 rows=30\n";
  EXPECT_EQ(terminal.Join(), tty_line + out_bytes);
  EXPECT_EQ(err_reader.Join(), "e\n");
  EXPECT_EQ(lines_.Texts(OutputStream::kStdout), SplitAll(tty_line + out_bytes));
  ::close(master);
}

TEST_F(TrainingProcessTest, LostTerminalStopsThePassthroughNotTheCapture) {
  int out_pipe[2];
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  ::close(out_pipe[0]);  // like `trainwatch run ... | head` after head exited
  auto options = Options(FakeTrainer({"epochs:2"}));
  options.passthrough_stdout_fd = out_pipe[1];
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok());
  EXPECT_TRUE(RunToExit(**process).success());  // no SIGPIPE for us or the program
  ::close(out_pipe[1]);
  EXPECT_EQ(lines_.Texts(OutputStream::kStdout).size(), 8u);
  EXPECT_EQ((*process)->stats().passthrough_failures, 1u);
}

TEST_F(TrainingProcessTest, ForcedPtysWithoutPassthroughStillCapture) {
  auto options = Options(FakeTrainer({"isatty", "err:to stderr\\n"}));
  options.output_mode = OutputMode::kPty;
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_TRUE(RunToExit(**process).success());
  EXPECT_THAT(lines_.Texts(OutputStream::kStdout),
              ElementsAre("stdout_tty=1 stderr_tty=1 cols=80 rows=24"));
  EXPECT_THAT(lines_.Texts(OutputStream::kStderr), ElementsAre("to stderr"));
}

TEST_F(TrainingProcessTest, ExitStatusIsTheProgramsOwn) {
  struct Case {
    std::string action;
    int shell_code;
  };
  for (const Case& c : {Case{"exit:3", 3}, Case{"kill:9", 137}, Case{"kill:15", 143},
                        Case{"crash", 1}, Case{"out:done\\n", 0}}) {
    auto process = TrainingProcess::Start(Options(FakeTrainer({c.action})), [](auto&) {});
    ASSERT_TRUE(process.ok()) << process.status();
    EXPECT_EQ(RunToExit(**process).ShellCode(), c.shell_code) << c.action;
  }
}

TEST_F(TrainingProcessTest, StartFailureIsAnErrorAndNothingRuns) {
  auto process = TrainingProcess::Start(Options({"trainx"}), lines_.Handler());
  ASSERT_FALSE(process.ok());
  EXPECT_EQ(process.status().message(),
            "cannot start \"trainx\": No such file or directory (is it on PATH?)");
  EXPECT_TRUE(lines_.lines().empty());
}

TEST_F(TrainingProcessTest, LinesCarryTheTimeTheirBytesWereRead) {
  util::FakeClock clock(1736942400123);
  auto options = Options(FakeTrainer({"out:a\\nb\\n", "err:c"}));
  options.clock = &clock;
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok());
  RunToExit(**process);
  auto lines = lines_.lines();
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_EQ(l.t_ms, 1736942400123) << l.text;
}

TEST_F(TrainingProcessTest, HugeLinesBinaryAndAMissingLastNewlineAreKept) {
  auto process = TrainingProcess::Start(
      Options(FakeTrainer({"bigline:1000000", "binary", "out:last line without newline"})),
      lines_.Handler());
  ASSERT_TRUE(process.ok());
  EXPECT_TRUE(RunToExit(**process).success());
  auto out = lines_.Texts(OutputStream::kStdout);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].size(), 1000000u);
  EXPECT_EQ(out[0].substr(out[0].size() - 9), "loss=0.25");
  EXPECT_EQ(out[1], std::string("bytes \xff\xfe \xc3\x28 nul=\0 end loss=0.5", 30));
  EXPECT_EQ(out[2], "last line without newline");
}

TEST_F(TrainingProcessTest, InterleavedStreamsKeepTheirOwnOrder) {
  auto process =
      TrainingProcess::Start(Options(FakeTrainer({"interleave:300"})), lines_.Handler());
  ASSERT_TRUE(process.ok());
  RunToExit(**process);
  auto out = lines_.Texts(OutputStream::kStdout);
  auto err = lines_.Texts(OutputStream::kStderr);
  ASSERT_EQ(out.size(), 300u);
  ASSERT_EQ(err.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(out[i], "out " + std::to_string(i));
    EXPECT_EQ(err[i], "err " + std::to_string(i));
  }
}

TEST_F(TrainingProcessTest, ClosedStdoutDoesNotStopCapturingStderr) {
  auto process = TrainingProcess::Start(
      Options(FakeTrainer({"out:before\\n", "close-stdout", "sleep:50", "err:after\\n"})),
      lines_.Handler());
  ASSERT_TRUE(process.ok());
  EXPECT_TRUE(RunToExit(**process).success());
  EXPECT_THAT(lines_.Texts(OutputStream::kStdout), ElementsAre("before"));
  EXPECT_THAT(lines_.Texts(OutputStream::kStderr), ElementsAre("after"));
}

TEST_F(TrainingProcessTest, ProcessLeftBehindDoesNotHoldTheRunOpen) {
  auto options = Options(FakeTrainer({"orphan:60000", "out:parent done\\n"}));
  options.drain_after_exit_ms = 100;
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok());
  auto start = std::chrono::steady_clock::now();
  ExitStatus status = RunToExit(**process);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(status.success());
  // The orphan holds the pipes for a minute; the run ends after the drain period.
  EXPECT_LT(took, std::chrono::seconds(20));
  EXPECT_TRUE(lines_.WaitForLine("parent done", std::chrono::milliseconds(0)));
  ::kill(-(*process)->pid(), SIGKILL);  // the orphan is still in the group
}

TEST_F(TrainingProcessTest, OutputOfAShortLivedProcessLeftBehindIsCaptured) {
  auto options = Options(FakeTrainer({"orphan:200", "out:parent done\\n"}));
  options.drain_after_exit_ms = 60000;  // ends earlier: end of file when the orphan exits
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok());
  EXPECT_TRUE(RunToExit(**process).success());
  auto out = lines_.Texts(OutputStream::kStdout);
  // Usually in this order, but a parent slowed by a loaded machine may print
  // its last line after the orphan's.
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out, Contains("orphan done"));
  EXPECT_THAT(out, Contains("parent done"));
}

TEST_F(TrainingProcessTest, SignalGroupReachesEveryProcessOfTheGroup) {
  auto process = TrainingProcess::Start(Options(FakeTrainer({"orphan:60000", "hang"})),
                                        lines_.Handler());
  ASSERT_TRUE(process.ok());
  std::string orphan_line;
  for (int i = 0; i < 2000 && orphan_line.empty(); ++i) {
    for (const auto& t : lines_.Texts(OutputStream::kStdout)) {
      if (t.rfind("orphan pid=", 0) == 0) orphan_line = t;
    }
    if (orphan_line.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(orphan_line.empty());
  pid_t orphan = std::stoi(orphan_line.substr(11));
  (*process)->SignalGroup(SIGKILL);
  ExitStatus status = RunToExit(**process);
  EXPECT_EQ(status.signal, SIGKILL);
  // The grandchild dies too (it may linger as a zombie until init reaps it).
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

TEST_F(TrainingProcessTest, FullQueueBlocksTheReaderAndLosesNothing) {
  std::atomic<bool> release{false};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> count{0};
  auto options = Options(FakeTrainer({"flood:3000000"}));
  options.queue_chunks = 1;
  auto process = TrainingProcess::Start(options, [&](const model::LogLine& line) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    bytes += line.text.size() + 1;
    ++count;
  });
  ASSERT_TRUE(process.ok());
  for (int i = 0; i < 2000 && (*process)->stats().backpressure_waits == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE((*process)->stats().backpressure_waits, 1u);
  release = true;
  EXPECT_TRUE(RunToExit(**process).success());
  EXPECT_EQ(bytes.load(), 3000000u);
  EXPECT_EQ((*process)->stats().bytes[0], 3000000u);
  EXPECT_EQ(count.load(), (*process)->stats().lines[0]);
}

class SignalTest : public TrainingProcessTest {
 protected:
  void SetUp() override {
    TrainingProcessTest::SetUp();
    auto catcher = SignalCatcher::Create();
    ASSERT_TRUE(catcher.ok()) << catcher.status();
    catcher_ = std::move(*catcher);
  }
  TrainingProcessOptions SignalOptions(std::vector<std::string> argv) {
    auto options = Options(std::move(argv));
    options.signals = catcher_.get();
    return options;
  }
  // Waits (up to 20 s) for the next event other than kTimeout.
  Event NextEvent(TrainingProcess& process) {
    for (int i = 0; i < 20; ++i) {
      Event e = process.Wait(1000);
      if (e != Event::kTimeout) return e;
    }
    return Event::kTimeout;
  }
  void TearDown() override {
    catcher_.reset();
    TrainingProcessTest::TearDown();
  }
  testing::DefaultSignals default_signals_;  // before the catcher, which must not see SIG_IGN
  std::unique_ptr<SignalCatcher> catcher_;
};

TEST_F(SignalTest, CtrlCIsForwardedToTheProgram) {
  auto process = TrainingProcess::Start(SignalOptions(FakeTrainer({"out:ready\\n", "hang"})),
                                        lines_.Handler());
  ASSERT_TRUE(process.ok());
  ASSERT_TRUE(lines_.WaitForLine("ready"));
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(NextEvent(**process), Event::kInterrupted);
  ASSERT_EQ(NextEvent(**process), Event::kExited);
  ExitStatus status = (*process)->Finish();
  EXPECT_EQ(status.ShellCode(), 130);  // KeyboardInterrupt handled by the program
  EXPECT_THAT(lines_.Texts(OutputStream::kStderr), ElementsAre("interrupted"));
}

TEST_F(SignalTest, SecondCtrlCKillsTheGroup) {
  auto process = TrainingProcess::Start(
      SignalOptions(FakeTrainer({"ignore-int", "out:ready\\n", "hang"})), lines_.Handler());
  ASSERT_TRUE(process.ok());
  ASSERT_TRUE(lines_.WaitForLine("ready"));
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(NextEvent(**process), Event::kInterrupted);
  EXPECT_EQ((*process)->Wait(100), Event::kTimeout);  // the program ignored it
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(NextEvent(**process), Event::kKilled);
  ASSERT_EQ(NextEvent(**process), Event::kExited);
  EXPECT_EQ((*process)->Finish().ShellCode(), 137);
}

TEST_F(SignalTest, SigtermAndSighupToTheRunnerAreStopRequests) {
  for (int sig : {SIGTERM, SIGHUP}) {
    LineCollector lines;
    auto process = TrainingProcess::Start(SignalOptions(FakeTrainer({"out:ready\\n", "hang"})),
                                          lines.Handler());
    ASSERT_TRUE(process.ok());
    ASSERT_TRUE(lines.WaitForLine("ready"));
    ::kill(::getpid(), sig);
    EXPECT_EQ(NextEvent(**process), Event::kStopRequested) << SignalName(sig);
    // The owner decides what a stop means; capture itself signalled nothing.
    EXPECT_EQ((*process)->Wait(50), Event::kTimeout);
    (*process)->SignalGroup(SIGTERM);
    ASSERT_EQ(NextEvent(**process), Event::kExited);
    EXPECT_EQ((*process)->Finish().signal, SIGTERM);
  }
}

TEST_F(SignalTest, WindowSizeChangesReachTheProgram) {
  int master = -1, slave = -1;
  struct winsize ws = {30, 100, 0, 0};
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  FdReader terminal(master);
  auto options = SignalOptions(FakeTrainer({"on-winch", "out:ready\\n", "hang"}));
  options.passthrough_stdout_fd = slave;
  auto process = TrainingProcess::Start(options, lines_.Handler());
  ASSERT_TRUE(process.ok());
  ASSERT_TRUE(lines_.WaitForLine("ready"));
  struct winsize bigger = {40, 120, 0, 0};
  ASSERT_EQ(::ioctl(slave, TIOCSWINSZ, &bigger), 0);
  ::kill(::getpid(), SIGWINCH);
  EXPECT_EQ((*process)->Wait(200), Event::kTimeout);  // handled inside Wait
  EXPECT_TRUE(lines_.WaitForLine("winch cols=120 rows=40"));
  (*process)->SignalGroup(SIGKILL);
  RunToExit(**process);
  ::close(slave);
  terminal.Join();
  ::close(master);
}

TEST(TrainingProcessStop, RequestStopFromAnotherThreadWakesWait) {
  LineCollector lines;
  TrainingProcessOptions options;
  options.argv = FakeTrainer({"hang"});
  options.passthrough_stdout_fd = -1;
  options.passthrough_stderr_fd = -1;
  auto process = TrainingProcess::Start(options, lines.Handler());
  ASSERT_TRUE(process.ok());
  std::thread stopper([&] { (*process)->RequestStop(); });
  Event e;
  while ((e = (*process)->Wait(1000)) == Event::kTimeout) {
  }
  stopper.join();
  EXPECT_EQ(e, Event::kStopRequested);
  (*process)->SignalGroup(SIGKILL);
  RunToExit(**process);
}

TEST(SignalCatcher, OneAtATimeAndPreviousDispositionsComeBack) {
  testing::DefaultSignals default_signals;
  struct sigaction before;
  ::sigaction(SIGTERM, nullptr, &before);
  struct sigaction pipe_before;
  ::sigaction(SIGPIPE, nullptr, &pipe_before);
  {
    auto first = SignalCatcher::Create();
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE((*first)->Catches(SIGINT));
    struct sigaction pipe_now;
    ::sigaction(SIGPIPE, nullptr, &pipe_now);
    EXPECT_EQ(pipe_now.sa_handler, SIG_IGN);  // a closed terminal cannot kill the runner
    auto second = SignalCatcher::Create();
    EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
    ::kill(::getpid(), SIGTERM);
    ::kill(::getpid(), SIGINT);
    std::vector<int> got;
    for (int i = 0; i < 1000 && got.size() < 2; ++i) {
      auto more = (*first)->TakePending();
      got.insert(got.end(), more.begin(), more.end());
      if (got.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_THAT(got, ElementsAre(SIGTERM, SIGINT));
  }
  struct sigaction after;
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  ::sigaction(SIGPIPE, nullptr, &after);
  EXPECT_EQ(after.sa_handler, pipe_before.sa_handler);
  EXPECT_TRUE(SignalCatcher::Create().ok());
}

TEST(SignalCatcher, IgnoredSignalsStayIgnored) {
  testing::DefaultSignals default_signals;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old;
  ::sigaction(SIGHUP, &ignore, &old);
  {
    auto catcher = SignalCatcher::Create();
    ASSERT_TRUE(catcher.ok());
    EXPECT_FALSE((*catcher)->Catches(SIGHUP));
    EXPECT_TRUE((*catcher)->Catches(SIGTERM));
  }
  ::sigaction(SIGHUP, &old, nullptr);
}

}  // namespace
}  // namespace trainwatch::capture
