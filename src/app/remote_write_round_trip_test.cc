// What `trainwatch server --remote-write` sends (agent/remote_write.h) is
// what a remote-write receiver reads: here, trainwatch's own receiver
// (api/prometheus/remote_write.h) turns it back into the same series.
#include <gtest/gtest.h>

#include "agent/remote_write.h"
#include "api/prometheus/remote_write.h"

namespace trainwatch {
namespace {

TEST(RemoteWriteOut, AReceiverReadsBackTheSeriesAndValues) {
  model::SampleBatch batch;
  model::SeriesSamples loss;
  loss.key = *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss",
                                   {{"TrainingJobName", "job-1"}, {"Host", "job-1/algo-2"}}, "None");
  loss.samples = {{1736942400000, 2.5}, {1736942401000, -0.125}};
  loss.weighted = {{1736942402000, 7, 3}};
  model::SeriesSamples cpu;
  cpu.key = *model::MakeSeriesKey("trainwatch/Profiler", "CPUUtilization", {{"Core", "3"}}, "Percent");
  cpu.statistic_sets = {{1736942400000, 4, 10, 1, 4}};
  batch.series = {loss, cpu};

  std::string request;
  agent::AppendWriteRequest(batch, &request);
  api::prometheus::WriteDecoder decoder;
  ASSERT_TRUE(decoder.Decode(request).ok());
  const model::SampleBatch& back = decoder.batch();
  ASSERT_EQ(back.series.size(), 2u);
  EXPECT_EQ(back.series[0].key, loss.key);
  EXPECT_EQ(back.series[0].samples,
            (std::vector<model::Sample>{{1736942400000, 2.5}, {1736942401000, -0.125},
                                        {1736942402000, 7}}));
  EXPECT_EQ(back.series[1].key, cpu.key);
  EXPECT_EQ(back.series[1].samples, (std::vector<model::Sample>{{1736942400000, 2.5}}));
}

}  // namespace
}  // namespace trainwatch
