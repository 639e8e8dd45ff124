// RemoteSink without a server: what it guarantees while none answers (the
// calls that take data return at once, every batch is on disk with the agent's
// name and its number) and the delivery of a spool left behind. The path
// through a real server is app/agent_delivery_test.cc.
#include "agent/remote_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/spool.h"
#include "agent/test_util.h"
#include "api/native/agent_codec.h"

namespace trainwatch::agent {
namespace {

using testing::TempDir;

// A sink whose server never answers: nobody listens on port 1.
RemoteSinkOptions Unreachable(const std::string& spool_dir, const std::string& agent) {
  RemoteSinkOptions o;
  o.endpoint = "http://127.0.0.1:1";
  o.connect_timeout_ms = 100;
  o.create_timeout_ms = 300;
  o.spool_dir = spool_dir;
  o.agent = agent;
  return o;
}

model::SampleBatch Samples() {
  model::SeriesSamples series;
  series.key = *model::MakeSeriesKey("ns", "loss", {{"TrainingJobName", "job-a"}}, "None");
  series.samples = {{1764500000000, 0.5}};
  return model::SampleBatch{{series}};
}

model::LogBatch Lines(int n) {
  model::LogBatch batch{{"/aws/sagemaker/TrainingJobs", "job-a/algo-1-1"}, {}};
  for (int i = 0; i < n; ++i) batch.events.push_back({1764500000000 + i, "line"});
  return batch;
}

model::JobRecord Job() {
  model::JobRecord job;
  job.name = "job-a";
  job.arn = model::TrainingJobArn("job-a");
  return job;
}

// Writes three batches (samples, logs, a job update) through a sink that cannot
// reach its server, and lets it go.
void LeaveThreeBatches(const std::string& spool_dir) {
  auto sink = RemoteSink::Create(Unreachable(spool_dir, "gone"));
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE((*sink)->Put(Samples()).ok());
  ASSERT_TRUE((*sink)->PutLogs(Lines(3)).ok());
  ASSERT_TRUE((*sink)->UpdateJob(Job()).ok());
}

TEST(RemoteSinkTest, TakesDataWithoutAServerAndKeepsEveryBatchNumberedOnDisk) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/spool/agent-1";
  {
    auto sink = RemoteSink::Create(Unreachable(spool_dir, "agent-1"));
    ASSERT_TRUE(sink.ok()) << sink.status();
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE((*sink)->Put(Samples()).ok());
    ASSERT_TRUE((*sink)->PutLogs(Lines(3)).ok());
    ASSERT_TRUE((*sink)->UpdateJob(Job()).ok());
    ASSERT_TRUE((*sink)->Put(model::SampleBatch()).ok()) << "nothing to send: nothing spooled";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
        << "only the disk is waited for";
    EXPECT_EQ((*sink)->pending(), 3);
    EXPECT_FALSE((*sink)->Drain(200, nullptr));
    // CreateJob waits for the server's answer, and not for ever.
    absl::Status created = (*sink)->CreateJob(Job());
    EXPECT_TRUE(absl::IsUnavailable(created)) << created;
  }
  // What the sender would have sent: the agent's name and the batch's number.
  auto spool = Spool::Open(spool_dir, 1 << 20);
  ASSERT_TRUE(spool.ok()) << spool.status();
  std::vector<api::AgentBatch::Kind> kinds;
  for (int64_t seq = 1; seq <= 4; ++seq) {
    auto front = (*spool)->Front(0);
    ASSERT_TRUE(front.ok() && front->has_value()) << "batch " << seq;
    auto batch = api::DecodeAgentBatch((*front)->payload, SIZE_MAX);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->agent, "agent-1");
    EXPECT_EQ(batch->seq, seq);
    kinds.push_back(batch->kind);
    ASSERT_TRUE((*spool)->Ack(seq).ok());
  }
  using Kind = api::AgentBatch::Kind;
  EXPECT_EQ(kinds,
            (std::vector<Kind>{Kind::kSamples, Kind::kLogs, Kind::kUpdateJob, Kind::kCreateJob}));
}

