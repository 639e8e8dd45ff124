#include "job/failure_reason.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::job {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::StartsWith;

capture::ExitStatus Code(int code) {
  capture::ExitStatus s;
  s.exit_code = code;
  return s;
}

TEST(FailureReason, PythonTracebackEndsWithTheException) {
  std::vector<std::string> err = {
      "Traceback (most recent call last):", "  File \"train.py\", line 3, in <module>",
      "    load(-0.1)", "ValueError: learning rate must be positive, got -0.1"};
  EXPECT_EQ(AlgorithmFailureReason(Code(1), err, {"epoch=1 loss=0.5"}),
            "AlgorithmError: the training command exited with code 1. Last lines of stderr:\n"
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 3, in <module>\n"
            "    load(-0.1)\n"
            "ValueError: learning rate must be positive, got -0.1");
}

TEST(FailureReason, StaysWithin1024BytesAndKeepsTheLastLine) {
  std::vector<std::string> err(50, std::string(100, 'f'));
  err.push_back("RuntimeError: CUDA out of memory");
  std::string reason = AlgorithmFailureReason(Code(1), err, {});
  EXPECT_LE(reason.size(), 1024u);
  EXPECT_THAT(reason, EndsWith("\nRuntimeError: CUDA out of memory"));
  // A single line longer than everything is cut, not dropped.
  reason = AlgorithmFailureReason(Code(2), {std::string(5000, 'x')}, {});
  EXPECT_LE(reason.size(), 1024u);
  EXPECT_THAT(reason, EndsWith("xx\xe2\x80\xa6"));
}

TEST(FailureReason, SignalsAndNoOutput) {
  capture::ExitStatus killed;
  killed.signal = 9;
  EXPECT_EQ(AlgorithmFailureReason(killed, {}, {}),
            "AlgorithmError: the training command was killed by signal 9 (SIGKILL) (SIGKILL "
            "also comes from the kernel's out-of-memory killer).");
  EXPECT_THAT(AlgorithmFailureReason(Code(3), {}, {"last stdout line"}),
              EndsWith("Last lines of output:\nlast stdout line"));
}

TEST(OutputTail, KeepsTheLastCleanedNonBlankLinesPerStream) {
  OutputTail tail(3);
  for (int i = 0; i < 5; ++i) tail.Add(model::OutputStream::kStderr, "e" + std::to_string(i));
  tail.Add(model::OutputStream::kStderr, "   ");
  tail.Add(model::OutputStream::kStdout, "\x1b[31mred\x1b[0m\tbad \xff byte\x07");
  EXPECT_THAT(tail.Lines(model::OutputStream::kStderr), ElementsAre("e2", "e3", "e4"));
  EXPECT_THAT(tail.Lines(model::OutputStream::kStdout),
              ElementsAre("red bad \xef\xbf\xbd byte"));
}

}  // namespace
}  // namespace trainwatch::job
