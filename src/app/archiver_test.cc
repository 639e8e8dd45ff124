#include "app/archiver.h"

#include "gtest/gtest.h"
#include "query/store_reader.h"
#include "ingest/ingest.h"
#include "model/log_event.h"
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

// With the server's ingest, data that comes for a window after a pass read
// it (stamped long ago, or for a job archived complete) reaches the archive
// as a late segment; readers give every sample and event once.
TEST(ArchiverTest, DataThatComesAfterItsWindowWasReadIsArchivedLate) {
  store::testing::TempDir dir;
  util::FakeClock clock(kT0);
  auto db = store::testing::OpenWriterOrDie(dir.path() + "/data", &clock);
  ASSERT_NE(db, nullptr);
  ingest::Ingest ingest(db.get());
  query::StoreReader reader(*db);
  archive::LateJournalOptions late_options;
  late_options.clock = &clock;
  auto journal = archive::LateJournal::Open(dir.path() + "/data/archive-late", late_options);
  ASSERT_TRUE(journal.ok()) << journal.status();
  ingest.Subscribe(journal->get());
  model::JobRecord job;
  job.name = "late-1";
  job.creation_ms = kT0;
  ASSERT_TRUE(ingest.CreateJob(job).ok());
  const model::SeriesKey loss =
      *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "loss", {{"TrainingJobName", "late-1"}});
  auto put = [&](int64_t t_ms, double v) {
    model::SampleBatch batch;
    batch.series.push_back({loss, 1, {{t_ms, v}}, {}, {}});
    ASSERT_TRUE(ingest.Put(batch).ok());
  };
  const model::LogStreamId stream{std::string(model::kTrainingJobsLogGroup), "late-1/algo-1-1"};
  put(kT0, 1);
  put(kT0 + 1000, 2);
  ASSERT_TRUE(ingest.PutLogs({stream, {{kT0, "first"}}}).ok());

  auto target = OpenArchive(dir.path() + "/archive");
  ASSERT_TRUE(target.ok());
  ArchiverOptions options;
  options.clock = &clock;
  options.settle_ms = 60'000;
  options.hold = db.get();
  options.ingest = &ingest;
  options.late = journal->get();
  options.store = &reader;
  Archiver archiver(&reader, &reader, &reader, target->get(), options);
  clock.AdvanceMs(10 * 60'000);
  auto pass = archiver.Pass({});
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_TRUE(pass->failures.empty()) << pass->failures[0];
  ASSERT_EQ(pass->jobs.size(), 1u);
  EXPECT_EQ(pass->jobs[0].samples, 2);
  EXPECT_EQ(pass->jobs[0].log_events, 1);

  // Late: stamped in the window archived. On time: after the pass's cut.
  put(kT0 + 500, 1.5);
  ASSERT_TRUE(ingest.PutLogs({stream, {{kT0 + 500, "late line"}}}).ok());
  put(kT0 + 570'000, 3);
  clock.AdvanceMs(10 * 60'000);
  pass = archiver.Pass({});
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_TRUE(pass->failures.empty()) << pass->failures[0];
  ASSERT_EQ(pass->jobs.size(), 2u);  // the window, then the late segment
  EXPECT_EQ(pass->jobs[0].samples, 1);
  ASSERT_EQ(pass->jobs[1].segments.size(), 1u);
  EXPECT_TRUE(pass->jobs[1].segments[0].starts_with("late/"));
  EXPECT_EQ(pass->jobs[1].samples, 1);
  EXPECT_EQ(pass->jobs[1].log_events, 1);

  // Archived complete; then one more sample for it.
  job.status = model::JobStatus::kCompleted;
  job.training_end_ms = clock.NowMs();
  ASSERT_TRUE(ingest.UpdateJob(job).ok());
  clock.AdvanceMs(10 * 60'000);
  pass = archiver.Pass({});
  ASSERT_TRUE(pass.ok());
  put(kT0 + 2000, 2.5);
  clock.AdvanceMs(10 * 60'000);
  // A pass stopped before it reads keeps what is journaled for the next one.
  std::stop_source stopped;
  stopped.request_stop();
  ASSERT_TRUE(archiver.Pass({}, nullptr, stopped.get_token()).ok());
  EXPECT_EQ(archiver.counts().late_pending, 1);
  pass = archiver.Pass({});
  ASSERT_TRUE(pass.ok());
  ASSERT_TRUE(pass->failures.empty()) << pass->failures[0];
  ASSERT_EQ(pass->jobs.size(), 1u);
  EXPECT_EQ(pass->jobs[0].samples, 1);
  EXPECT_EQ(archiver.counts().late_segments, 2);
  EXPECT_EQ(archiver.counts().late_pending, 0);

  archive::ArchiveReader archived(target->get());
  auto loaded = archived.Load("late-1");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_NE(*loaded, nullptr);
  ASSERT_EQ((*loaded)->series.size(), 1u);
  std::vector<int64_t> times;
  for (const query::StoredRow& r : (*loaded)->series[0].rows) times.push_back(r.t_ms - kT0);
  EXPECT_EQ(times, (std::vector<int64_t>{0, 500, 1000, 2000, 570'000}));
  auto logs = archived.LoadLogs("late-1");
  ASSERT_TRUE(logs.ok());
  ASSERT_EQ((*logs)->streams.size(), 1u);
  std::vector<std::string> lines;
  for (const query::StoredLogEvent& e : (*logs)->streams.begin()->second) lines.push_back(e.message);
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "late line"}));
  ingest.Unsubscribe(journal->get());
}

}  // namespace
}  // namespace trainwatch::app
