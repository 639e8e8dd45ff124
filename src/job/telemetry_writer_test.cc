#include "job/telemetry_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "model/testing/memory_telemetry_sink.h"

namespace trainwatch::job {
namespace {

using model::testing::MemoryTelemetrySink;
using ::testing::Each;
using ::testing::Le;

const model::LogStreamId kStream{"/aws/sagemaker/TrainingJobs", "job-1/algo-1-1736942400"};

model::SeriesKey Key(const std::string& metric) {
  return *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", metric,
                               {{"TrainingJobName", "job-1"}});
}

TEST(SplitLogMessage, LongLinesBecomeSeveralEventsOnCharacterBoundaries) {
  std::string line(600 * 1024, 'a');
  auto pieces = SplitLogMessage(line);
  ASSERT_EQ(pieces.size(), 3u);
  std::string joined;
  for (auto p : pieces) {
    EXPECT_LE(p.size(), model::kMaxLogEventBytes);
    joined += p;
  }
  EXPECT_EQ(joined, line);
  // "é" (2 bytes) straddling the limit moves whole into the next piece.
  std::string text = std::string(9, 'x') + "\xc3\xa9" + "yz";
  auto split = SplitLogMessage(text, 10);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], std::string(9, 'x'));
  EXPECT_EQ(split[1], "\xc3\xa9yz");
  EXPECT_EQ(SplitLogMessage(""), std::vector<std::string_view>{""});
}

TEST(TelemetryWriter, WritesPromptlyWithoutAFlush) {
  MemoryTelemetrySink sink;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("train:loss"), Key("val:acc")}, {});
  writer.Add(1000, "epoch=1 loss=0.5", {{0, 0.5}});
  writer.Add(1001, "val acc=0.9", {{1, 0.9}});
  writer.Add(1002, "", {});
  EXPECT_TRUE(sink.WaitUntil([&] { return sink.Events(kStream).size() == 3; }));
  EXPECT_TRUE(sink.WaitUntil([&] { return sink.Samples(Key("val:acc")).size() == 1; }));
  EXPECT_EQ(sink.Events(kStream),
            (std::vector<model::LogEvent>{{1000, "epoch=1 loss=0.5"}, {1001, "val acc=0.9"},
                                          {1002, ""}}));
  EXPECT_EQ(sink.Samples(Key("train:loss")), (std::vector<model::Sample>{{1000, 0.5}}));
  EXPECT_EQ(sink.StorageResolution(Key("train:loss")), 1);
}

// A runner holds its job's first lines until the job's record is written:
// whatever reads the ingest (the rules) knows the job before its data.
TEST(TelemetryWriter, AHeldWriterWritesNothingUntilReleased) {
  MemoryTelemetrySink sink;
  TelemetryWriter::Options options;
  options.start_held = true;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("train:loss")}, options);
  writer.Add(1000, "loss: nan", {});
  writer.Add(1001, "train:loss=0.5", {{0, 0.5}});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(sink.Events(kStream).empty());
  EXPECT_TRUE(sink.Samples(Key("train:loss")).empty());
  writer.Release();
  writer.Flush();
  EXPECT_EQ(sink.Events(kStream).size(), 2u);
  EXPECT_EQ(sink.Samples(Key("train:loss")), (std::vector<model::Sample>{{1001, 0.5}}));
}

// A job whose record could not be written: its held lines are dropped, and a
// process printing into a full held writer is let go.
TEST(TelemetryWriter, StoppingAWriterNeverReleasedDropsItsLinesAndFreesAWaitingAdd) {
  MemoryTelemetrySink sink;
  TelemetryWriter::Options options;
  options.start_held = true;
  options.max_pending_bytes = 1000;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("train:loss")}, options);
  std::atomic<int> added{0};
  std::thread printer([&] {
    for (int i = 0; i < 100; ++i, ++added) writer.Add(1000 + i, std::string(100, 'x'), {{0, 1.0}});
  });
  while (writer.stats().backpressure_waits == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LT(added.load(), 100);  // waiting for room
  writer.Stop();
  printer.join();
  EXPECT_EQ(added.load(), 100);
  EXPECT_TRUE(sink.Events(kStream).empty());
  EXPECT_TRUE(sink.Samples(Key("train:loss")).empty());
  EXPECT_EQ(writer.stats().events_dropped, 100u);
  EXPECT_EQ(writer.stats().samples_dropped, 100u);
}

