#include "app/archiver.h"

#include "gtest/gtest.h"
#include "query/store_reader.h"
#include "store/test_util.h"

namespace trainwatch::app {
namespace {

constexpr int64_t kT0 = 1736942400000;

// With --archive the writer's retention keeps what the archive has not taken:
// everything until the first pass, then from where the oldest job not
// archived complete stops, and never more than the settle time back.
TEST(ArchiverTest, TheDataFolderHoldsWhatTheArchiveHasNotTaken) {
  store::testing::TempDir dir;
  util::FakeClock clock(kT0);
  auto db = store::testing::OpenWriterOrDie(dir.path() + "/data", &clock);
  ASSERT_NE(db, nullptr);
  query::StoreReader reader(*db);
  model::JobRecord job;
  job.name = "held-1";
  job.creation_ms = kT0;
  ASSERT_TRUE(db->CreateJob(job).ok());
  model::SampleBatch batch;
  batch.series.push_back({*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "loss",
                                                {{"TrainingJobName", "held-1"}}),
                          1, {{kT0, 1}, {kT0 + 1000, 2}}, {}, {}});
  ASSERT_TRUE(db->PutSamples(batch).ok());
  auto target = OpenArchive(dir.path() + "/archive");
  ASSERT_TRUE(target.ok());
  ArchiverOptions options;
  options.clock = &clock;
  options.settle_ms = 60'000;
  options.hold = db.get();
  Archiver archiver(&reader, &reader, &reader, target->get(), options);
  EXPECT_EQ(db->retention_hold_ms(), 0);  // nothing known yet: everything held

  clock.AdvanceMs(10 * 60'000);
  ASSERT_TRUE(archiver.Pass({}).ok());
  EXPECT_EQ(db->retention_hold_ms(), kT0 + 9 * 60'000);  // the running job: up to the settle time

  // Ended a settle time ago: archived complete; what came since the settle
  // time before now stays held for the next pass.
  job.status = model::JobStatus::kCompleted;
  job.training_end_ms = kT0 + 5'000;
  ASSERT_TRUE(db->UpdateJob(job).ok());
  clock.AdvanceMs(10 * 60'000);
  auto pass = archiver.Pass({});
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(pass->jobs.size(), 1u);
  EXPECT_TRUE(pass->jobs[0].complete);
  EXPECT_EQ(db->retention_hold_ms(), kT0 + 19 * 60'000);
  EXPECT_EQ(archiver.counts().passes, 2);
  EXPECT_EQ(archiver.counts().segments, 1);  // nothing came after the first segment
}

}  // namespace
}  // namespace trainwatch::app
