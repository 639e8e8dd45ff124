#include "archive/archive_reader.h"

#include <string>

#include <algorithm>

#include "archive/archive_backed_logs.h"
#include "archive/job_archive.h"
#include "archive/local_folder_store.h"
#include "gtest/gtest.h"
#include "query/store_reader.h"
#include "store/test_util.h"

namespace trainwatch::archive {
namespace {

constexpr int64_t kT0 = 1736942400000;

// A job's loss (TrainingJobName) and CPU (Host), a sample and a line of
// output a second for ten minutes, archived when it ended; then the data
// folder keeps raw samples an hour, and three hours pass.
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
    job_.log_stream = "mnist-2/algo-1-1736942400";
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
    model::LogBatch lines{{"/aws/sagemaker/TrainingJobs", job_.log_stream}, {}};
    for (int s = 0; s < 600; ++s) {
      lines.events.push_back({kT0 + s * 1000, "line " + std::to_string(s)});
    }
    clock_.AdvanceMs(601'000);
    ASSERT_TRUE(db_->PutSamples(batch).ok());
    ASSERT_TRUE(db_->PutLogs(lines).ok());
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

// A job of the same name that is not the archived one (an archive shared by
// folders, a name used again) reads from the data folder alone.
TEST_F(ArchiveReaderTest, AnotherJobOfTheArchivedNameIsNotGivenItsSamples) {
  model::JobRecord again = job_;
  again.creation_ms = kT0 + 4 * 3'600'000LL;
  ASSERT_TRUE(db_->UpdateJob(again).ok());
  ArchiveReader archive(folder_.get());
  ArchiveBackedMetricsReader reader(reader_.get(), reader_.get(), &archive);
  auto raw = reader.ReadRaw(ByJob(), 0, clock_.NowMs(), nullptr);
  ASSERT_TRUE(raw.ok()) << raw.status();
  size_t samples = 0;
  for (const auto& s : *raw) samples += s.samples.size();
  EXPECT_EQ(samples, 0u) << "the archived job's samples given as another job's";
  ASSERT_TRUE(db_->UpdateJob(job_).ok());  // the archived job itself: read back
  ArchiveReader fresh(folder_.get());
  ArchiveBackedMetricsReader same(reader_.get(), reader_.get(), &fresh);
  raw = same.ReadRaw(ByJob(), 0, clock_.NowMs(), nullptr);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->size(), 2u);
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

// Log retention drops the first half of the job's output; reading its
// stream gives the archive's events, then the folder's, whichever way it is
// paged.
TEST_F(ArchiveReaderTest, AStreamReadsWholeAfterLogRetentionDroppedItsOldestEvents) {
  ASSERT_TRUE(db_->SetLogRetention("/aws/sagemaker/TrainingJobs", 1).ok());
  clock_.AdvanceMs(kT0 + 300'000 + 86'400'000 - clock_.NowMs());  // cutoff: line 300
  ASSERT_TRUE(db_->Maintain().ok());
  query::LogReadQuery all;
  all.stream = {"/aws/sagemaker/TrainingJobs", job_.log_stream};
  auto local = reader_->ReadLogStream(all);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(local->size(), 300u);
  EXPECT_EQ(local->front().message, "line 300");

  ArchiveReader archive(folder_.get());
  ArchiveBackedLogsReader reader(reader_.get(), reader_.get(), &archive);
  auto expect_lines = [](const std::vector<query::StoredLogEvent>& events, int first, int count) {
    ASSERT_EQ(events.size(), static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      EXPECT_EQ(events[i].message, "line " + std::to_string(first + i));
      if (i > 0) {
        EXPECT_LT(events[i - 1].position, events[i].position);
      }
    }
  };
  // Forward, 70 a page (pages across the archive/folder boundary), and by
  // bytes (about 10 events a page).
  for (auto [limit, max_bytes] : {std::pair<size_t, size_t>{70, query::kMaxLogPageBytes},
                                  std::pair<size_t, size_t>{10000, 10 * 34}}) {
    query::LogReadQuery q = all;
    q.limit = limit;
    q.max_bytes = max_bytes;
    std::vector<query::StoredLogEvent> got;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = reader.ReadLogStream(q);
      ASSERT_TRUE(page.ok()) << page.status();
      if (page->empty()) break;
      EXPECT_LE(page->size(), limit);
      got.insert(got.end(), page->begin(), page->end());
      q.from = page->back().position;
      q.from->seq += 1;
    }
    expect_lines(got, 0, 600);
  }
  // Backward from the end, 250 a page.
  {
    query::LogReadQuery q = all;
    q.forward = false;
    q.limit = 250;
    std::vector<query::StoredLogEvent> got;
    for (int pages = 0; pages < 10; ++pages) {
      auto page = reader.ReadLogStream(q);
      ASSERT_TRUE(page.ok()) << page.status();
      if (page->empty()) break;
      got.insert(got.begin(), page->begin(), page->end());
      q.from = page->front().position;
    }
    expect_lines(got, 0, 600);
  }
  // A window across the boundary.
  query::LogReadQuery window = all;
  window.start_ms = kT0 + 250'000;
  window.end_ms = kT0 + 350'000;
  auto part = reader.ReadLogStream(window);
  ASSERT_TRUE(part.ok());
  expect_lines(*part, 250, 100);

  // Once the folder has none left, all from the archive; the stream stays.
  clock_.AdvanceMs(3'600'000);
  ASSERT_TRUE(db_->Maintain().ok());
  local = reader_->ReadLogStream(all);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->empty());
  auto archived = reader.ReadLogStream(all);
  ASSERT_TRUE(archived.ok());
  expect_lines(*archived, 0, 600);

  // A job the folder knows as running is not looked for in the archive.
  job_.status = model::JobStatus::kInProgress;
  ASSERT_TRUE(db_->UpdateJob(job_).ok());
  auto running = reader.ReadLogStream(all);
  ASSERT_TRUE(running.ok());
  EXPECT_TRUE(running->empty());
  job_.status = model::JobStatus::kCompleted;
  ASSERT_TRUE(db_->UpdateJob(job_).ok());

  // A stream deleted from the folder stays deleted.
  ASSERT_TRUE(db_->DeleteLogStream(all.stream).ok());
  EXPECT_TRUE(absl::IsNotFound(reader.ReadLogStream(all).status()));
}

// The archive's objects read, by key.
class CountingStore final : public model::ObjectStore {
 public:
  explicit CountingStore(model::ObjectStore* store) : store_(store) {}
  absl::Status Put(std::string_view key, std::string_view data) override {
    return store_->Put(key, data);
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    gets.emplace_back(key);
    return store_->Get(key);
  }
  absl::StatusOr<std::vector<std::string>> List(std::string_view prefix) override {
    return store_->List(prefix);
  }
  std::string Describe() const override { return store_->Describe(); }
  std::vector<std::string> gets;

