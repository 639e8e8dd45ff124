// TrainingRun: the job runner and the profiler wired to one sink, as both
// `trainwatch run` and CreateTrainingJob use them.

#include "job/training_run.h"

#include <gtest/gtest.h>

#include <string>

#include "model/testing/memory_telemetry_sink.h"
#include "tests/e2e/fake_trainer.h"

namespace trainwatch::job {
namespace {

using model::testing::MemoryTelemetrySink;

RunSpec Spec(int64_t profiling_interval_ms) {
  RunSpec spec;
  spec.name = "wired-job";
  spec.command = testing::FakeTrainer({"out:loss=0.25", "sleep:300"});
  spec.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
  spec.profiling_interval_ms = profiling_interval_ms;
  spec.stdout_fd = -1;
  spec.stderr_fd = -1;
  spec.stdin_fd = -1;
  spec.handle_signals = false;
  spec.drain_after_exit_ms = 200;
  return spec;
}

// Series of the job's instance metrics (the profiler's), and of its own.
struct Written {
  int host_series = 0;
  int loss_series = 0;
};
Written Look(const MemoryTelemetrySink& sink) {
  Written w;
  for (const model::SeriesKey& key : sink.Keys()) {
    const std::string* host = key.FindDimension("Host");
    if (host != nullptr && *host == "wired-job/algo-1") ++w.host_series;
    if (key.metric == "train:loss" && !sink.Samples(key).empty()) ++w.loss_series;
  }
  return w;
}

TEST(TrainingRunTest, ExtractsTheJobsMetricsAndProfilesItAtTheSpecsInterval) {
  MemoryTelemetrySink sink;
  auto run = TrainingRun::Create(Spec(100), &sink);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ((*run)->name(), "wired-job");
  ASSERT_NE((*run)->profiler(), nullptr);
  auto result = (*run)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->job.status, model::JobStatus::kCompleted);
  EXPECT_TRUE((*run)->profiler()->started());
  EXPECT_GE((*run)->profiler()->stats().ticks, 2) << "the first sample at start, the last at exit";
  const Written w = Look(sink);
  EXPECT_GT(w.host_series, 0) << "instance metrics under Host=<job>/algo-1";
  EXPECT_EQ(w.loss_series, 1);
}

TEST(TrainingRunTest, NoProfilerWhenProfilingIsOff) {
  MemoryTelemetrySink sink;
  auto run = TrainingRun::Create(Spec(0), &sink);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ((*run)->profiler(), nullptr);
  auto result = (*run)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const Written w = Look(sink);
  EXPECT_EQ(w.host_series, 0);
  EXPECT_EQ(w.loss_series, 1);
}

TEST(TrainingRunTest, AnInvalidSpecIsRefusedAndNothingIsWritten) {
  MemoryTelemetrySink sink;
  RunSpec spec = Spec(100);
  spec.name = "not a job name";
  auto run = TrainingRun::Create(spec, &sink);
  EXPECT_TRUE(absl::IsInvalidArgument(run.status())) << run.status();
  EXPECT_FALSE(sink.Job("not a job name").has_value());
  EXPECT_TRUE(sink.Keys().empty());
}

}  // namespace
}  // namespace trainwatch::job
