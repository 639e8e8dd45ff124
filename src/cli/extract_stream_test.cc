#include "cli/extract_stream.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "capture/line_splitter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::cli {
namespace {

using model::MetricDefinition;
using Points = std::vector<std::pair<uint32_t, double>>;

struct Outcome {
  Points points;
  uint64_t lines = 0;
  std::vector<uint64_t> matched;
  std::vector<uint64_t> rejected;
  std::vector<std::string> samples;
};

Outcome Extract(const std::string& input, const std::vector<MetricDefinition>& defs,
                int threads = 1, size_t block_bytes = 1 << 20, size_t max_read = SIZE_MAX) {
  auto source = MemorySource(input, max_read);
  StreamOptions options;
  options.threads = threads;
  options.block_bytes = block_bytes;
  Outcome run;
  auto result = ExtractStream(*source, defs, {}, options, [&](ExtractedBlock& block) {
    for (const auto& v : block.values) run.points.emplace_back(v.definition, v.value);
    return absl::OkStatus();
  });
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return run;
  EXPECT_EQ(result->bytes, input.size());
  run.lines = result->lines;
  run.matched = result->matched;
  run.rejected = result->rejected;
  for (size_t i = 0; i < defs.size(); ++i) {
    run.samples.push_back(result->has_rejected_sample[i] ? result->rejected_sample[i] : "-");
  }
  return run;
}

std::vector<double> Values(const std::string& input, const std::string& regex) {
  std::vector<double> out;
  for (auto [i, v] : Extract(input, {{"m", regex}}).points) out.push_back(v);
  return out;
}

using ::testing::ElementsAre;

TEST(ExtractStreamTest, LinesEndAtNewlineCarriageReturnOrBoth) {
  // "\r\n" is one terminator, not two: three lines, not four.
  EXPECT_EQ(Extract("a=1\r\na=2\na=3\r", {{"m", "a=(\\d)"}}).lines, 3u);
  EXPECT_THAT(Values("a=1\r\na=2\na=3\r", "a=(\\d)"), ElementsAre(1, 2, 3));
  // "\n\r" is two terminators: an empty line between.
  EXPECT_EQ(Extract("a=1\n\ra=2", {{"m", "a=(\\d)"}}).lines, 3u);
  // Empty lines are lines.
  EXPECT_EQ(Extract("\n\n\r\n", {{"m", "a=(\\d)"}}).lines, 3u);
}

TEST(ExtractStreamTest, ProgressBarRedrawsAreLines) {
  std::string bar =
      " 10%|#  | 1/10 [00:01, 3.1it/s]\r 20%|## | 2/10 [00:02, 3.3it/s]\r"
      "100%|###| 10/10 [00:03, 3.5it/s]\n";
  EXPECT_THAT(Values(bar, "([0-9.]+)it/s"), ElementsAre(3.1, 3.3, 3.5));
}

TEST(ExtractStreamTest, LastSegmentWithoutTerminatorIsALine) {
  EXPECT_THAT(Values("a=1\na=2", "a=(\\d)"), ElementsAre(1, 2));
  EXPECT_THAT(Values("a=7", "a=(\\d)"), ElementsAre(7));
}

TEST(ExtractStreamTest, DollarMatchesBeforeTheTerminator) {
  EXPECT_THAT(Values("acc: 0.5\r\nacc: 0.6\racc: 0.7\n", "acc: ([0-9.]+)$"),
              ElementsAre(0.5, 0.6, 0.7));
}

TEST(ExtractStreamTest, LineOrderThenDefinitionOrder) {
  Outcome run = Extract("b=1 a=2\na=3\nb=4\n", {{"a", "a=(\\d)"}, {"b", "b=(\\d)"}});
  EXPECT_EQ(run.points, (Points{{0, 2}, {1, 1}, {0, 3}, {1, 4}}));
}

// A log with every kind of terminator, long lines, and lines that straddle
// any block or read boundary.
std::string TrickyLog() {
  std::mt19937 rng(11);
  std::string log;
  const char* terminators[] = {"\n", "\r", "\r\n", "\n\r"};
  for (int i = 0; i < 1500; ++i) {
    switch (rng() % 6) {
      case 0:
        log += "epoch " + std::to_string(i) + " loss: " + std::to_string(rng() % 1000) + ".5";
        break;
      case 1:
        log += std::string(rng() % 400, 'x') + " acc=0." + std::to_string(rng() % 100);
        break;
      case 2:
        log += "acc=bad";
        break;
      case 3:
        log += "\xFF\xFE loss: 1e-3";
        break;
      default:
        log += "noise " + std::to_string(rng());
    }
    log += terminators[rng() % 4];
  }
  log += "loss: 9.75";  // no terminator at the end
  return log;
}

TEST(ExtractStreamTest, SameResultWhateverTheBlocksReadsAndThreads) {
  std::vector<MetricDefinition> defs = {
      {"loss", "loss: ([0-9.e-]+)"}, {"acc", "acc=(\\S+)"}, {"end", "([0-9]+)$"}};
  std::string log = TrickyLog();
  // The reference: the splitter and an extractor over the whole input at once.
  Points want;
  uint64_t want_lines = 0;
  {
    auto x = *extract::Extractor::Create(defs);
    capture::LineSplitter splitter;
    auto on_line = [&](std::string_view line) {
      for (const auto& v : x->Extract(line)) want.emplace_back(v.definition, v.value);
    };
    splitter.Feed(log, on_line);
    splitter.Finish(on_line);
    want_lines = splitter.lines();
  }
  ASSERT_GT(want.size(), 500u);
  Outcome first = Extract(log, defs);
  EXPECT_EQ(first.points, want);
  EXPECT_EQ(first.lines, want_lines);
  struct Shape {
    int threads;
    size_t block_bytes;
    size_t max_read;
  } shapes[] = {{1, 1, 1}, {1, 1, SIZE_MAX}, {1, 7, 5},       {1, 4096, 1},       {1, 4096, 1000},
                {3, 7, 5}, {3, 7, SIZE_MAX}, {3, 4096, 1000}, {3, 4096, SIZE_MAX}};
  for (const Shape& s : shapes) {
    Outcome run = Extract(log, defs, s.threads, s.block_bytes, s.max_read);
    ASSERT_EQ(run.points, want) << "threads " << s.threads << " block " << s.block_bytes << " read "
                                << s.max_read;
    EXPECT_EQ(run.lines, want_lines);
    EXPECT_EQ(run.matched, first.matched);
    EXPECT_EQ(run.rejected, first.rejected);
    EXPECT_EQ(run.samples, first.samples);
  }
  EXPECT_EQ(first.samples[1], "bad");  // the first rejected acc, in input order
}

TEST(ExtractStreamTest, LineLongerThanABlock) {
  std::string log = "a=1\n" + std::string(100000, 'y') + " a=2\na=3";
  EXPECT_EQ(Extract(log, {{"m", "a=(\\d)"}}, 1, 64).points, (Points{{0, 1}, {0, 2}, {0, 3}}));
  EXPECT_EQ(Extract(log, {{"m", "a=(\\d)"}}, 2, 64, 100).points, (Points{{0, 1}, {0, 2}, {0, 3}}));
}

TEST(ExtractStreamTest, InvalidDefinitionsFailBeforeReading) {
  auto source = MemorySource("loss: 1\n");
  int blocks = 0;
  auto result = ExtractStream(*source, {{"loss", "loss: [0-9]+"}}, {}, {}, [&](ExtractedBlock&) {
    ++blocks;
    return absl::OkStatus();
  });
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()), ::testing::HasSubstr("no capture group"));
  EXPECT_EQ(blocks, 0);
}