 private:
  model::ObjectStore* store_;
};

// Without a retention on the group nothing was dropped: the archive is not
// read. With one, the job's logs are read once for every page, and whether
// the job is archived complete is asked once.
TEST_F(ArchiveReaderTest, TheArchiveIsReadOnlyWhereRetentionCanHaveDroppedEvents) {
  CountingStore counting(folder_.get());
  ArchiveReader archive(&counting);
  ArchiveBackedLogsReader reader(reader_.get(), reader_.get(), &archive);
  query::LogReadQuery page;
  page.stream = {"/aws/sagemaker/TrainingJobs", job_.log_stream};
  page.limit = 100;
  for (int i = 0; i < 3; ++i) {
    auto events = reader.ReadLogStream(page);
    ASSERT_TRUE(events.ok()) << events.status();
    EXPECT_EQ(events->size(), 100u);
  }
  EXPECT_TRUE(counting.gets.empty()) << counting.gets.front();

  ASSERT_TRUE(db_->SetLogRetention("/aws/sagemaker/TrainingJobs", 30).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader.ReadLogStream(page).ok());
  const auto job_json = std::count_if(counting.gets.begin(), counting.gets.end(),
                                      [](const std::string& k) { return k.ends_with("job.json"); });
  const auto logs = std::count_if(counting.gets.begin(), counting.gets.end(), [](const std::string& k) {
    return k.ends_with("logs.jsonl.gz");
  });
  EXPECT_EQ(job_json, 1);
  EXPECT_EQ(logs, 1);
}

}  // namespace
}  // namespace trainwatch::archive
