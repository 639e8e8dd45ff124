#include "rules/inputs.h"

#include <gtest/gtest.h>

#include "model/job_events.h"
#include "profiler/metric_names.h"

namespace trainwatch::rules {
namespace {

model::SeriesKey Key(std::string ns, std::string metric, std::vector<model::Dimension> dims) {
  return *model::MakeSeriesKey(std::move(ns), std::move(metric), std::move(dims));
}

TEST(Inputs, ProfilerSeriesBecomeSignalsOfTheirJobAndHost) {
  const std::string ns(profiler::kProfilerNamespace);
  auto signal = [](const model::SeriesKey& k) { return SignalOfSeries(k); };
  auto core = signal(Key(ns, "HostCPUUtilization", {{"Host", "j-1/algo-2"}, {"Core", "3"}}));
  ASSERT_TRUE(core);
  EXPECT_EQ(core->signal, Signal::kCoreCpu);
  EXPECT_EQ(core->index, 3);
  EXPECT_EQ(model::JobOfSeries(Key(ns, "HostCPUUtilization", {{"Host", "j-1/algo-2"}})),
            (model::JobHost{"j-1", 2}));
  EXPECT_EQ(signal(Key(ns, "HostCPUUtilization", {{"Host", "j/algo-1"}}))->signal,
            Signal::kHostCpu);
  auto gpu = signal(Key(ns, "GPUUtilization", {{"Host", "j/algo-1"}, {"GPU", "1"}}));
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->signal, Signal::kGpuUtil);
  EXPECT_EQ(gpu->index, 1);
  EXPECT_EQ(signal(Key(ns, "GPUMemoryUtilization", {{"Host", "j/algo-1"}, {"GPU", "0"}}))->signal,
            Signal::kGpuMemUtil);
  EXPECT_EQ(signal(Key(ns, "JobCPUUtilization", {{"Host", "j/algo-1"}}))->signal, Signal::kJobCpu);
  EXPECT_FALSE(signal(Key(ns, "MemoryUsed", {{"Host", "j/algo-1"}})));
  // SageMaker's instance metrics are not read twice.
  EXPECT_FALSE(signal(Key(std::string(profiler::kSageMakerNamespace), "CPUUtilization",
                          {{"Host", "j/algo-1"}})));
}

TEST(Inputs, JobMetricsAndNonFiniteMatches) {
  model::SampleBatch b;
  b.series.push_back({Key(std::string(model::kTrainingJobsNamespace), "train:loss",
                          {{"TrainingJobName", "j"}}),
                      1,
                      {{5, 0.25}}, {}, {}});
  b.series.push_back({Key(std::string(model::kJobEventsNamespace),
                          std::string(model::kNonFiniteMetricValues),
                          {{"TrainingJobName", "j"}, {"MetricName", "train:loss"}, {"Value", "-Inf"}}),
                      1,
                      {{6, 1}}, {}, {}});
  b.series.push_back({Key("Custom", "x", {{"Other", "y"}}), 1, {{7, 1}}, {}, {}});
  std::vector<OwnedInput> out;
  AppendSampleInputs(b, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].job, "j");
  EXPECT_EQ(out[0].AsInput().signal, Signal::kMetric);
  EXPECT_EQ(out[0].AsInput().name, "train:loss");
  EXPECT_EQ(out[0].AsInput().value, 0.25);
  EXPECT_EQ(out[1].AsInput().signal, Signal::kNonFinite);
  EXPECT_EQ(out[1].AsInput().name, "train:loss");
  EXPECT_EQ(out[1].AsInput().value, -INFINITY);
}

TEST(Inputs, OutputStreamsAreLinesTheRulesStreamIsNot) {
  std::vector<OwnedInput> out;
  AppendLogInputs({{"/aws/sagemaker/TrainingJobs", "my-job-2/algo-3-1736942400"}, {{10, "x"}}},
                  &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].job, "my-job-2");
  EXPECT_EQ(out[0].input.host, 3);
  EXPECT_EQ(out[0].input.signal, Signal::kLogLine);
  AppendLogInputs({{"/aws/sagemaker/TrainingJobs", RulesLogStream("my-job-2")}, {{11, "{}"}}},
                  &out);
  AppendLogInputs({{"/other", "my-job-2/algo-3-1736942400"}, {{12, "x"}}}, &out);
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace trainwatch::rules