class FailingSource : public ByteSource {
 public:
  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    if (calls_++ > 0) return absl::DataLossError("disk on fire");
    std::string data = "a=1\na=2\n";
    size_t n = std::min(size, data.size());
    std::memcpy(dst, data.data(), n);
    return n;
  }

 private:
  int calls_ = 0;
};

TEST(ExtractStreamTest, ErrorsStopTheStream) {
  for (int threads : {1, 2}) {
    FailingSource failing;
    StreamOptions options;
    options.threads = threads;
    auto result = ExtractStream(failing, {{"m", "a=(\\d)"}}, {}, options,
                                [](ExtractedBlock&) { return absl::OkStatus(); });
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().message(), "disk on fire");

    auto source = MemorySource(std::string(10000, '\n'), 10);
    options.block_bytes = 16;
    int calls = 0;
    auto stopped = ExtractStream(*source, {{"m", "a=(\\d)"}}, {}, options, [&](ExtractedBlock&) {
      return ++calls == 3 ? absl::UnavailableError("stdout closed") : absl::OkStatus();
    });
    ASSERT_FALSE(stopped.ok());
    EXPECT_TRUE(absl::IsUnavailable(stopped.status()));
    EXPECT_EQ(calls, 3);
  }
}

TEST(ExtractStreamTest, FormatRunsPerBlock) {
  auto source = MemorySource("a=1\na=2\n", 4);
  StreamOptions options;
  options.threads = 2;
  options.block_bytes = 4;
  options.format = [](ExtractedBlock* block) {
    for (const auto& v : block->values) block->text += std::to_string(static_cast<int>(v.value));
  };
  std::string text;
  auto result = ExtractStream(*source, {{"m", "a=(\\d)"}}, {}, options, [&](ExtractedBlock& b) {
    text += b.text;
    return absl::OkStatus();
  });
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(text, "12");
}

TEST(OpenInputTest, ErrorsNameThePath) {
  auto missing = OpenInput("no/such/file.log");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("no/such/file.log"));
  auto folder = OpenInput(TW_SOURCE_DIR);
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(std::string(folder.status().message()), ::testing::HasSubstr("is a folder"));
}

}  // namespace
}  // namespace trainwatch::cli
