#include "capture/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainwatch::capture {
namespace {

// Splits `input` fed in pieces of `piece` bytes (0 = all at once).
std::vector<std::string> Split(std::string_view input, size_t piece = 0) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  if (piece == 0) piece = input.size() == 0 ? 1 : input.size();
  for (size_t i = 0; i < input.size(); i += piece) splitter.Feed(input.substr(i, piece), on_line);
  splitter.Finish(on_line);
  return lines;
}

using Lines = std::vector<std::string>;

TEST(LineSplitter, EachTerminatorEndsOneLine) {
  EXPECT_EQ(Split("a\nb\rc\r\nd"), (Lines{"a", "b", "c", "d"}));
}

TEST(LineSplitter, CrLfIsOneTerminatorNotTwo) {
  EXPECT_EQ(Split("a\r\nb\r\n"), (Lines{"a", "b"}));
  // ...but "\n\r" is two terminators with an empty line between.
  EXPECT_EQ(Split("a\n\rb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(Split("a\r\r\nb"), (Lines{"a", "", "b"}));
}

TEST(LineSplitter, CrLfSplitAcrossReadsIsStillOneTerminator) {
  for (size_t piece = 1; piece <= 4; ++piece) {
    EXPECT_EQ(Split("ab\r\ncd\r\n", piece), (Lines{"ab", "cd"})) << piece;
  }
}

TEST(LineSplitter, ProgressBarRedrawsAreLines) {
  EXPECT_EQ(Split(" 10%|#         |\r 50%|#####     |\r100%|##########|\n"),
            (Lines{" 10%|#         |", " 50%|#####     |", "100%|##########|"}));
}

TEST(LineSplitter, CrIsEmittedAtOnceWithoutWaitingForTheNextByte) {
  LineSplitter splitter;
  Lines lines;
  splitter.Feed("step 1\r", [&](std::string_view l) { lines.emplace_back(l); });
  EXPECT_EQ(lines, (Lines{"step 1"}));
  splitter.Feed("\nstep 2\n", [&](std::string_view l) { lines.emplace_back(l); });
  EXPECT_EQ(lines, (Lines{"step 1", "step 2"}));
}

TEST(LineSplitter, LastSegmentWithoutTerminatorIsALine) {
  EXPECT_EQ(Split("a\nlast"), (Lines{"a", "last"}));
  EXPECT_EQ(Split("a\n"), (Lines{"a"}));
  EXPECT_EQ(Split(""), (Lines{}));
  EXPECT_EQ(Split("\n"), (Lines{""}));
}

TEST(LineSplitter, BytesPassThroughUntouched) {
  std::string odd("nul\0here \xff\xfe \x1b[31mred\x1b[0m back\bspace", 35);
  EXPECT_EQ(Split(odd + "\n"), (Lines{odd}));
}

TEST(LineSplitter, OneMegabyteLineInSmallReads) {
  std::string big(1 << 20, 'x');
  Lines lines = Split(big + "\nnext\n", 4096);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], big);
  EXPECT_EQ(lines[1], "next");
}

TEST(LineSplitter, MemoryIsBoundedByTheLongestLineNotTheStream) {
  LineSplitter splitter;
  size_t max_pending = 0;
  size_t count = 0;
  for (int i = 0; i < 10000; ++i) {
    splitter.Feed("0123456789abcdef\n", [&](std::string_view) { ++count; });
    max_pending = std::max(max_pending, splitter.pending_bytes());
  }
  EXPECT_EQ(count, 10000u);
  EXPECT_EQ(max_pending, 0u);
}

}  // namespace
}  // namespace trainwatch::capture