TEST(TelemetryWriter, SlowSinkGetsBatchesAndFlushWaitsForAll) {
  MemoryTelemetrySink sink;
  sink.SetLatency(std::chrono::milliseconds(20), std::chrono::milliseconds(20));
  TelemetryWriter writer(&sink, &sink, kStream, {Key("loss")}, {});
  for (int i = 0; i < 2000; ++i) writer.Add(i, "line " + std::to_string(i), {{0, i * 1.0}});
  writer.Flush();
  EXPECT_EQ(sink.Events(kStream).size(), 2000u);
  EXPECT_EQ(sink.Samples(Key("loss")).size(), 2000u);
  EXPECT_LT(sink.put_logs_calls(), 100u);  // group commit, not a write per line
  EXPECT_EQ(sink.Events(kStream)[1999].message, "line 1999");
}

TEST(TelemetryWriter, FullBacklogBlocksAddInsteadOfDropping) {
  MemoryTelemetrySink sink;
  sink.SetLatency(std::chrono::milliseconds(2), std::chrono::milliseconds(2));
  TelemetryWriter::Options options;
  options.max_pending_bytes = 200;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("loss")}, options);
  for (int i = 0; i < 120; ++i) writer.Add(i, std::string(50, 'x'), {{0, 1.0}});
  writer.Flush();
  auto stats = writer.stats();
  EXPECT_GT(stats.backpressure_waits, 0u);
  EXPECT_EQ(stats.events_written, 120u);
  EXPECT_EQ(stats.samples_written, 120u);
  EXPECT_EQ(stats.events_dropped + stats.samples_dropped, 0u);
}

TEST(TelemetryWriter, TransientErrorsAreRetried) {
  MemoryTelemetrySink sink;
  sink.FailNextPutLogs(2, absl::UnavailableError("disk busy"));
  sink.FailNextPuts(1, absl::UnavailableError("disk busy"));
  TelemetryWriter::Options options;
  options.first_backoff_ms = 1;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("loss")}, options);
  writer.Add(1, "loss=1", {{0, 1.0}});
  writer.Flush();
  EXPECT_EQ(sink.Events(kStream).size(), 1u);
  EXPECT_EQ(sink.Samples(Key("loss")).size(), 1u);
  EXPECT_EQ(writer.stats().retries, 3u);
}

TEST(TelemetryWriter, PersistentErrorsDropAndCount) {
  MemoryTelemetrySink sink;
  sink.FailNextPuts(100, absl::UnavailableError("disk gone"));
  TelemetryWriter::Options options;
  options.first_backoff_ms = 1;
  options.max_attempts = 2;
  TelemetryWriter writer(&sink, &sink, kStream, {Key("loss")}, options);
  writer.Add(1, "loss=1", {{0, 1.0}});
  writer.Flush();
  EXPECT_EQ(writer.stats().samples_dropped, 1u);
  EXPECT_EQ(sink.Events(kStream).size(), 1u);  // the logs still went in
}

TEST(TelemetryWriter, OneInvalidSeriesDoesNotLoseTheOthers) {
  MemoryTelemetrySink sink;
  model::SeriesKey bad = Key("loss");
  bad.metric = "";  // the sink refuses it
  TelemetryWriter writer(&sink, &sink, kStream, {bad, Key("acc")}, {});
  writer.Add(1, "loss=1 acc=0.5", {{0, 1.0}, {1, 0.5}});
  writer.Flush();
  EXPECT_EQ(sink.Samples(Key("acc")).size(), 1u);
  EXPECT_EQ(writer.stats().samples_dropped, 1u);
  EXPECT_EQ(writer.stats().samples_written, 1u);
}

// Records the size of each PutLogs; the first call waits until released so that a
// large backlog builds up.
class GatedLogSink : public model::LogSink {
 public:
  absl::Status PutLogs(const model::LogBatch& batch) override {
    while (!open.load()) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu);
    size_t bytes = 0;
    for (const auto& e : batch.events) bytes += e.message.size() + 26;
    events.push_back(batch.events.size());
    byte_counts.push_back(bytes);
    return absl::OkStatus();
  }
  std::atomic<bool> open{false};
  std::mutex mu;
  std::vector<size_t> events;
  std::vector<size_t> byte_counts;
};

TEST(TelemetryWriter, PutLogsStaysWithinCloudWatchLimits) {
  GatedLogSink logs;
  MemoryTelemetrySink samples;
  TelemetryWriter writer(&logs, &samples, kStream, {}, {});
  writer.Add(0, "first", {});
  for (int i = 0; i < 25000; ++i) writer.Add(i, "short line", {});
  for (int i = 0; i < 8; ++i) writer.Add(i, std::string(200 * 1024, 'b'), {});
  logs.open = true;
  writer.Flush();
  std::lock_guard<std::mutex> lock(logs.mu);
  size_t total = 0;
  for (size_t n : logs.events) total += n;
  EXPECT_EQ(total, 25009u);
  EXPECT_THAT(logs.events, Each(Le(10000u)));
  EXPECT_THAT(logs.byte_counts, Each(Le(1u << 20)));
}

}  // namespace
}  // namespace trainwatch::job
