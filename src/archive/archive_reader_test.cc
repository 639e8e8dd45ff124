#include "archive/archive_reader.h"

#include <algorithm>

#include "archive/job_archive.h"
#include "archive/local_folder_store.h"
#include "gtest/gtest.h"
#include "query/store_reader.h"
#include "store/test_util.h"

namespace trainwatch::archive {
namespace {

constexpr int64_t kT0 = 1736942400000;

// A job's loss (TrainingJobName) and CPU (Host), a sample a second for ten
// minutes, archived when it ended; then the data folder keeps raw samples an
// hour, and three hours pass.
class ArchiveReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = store::testing::OpenWriterOrDie(dir_.path() + "/data", &clock_);
    ASSERT_NE(db_, nullptr);
    reader_ = std::make_unique<query::StoreReader>(*db_);
    auto folder = LocalFolderStore::Open(dir_.path() + "/archive");
    ASSERT_TRUE(folder.ok());
    folder_ = *std::move(folder);
    job_.name = "mnist-2";
    job_.creation_ms = kT0;
    job_.step_metric = "step";
    ASSERT_TRUE(db_->CreateJob(job_).ok());
    model::SampleBatch batch;
    model::SeriesSamples loss{*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss",
                                                    {{"TrainingJobName", job_.name}}),
                              1, {}, {}, {}};
    model::SeriesSamples step{*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "step",
                                                    {{"TrainingJobName", job_.name}}),
                              1, {}, {}, {}};
    model::SeriesSamples cpu{*model::MakeSeriesKey("trainwatch/Profiler", "CPUUtilization",
                                                   {{"Host", "mnist-2/algo-1"}}),
                             1, {}, {}, {}};
    for (int s = 0; s < 600; ++s) {
      loss.samples.push_back({kT0 + s * 1000, 1.0 / (s + 1)});
      step.samples.push_back({kT0 + s * 1000, static_cast<double>(s)});
      cpu.samples.push_back({kT0 + s * 1000, static_cast<double>(s % 100)});
    }
    batch.series = {loss, step, cpu};
    clock_.AdvanceMs(601'000);
    ASSERT_TRUE(db_->PutSamples(batch).ok());
    job_.status = model::JobStatus::kCompleted;
    ASSERT_TRUE(db_->UpdateJob(job_).ok());
    ArchiveOptions options;
    options.now_ms = clock_.NowMs();
    ASSERT_TRUE(ArchiveJob({reader_.get(), reader_.get()}, job_, folder_.get(), options).ok());
    ASSERT_TRUE(db_->AddRetentionRule("*", "raw=1h").ok());
    clock_.AdvanceMs(3 * 3'600'000);
    ASSERT_TRUE(db_->CompactAll().ok());
  }

  query::ListMetricsQuery ByJob() {
    query::ListMetricsQuery q;
    q.dimensions.push_back({"TrainingJobName", job_.name});
    return q;
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{kT0};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<query::StoreReader> reader_;
  std::unique_ptr<LocalFolderStore> folder_;
  model::JobRecord job_;
};

