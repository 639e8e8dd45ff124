#include "model/testing/memory_telemetry_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace trainwatch::model::testing {
namespace {

SeriesKey Key(const std::string& metric) {
  return *MakeSeriesKey("/aws/sagemaker/TrainingJobs", metric, {{"TrainingJobName", "j"}});
}

TEST(MemoryTelemetrySink, RefusesANonFiniteBatchWhole) {
  MemoryTelemetrySink sink;
  SampleBatch batch;
  batch.series.push_back({Key("a"), 1, {{1, 1.0}}, {}, {}});
  batch.series.push_back({Key("b"), 1, {{1, std::nan("")}}, {}, {}});
  EXPECT_EQ(sink.Put(batch).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(sink.Keys().empty());
  batch.series.pop_back();
  EXPECT_TRUE(sink.Put(batch).ok());
  EXPECT_EQ(sink.Samples(Key("a")), (std::vector<Sample>{{1, 1.0}}));
  EXPECT_EQ(sink.StorageResolution(Key("a")), 1);
}

TEST(MemoryTelemetrySink, JobNamesAreCaseInsensitiveAndHistoryIsKept) {
  MemoryTelemetrySink sink;
  JobRecord job;
  job.name = "Job-1";
  ASSERT_TRUE(sink.CreateJob(job).ok());
  job.name = "job-1";
  EXPECT_EQ(sink.CreateJob(job).code(), absl::StatusCode::kAlreadyExists);
  job.secondary_status = SecondaryStatus::kTraining;
  ASSERT_TRUE(sink.UpdateJob(job).ok());
  JobRecord other;
  other.name = "nope";
  EXPECT_EQ(sink.UpdateJob(other).code(), absl::StatusCode::kNotFound);
  auto history = sink.JobHistory("JOB-1");
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].secondary_status, SecondaryStatus::kStarting);
  EXPECT_EQ(history[1].secondary_status, SecondaryStatus::kTraining);
}

TEST(MemoryTelemetrySink, InjectedFailuresStoreNothing) {
  MemoryTelemetrySink sink;
  sink.FailNextPutLogs(1, absl::UnavailableError("disk"));
  LogBatch batch{{"g", "s"}, {{1, "x"}}};
  EXPECT_EQ(sink.PutLogs(batch).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(sink.Events({"g", "s"}).empty());
  EXPECT_TRUE(sink.PutLogs(batch).ok());
  EXPECT_EQ(sink.Events({"g", "s"}).size(), 1u);
}

TEST(MemoryTelemetrySink, WaitUntilWakesOnWrites) {
  MemoryTelemetrySink sink;
  std::thread writer([&] { ASSERT_TRUE(sink.PutLogs({{"g", "s"}, {{1, "x"}}}).ok()); });
  EXPECT_TRUE(sink.WaitUntil([&] { return sink.Events({"g", "s"}).size() == 1; }));
  writer.join();
  EXPECT_FALSE(sink.WaitUntil([] { return false; }, std::chrono::milliseconds(10)));
}

}  // namespace
}  // namespace trainwatch::model::testing