TEST(RemoteSinkTest, AValueNoStoreTakesIsRefusedBeforeItsBatchIsSpooled) {
  // The server would refuse the batch whole (a 4xx: dropped for good), with
  // every other series in it; refused here, the writer puts the series one
  // by one and loses only the bad one, as with a store of its own.
  TempDir dir;
  auto sink = RemoteSink::Create(Unreachable(dir.path() + "/spool/a", "a"));
  ASSERT_TRUE(sink.ok()) << sink.status();
  for (double bad : {1e200, -1e200, std::nan(""), HUGE_VAL}) {
    model::SampleBatch batch = Samples();
    model::SeriesSamples other = batch.series[0];
    other.key = *model::MakeSeriesKey("ns", "acc", {{"TrainingJobName", "job-a"}}, "None");
    other.samples = {{1764500000000, bad}};
    batch.series.push_back(other);
    absl::Status put = (*sink)->Put(batch);
    EXPECT_TRUE(absl::IsInvalidArgument(put)) << bad << ": " << put;
    EXPECT_THAT(std::string(put.message()), ::testing::HasSubstr("acc")) << put;
  }
  EXPECT_EQ((*sink)->pending(), 0) << "nothing of the refused batches is spooled";
  model::SampleBatch largest = Samples();
  largest.series[0].samples[0].value = -model::kMaxValueMagnitude;
  EXPECT_TRUE((*sink)->Put(largest).ok());
  EXPECT_EQ((*sink)->pending(), 1);
}

TEST(RemoteSinkTest, ASpoolLeftBehindIsDeliveredInOrderAndRemoved) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/gone";
  LeaveThreeBatches(spool_dir);
  std::vector<int64_t> seqs;
  auto delivered = DeliverLeftoverSpool(spool_dir, [&](const api::AgentBatch& batch) {
    seqs.push_back(batch.seq);
    return absl::StatusOr<bool>(true);
  });
  ASSERT_TRUE(delivered.ok()) << delivered.status();
  EXPECT_EQ(*delivered, 3);
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(std::filesystem::exists(spool_dir));
}

TEST(RemoteSinkTest, ARefusedBatchIsDroppedAndAStoreInTroubleKeepsTheRest) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/gone";
  LeaveThreeBatches(spool_dir);
  // The store cannot take the second batch now: the delivery stops there.
  int calls = 0;
  auto stopped = DeliverLeftoverSpool(spool_dir, [&](const api::AgentBatch& batch) {
    ++calls;
    return batch.seq == 2 ? absl::StatusOr<bool>(absl::UnavailableError("disk full"))
                          : absl::StatusOr<bool>(true);
  });
  EXPECT_TRUE(absl::IsUnavailable(stopped.status())) << stopped.status();
  EXPECT_EQ(calls, 2);
  ASSERT_TRUE(std::filesystem::exists(spool_dir));
  // Next time: the second is refused for good (dropped), the third delivered.
  std::vector<int64_t> seqs;
  auto delivered = DeliverLeftoverSpool(spool_dir, [&](const api::AgentBatch& batch) {
    seqs.push_back(batch.seq);
    return batch.seq == 2 ? absl::StatusOr<bool>(absl::InvalidArgumentError("bad batch"))
                          : absl::StatusOr<bool>(true);
  });
  ASSERT_TRUE(delivered.ok()) << delivered.status();
  EXPECT_EQ(*delivered, 1);
  EXPECT_EQ(seqs, (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(std::filesystem::exists(spool_dir));
}

TEST(RemoteSinkTest, ALiveAgentsSpoolIsNotTaken) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/live";
  auto sink = RemoteSink::Create(Unreachable(spool_dir, "live"));
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE((*sink)->PutLogs(Lines(1)).ok());
  auto delivered = DeliverLeftoverSpool(
      spool_dir, [](const api::AgentBatch&) { return absl::StatusOr<bool>(true); });
  EXPECT_TRUE(absl::IsFailedPrecondition(delivered.status())) << delivered.status();
  EXPECT_EQ((*sink)->pending(), 1);
}

}  // namespace
}  // namespace trainwatch::agent