TEST_F(ArchiveReaderTest, RawReadsOfAnArchivedJobComeBackWholeAfterRetentionDroppedThem) {
  auto local = reader_->ReadRaw(ByJob(), 0, clock_.NowMs(), nullptr);
  ASSERT_TRUE(local.ok());
  size_t local_samples = 0;
  for (const auto& s : *local) local_samples += s.samples.size();
  EXPECT_EQ(local_samples, 0u);  // the data folder dropped them

  ArchiveReader archive(folder_.get());
  ArchiveBackedMetricsReader reader(reader_.get(), reader_.get(), &archive);
  auto raw = reader.ReadRaw(ByJob(), 0, clock_.NowMs(), nullptr);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->size(), 2u);
  EXPECT_EQ((*raw)[1].key.metric, "train:loss");
  ASSERT_EQ((*raw)[1].samples.size(), 600u);
  EXPECT_EQ((*raw)[1].samples[1], (model::Sample{kT0 + 1000, 0.5}));

  // The profiler's series, by host.
  query::ListMetricsQuery by_host;
  by_host.dimensions.push_back({"Host", "mnist-2/algo-1"});
  auto cpu = reader.ReadRaw(by_host, kT0 + 100'000, kT0 + 200'000, nullptr);
  ASSERT_TRUE(cpu.ok());
  ASSERT_EQ(cpu->size(), 1u);
  EXPECT_EQ((*cpu)[0].samples.size(), 100u);

  // A series of no archived job: the data folder's answer.
  query::ListMetricsQuery other;
  other.dimensions.push_back({"TrainingJobName", "not-archived"});
  auto none = reader.ReadRaw(other, 0, clock_.NowMs(), nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Samples in both the data folder and the archive are given once; those only
// in the folder (sent after the archive was written) are given too.
TEST_F(ArchiveReaderTest, SamplesInBothPlacesAreGivenOnce) {
  model::SampleBatch batch;
  model::SeriesSamples loss{*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss",
                                                  {{"TrainingJobName", job_.name}}),
                            1, {}, {}, {}};
  // Two archived samples again (the same time and value), and a new one.
  loss.samples = {{kT0 + 1000, 0.5}, {kT0 + 2000, 1.0 / 3}, {kT0 + 2000, 7.0}};
  batch.series = {loss};
  ASSERT_TRUE(db_->PutSamples(batch).ok());
  ArchiveReader archive(folder_.get());
  ArchiveBackedMetricsReader reader(reader_.get(), reader_.get(), &archive);
  query::ListMetricsQuery q = ByJob();
  q.metric = "train:loss";
  auto raw = reader.ReadRaw(q, kT0, kT0 + 3000, nullptr);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->size(), 1u);
  std::vector<model::Sample> samples = (*raw)[0].samples;
  std::sort(samples.begin(), samples.end(), [](const model::Sample& a, const model::Sample& b) {
    return a.t_ms != b.t_ms ? a.t_ms < b.t_ms : a.value < b.value;
  });
  EXPECT_EQ(samples, (std::vector<model::Sample>{
                         {kT0, 1.0}, {kT0 + 1000, 0.5}, {kT0 + 2000, 1.0 / 3}, {kT0 + 2000, 7.0}}));
}

TEST_F(ArchiveReaderTest, ChartsOfAnArchivedJobAreDrawnFromEverySampleByTimeAndByStep) {
  query::ChartQuery q;
  q.metric = {"/aws/sagemaker/TrainingJobs", "train:loss", {{"TrainingJobName", job_.name}}};
  q.start_ms = kT0;
  q.end_ms = kT0 + 600'000;
  q.width = 200;
  auto local = reader_->Chart(q);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_GT(local->tier_period_s, 0);  // minutes from the rollups

  ArchiveReader archive(folder_.get());
  ArchiveBackedMetricsReader reader(reader_.get(), reader_.get(), &archive);
  auto chart = reader.Chart(q);
  ASSERT_TRUE(chart.ok()) << chart.status();
  EXPECT_EQ(chart->tier_period_s, 0);
  EXPECT_TRUE(chart->raw);  // 600 points, at most 4 a column: every point
  EXPECT_EQ(chart->x.size(), 600u);
  EXPECT_EQ(chart->y.front(), 1.0);
  EXPECT_EQ(chart->y.back(), 1.0 / 600);

  q.x = query::ChartX::kStep;
  q.job = job_.name;
  q.width = 1000;
  auto by_step = reader.Chart(q);
  ASSERT_TRUE(by_step.ok()) << by_step.status();
  EXPECT_EQ(by_step->x_start, 0);
  EXPECT_EQ(by_step->x_end, 600);
  ASSERT_EQ(by_step->x.size(), 600u);
  EXPECT_TRUE(by_step->raw);
  EXPECT_EQ(by_step->x[10], 10);
  EXPECT_EQ(by_step->y[10], 1.0 / 11);
}

}  // namespace
}  // namespace trainwatch::archive
