// The data format: the format file of a data folder (data_folder.h), and a
// folder written by each format this build reads (tests/testdata/format_v<N>)
// that it must still open, query and append to.
//
// The fixture is written by FormatFixture.Write, skipped unless
// TW_WRITE_FORMAT_FIXTURE names the folder to write
// (tests/testdata/format_v1/README.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/data_folder.h"
#include "store/db.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::store {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

DbOptions Options(const std::string& dir, OpenMode mode, util::Clock* clock) {
  DbOptions o;
  o.data_dir = dir;
  o.mode = mode;
  o.clock = clock;
  o.background_thread = false;
  return o;
}

// ---------------------------------------------------------------------------
// The format file

class DataFormatTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  util::FakeClock clock_{1736942400000};
  std::string data() const { return dir_.Sub("data"); }
  absl::StatusOr<std::unique_ptr<Db>> Open(OpenMode mode) {
    return Db::Open(Options(data(), mode, &clock_));
  }
  // A folder written by this build, closed, holding one log event.
  void MakeFolder() {
    auto db = Open(OpenMode::kWriter);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->PutLogs({{"g", "s"}, {{1, "one"}}}).ok());
  }
};

TEST_F(DataFormatTest, ANewFolderGetsTheFormatFile) {
  MakeFolder();
  DataFolderPaths paths(data());
  EXPECT_EQ(ReadText(paths.format), "trainwatch-data-format 2\n");
  EXPECT_FALSE(fs::exists(paths.format + ".tmp"));
  auto format = ReadDataFormat(paths);
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(*format, std::optional<int>(kDataFormatVersion));
  // Every mode opens it, and the file stays as it was.
  for (OpenMode mode : {OpenMode::kReader, OpenMode::kWriterIfFree, OpenMode::kWriter}) {
    auto db = Open(mode);
    EXPECT_TRUE(db.ok()) << db.status();
  }
  EXPECT_EQ(ReadText(paths.format), "trainwatch-data-format 2\n");
}

TEST_F(DataFormatTest, AFolderOfAnotherFormatIsRefusedNamingBothFormatsAndLeftAlone) {
  MakeFolder();
  DataFolderPaths paths(data());
  for (int version : {3, 0, 17}) {
    const std::string text = absl::StrFormat("trainwatch-data-format %d\n", version);
    WriteText(paths.format, text);
    for (OpenMode mode : {OpenMode::kWriter, OpenMode::kReader, OpenMode::kWriterIfFree}) {
      auto db = Open(mode);
      ASSERT_FALSE(db.ok()) << version;
      EXPECT_TRUE(absl::IsFailedPrecondition(db.status())) << db.status();
      const std::string m(db.status().message());
      EXPECT_THAT(
          m, HasSubstr(absl::StrFormat("\"%s\" is in trainwatch data format %d", data(), version)));
      EXPECT_THAT(m, HasSubstr("this build of trainwatch reads data formats 1 and 2 only"));
      EXPECT_THAT(
          m, HasSubstr(absl::StrFormat("a trainwatch build that reads data format %d", version)));
      EXPECT_THAT(m, HasSubstr(version > 2 ? "newer" : "older"));
      EXPECT_THAT(m, HasSubstr("--data"));
      EXPECT_EQ(ReadText(paths.format), text);
    }
  }
  // The exact words, once.
  WriteText(paths.format, "trainwatch-data-format 3\n");
  EXPECT_EQ(Open(OpenMode::kWriter).status().message(),
            absl::StrFormat(
                "the data folder \"%s\" is in trainwatch data format 3 (written by a newer "
                "trainwatch), and this build of trainwatch reads data formats 1 and 2 only; open "
                "it with a trainwatch build that reads data format 3, or pass another --data "
                "folder (this one was left as it is)",
                data()));
  // Back to this build's format: it opens again, with its data.
  WriteText(paths.format, "trainwatch-data-format 2\n");
  auto db = Open(OpenMode::kWriter);
  ASSERT_TRUE(db.ok()) << db.status();
  auto view = (*db)->View();
  ASSERT_TRUE(view.ok());
  auto stream = view->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 1u);
}

TEST_F(DataFormatTest, ANewerFolderWithoutADatabaseIsRefusedNotCreated) {
  // A later format may lay the folder out otherwise: no db/ to find.
  fs::create_directories(data());
  DataFolderPaths paths(data());
  WriteText(paths.format, "trainwatch-data-format 3\n");
  for (OpenMode mode : {OpenMode::kWriter, OpenMode::kReader, OpenMode::kWriterIfFree}) {
    auto db = Open(mode);
    ASSERT_FALSE(db.ok());
    EXPECT_TRUE(absl::IsFailedPrecondition(db.status())) << db.status();
  }
  EXPECT_FALSE(fs::exists(paths.db));
  EXPECT_FALSE(fs::exists(paths.writer_lock));
}

TEST_F(DataFormatTest, AFolderFromBeforeTheFormatFileOpensAndItsNextWriterMarksIt) {
  MakeFolder();
  DataFolderPaths paths(data());
  ASSERT_TRUE(fs::remove(paths.format));  // as an older build left it
  {
    auto reader = Open(OpenMode::kReader);  // readers never write it
    ASSERT_TRUE(reader.ok()) << reader.status();
    auto view = (*reader)->View();
    ASSERT_TRUE(view.ok());
    auto stream = view->GetLogStream("g", "s");
    ASSERT_TRUE(stream.ok() && stream->has_value());
    EXPECT_EQ((*stream)->event_count, 1u);
  }
  EXPECT_FALSE(fs::exists(paths.format));
  {
    auto writer = Open(OpenMode::kWriter);
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ(ReadText(paths.format), "trainwatch-data-format 2\n");
    ASSERT_TRUE((*writer)->PutLogs({{"g", "s"}, {{2, "two"}}}).ok());
  }
  auto db = Open(OpenMode::kReader);
  ASSERT_TRUE(db.ok()) << db.status();
  auto view = (*db)->View();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->GetLogStream("g", "s")->value().event_count, 2u);
}

TEST_F(DataFormatTest, ADamagedFormatFileIsReportedWithTheLineItShouldHold) {
  MakeFolder();
  DataFolderPaths paths(data());
  for (std::string text :
       {"", "trainwatch-data-format\n", "trainwatch-data-format x1\n",
        "trainwatch-data-format -1\n", "trainwatch-data-format 99999999999\n", "format 1\n"}) {
    WriteText(paths.format, text);
    auto db = Open(OpenMode::kReader);
    ASSERT_FALSE(db.ok()) << text;
    EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
    EXPECT_THAT(db.status().message(), HasSubstr(paths.format));
    EXPECT_THAT(db.status().message(), HasSubstr("\"trainwatch-data-format 2\""));
  }
  // Lines after the first, and a CR LF ending, are fine.
  WriteText(paths.format, "trainwatch-data-format 2\r\nsomething a later build adds\n");
  EXPECT_TRUE(Open(OpenMode::kReader).ok());
}

// ---------------------------------------------------------------------------
// tests/testdata/format_v<N>: what each holds (FormatFixture.Write writes it).

// The fixture's "now": 2025-06-01T00:00:00Z. Opening it with another clock
// would apply retention as of then.
constexpr int64_t kGen = 1748736000000;
constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;

const char kJobName[] = "fixture-1";
const char kLogStream[] = "fixture-1/algo-1-1748728800";
const char kAgent[] = "fixture-agent";
constexpr int64_t kAgentSeq = 7;

model::SeriesKey LossKey() {
  return *model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), "train:loss",
                               {{"TrainingJobName", kJobName}}, "None");
}
model::SeriesKey BatchKey() {
  return *model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), "batch_size",
                               {{"TrainingJobName", kJobName}}, "Count");
}
model::SeriesKey GpuKey() {
  return *model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), "GPUUtilization",
                               {{"Host", "fixture-1/algo-1"}}, "Percent");
}

// train:loss has an hour of samples (every 10 s, value offset + i % 6) at
// each of these ages. Retention (the defaults) left each hour in `finest`
// and the coarser tiers only: the fixture's 60 s, 300 s and 3600 s tiers
// each hold data that no finer tier does.
struct Segment {
  int64_t start_ms;
  double offset;
  Tier finest;
};
const Segment kSegments[] = {
    {kGen - 2 * kHour, 0, Tier::kRaw},
    {kGen - 10 * kDay, 10, Tier::k60},
    {kGen - 30 * kDay, 20, Tier::k300},
    {kGen - 200 * kDay, 30, Tier::k3600},
};
// And 30 samples not sealed yet (head records): every 10 s from kGen - 5 min,
// value 40 + i % 6.
constexpr int64_t kHeadStart = kGen - 5 * kMinute;

model::JobRecord FixtureJob() {
  model::JobRecord j;
  j.name = kJobName;
  j.arn = model::TrainingJobArn(kJobName);
  j.status = model::JobStatus::kCompleted;
  j.secondary_status = model::SecondaryStatus::kCompleted;
  j.creation_ms = kGen - 2 * kHour;
  j.training_start_ms = kGen - 2 * kHour + kSecond;
  j.training_end_ms = kGen - kHour;
  j.last_modified_ms = kGen - kHour;
  j.transitions = {
      {model::SecondaryStatus::kStarting, kGen - 2 * kHour, kGen - 2 * kHour + kSecond,
       "Starting the training job"},
      {model::SecondaryStatus::kTraining, kGen - 2 * kHour + kSecond, kGen - kHour,
       "Training image download completed. Training in progress."},
      {model::SecondaryStatus::kCompleted, kGen - kHour, kGen - kHour, "Training job completed"},
  };
  j.final_metrics = {{"train:loss", 2.0, kGen - kHour - 10 * kSecond}};
  j.metric_definitions = {{"train:loss", "loss: ([0-9.eE+-]+)"}};
  j.max_runtime_s = 7200;
  j.command = {"python3", "train.py", "--epochs", "3"};
  j.working_dir = "/home/user/fixture";
  j.hyperparameters = {{"epochs", "3"}, {"lr", "0.01"}};
  j.environment = {{"CUDA_VISIBLE_DEVICES", "0"}};
  j.profiling_interval_ms = 500;
  j.host_index = 1;
  j.log_stream = kLogStream;
  j.exit_code = 0;
  j.runner = {"fixture-host", "4b8d4f1e-0000-4000-8000-000000000001", 4242, 123456};
  return j;
}

// The log events in (t_ms, arrival) order, with their ingestion times: the
// first batch arrived at kGen - 2 h + 1 s, the second (with the delivery
// kAgent/kAgentSeq) at kGen - 90 min.
struct FixtureEvent {
  int64_t t_ms;
  int64_t ingestion_ms;
  std::string message;
};
const std::vector<model::LogEvent> kLogBatch1 = {
    {kGen - 2 * kHour, "Starting training"},
    {kGen - 2 * kHour, "epoch 1"},
    {kGen - 2 * kHour + 500, "loss: 2.5"},
};
const std::vector<model::LogEvent> kLogBatch2 = {
    {kGen - 2 * kHour + 250, "a late line \xc3\xbc"},
    {kGen - 90 * kMinute, "done"},
};
const std::vector<FixtureEvent> kEvents = {
    {kGen - 2 * kHour, kGen - 2 * kHour + kSecond, "Starting training"},
    {kGen - 2 * kHour, kGen - 2 * kHour + kSecond, "epoch 1"},
    {kGen - 2 * kHour + 250, kGen - 90 * kMinute, "a late line \xc3\xbc"},
    {kGen - 2 * kHour + 500, kGen - 2 * kHour + kSecond, "loss: 2.5"},
    {kGen - 90 * kMinute, kGen - 90 * kMinute, "done"},
};

// An hour of samples every 10 s from `start`: offset + i % 6.
model::SeriesSamples LossHour(int64_t start, double offset) {
  model::SeriesSamples s{LossKey(), 1, {}, {}, {}};
  for (int i = 0; i < 360; ++i) s.samples.push_back({start + i * 10 * kSecond, offset + i % 6});
  return s;
}

// Writes the fixture into `dir` (which must not exist yet).
void WriteFixture(const std::string& dir) {
  util::FakeClock clock(kGen - 2 * kHour);
  DbOptions o = Options(dir, OpenMode::kWriter, &clock);
  o.command = "store_test --gtest_filter=FormatFixture.Write";
  {
    auto opened = Db::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status();
    Db& db = **opened;
    model::JobRecord job = FixtureJob();
    model::JobRecord created = job;
    created.status = model::JobStatus::kInProgress;
    created.secondary_status = model::SecondaryStatus::kStarting;
    created.training_start_ms.reset();
    created.training_end_ms.reset();
    created.last_modified_ms = created.creation_ms;
    created.transitions = {{model::SecondaryStatus::kStarting, kGen - 2 * kHour, std::nullopt,
                            "Starting the training job"}};
    created.final_metrics.clear();
    created.exit_code.reset();
    ASSERT_TRUE(db.CreateJob(created).ok());

    clock.SetNowMs(kGen - 2 * kHour + kSecond);
    ASSERT_TRUE(
        db.PutLogs({{std::string(model::kTrainingJobsLogGroup), kLogStream}, kLogBatch1}).ok());
    clock.SetNowMs(kGen - 90 * kMinute);
    auto delivered =
        db.PutLogs({{std::string(model::kTrainingJobsLogGroup), kLogStream}, kLogBatch2},
                   Delivery{kAgent, kAgentSeq});
    ASSERT_TRUE(delivered.ok() && *delivered);
    clock.SetNowMs(kGen - kHour);
    ASSERT_TRUE(db.UpdateJob(job).ok());

    // Metrics, sealed into raw chunks and every rollup tier, then retention
    // as of kGen.
    clock.SetNowMs(kGen);
    for (int k = static_cast<int>(std::size(kSegments)) - 1; k >= 0; --k) {  // oldest first
      model::SampleBatch hour;
      hour.series.push_back(LossHour(kSegments[k].start_ms, kSegments[k].offset));
      ASSERT_TRUE(db.PutSamples(hour).ok());
    }
    model::SampleBatch b;
    model::SeriesSamples batch_size{BatchKey(), 1, {}, {}, {}};
    model::SeriesSamples gpu{GpuKey(), 60, {}, {}, {}};
    for (int i = 0; i < 60; ++i) {
      const int64_t t = kGen - 2 * kHour + i * kMinute;
      batch_size.weighted.push_back({t, 16.0 * (1 + i % 2), 2});
      gpu.statistic_sets.push_back({t, 60, 2700.25, 12.5, 87.75});
    }
    b.series.push_back(std::move(batch_size));
    b.series.push_back(std::move(gpu));
    ASSERT_TRUE(db.PutSamples(b).ok());
    ASSERT_TRUE(db.SealAll().ok());
    ASSERT_TRUE(db.CompactAll().ok());

    // The head: samples not sealed yet.
    model::SampleBatch head;
    head.series.push_back({LossKey(), 1, {}, {}, {}});
    for (int i = 0; i < 30; ++i) {
      head.series[0].samples.push_back({kHeadStart + i * 10 * kSecond, 40.0 + i % 6});
    }
    ASSERT_TRUE(db.PutSamples(head).ok());
  }  // a clean close: the head log is checkpointed into head records
  // What is no part of the format: RocksDB's info log, scratch and the lock.
  DataFolderPaths paths(dir);
  std::error_code ec;
  fs::remove_all(paths.readers, ec);
  fs::remove(paths.writer_lock, ec);
  for (const auto& entry : fs::directory_iterator(paths.db)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("LOG", 0) == 0) fs::remove(entry.path(), ec);
  }
}

TEST(FormatFixture, Write) {
  const char* dir = std::getenv("TW_WRITE_FORMAT_FIXTURE");
  if (dir == nullptr || *dir == '\0') {
    GTEST_SKIP() << "set TW_WRITE_FORMAT_FIXTURE=<new folder> to write the format fixture";
  }
  ASSERT_FALSE(fs::exists(dir)) << dir << " exists; the fixture is written into a new folder";
  WriteFixture(dir);
}

// The count, sum, min and max of each bucket.
struct Stats {
  double count, sum, min, max;
  friend bool operator==(const Stats&, const Stats&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Stats& s) {
    return os << "{count " << s.count << ", sum " << s.sum << ", min " << s.min << ", max " << s.max
              << "}";
  }
};

SeriesId IdOf(const ReadView& view, const model::SeriesKey& key) {
  std::vector<SeriesRef> refs;
  EXPECT_TRUE(view.FindSeries(key.ns, key.metric, key.dimensions, &key.unit, &refs).ok());
  EXPECT_EQ(refs.size(), 1u) << key.ToString();
  return refs.empty() ? 0 : refs[0].id;
}

// Buckets of `period` over [start, end) from `tier`.
std::vector<Aggregate> Buckets(const ReadView& view, SeriesId id, Tier tier, int64_t start,
                               int64_t end, int64_t period, Distribution distribution) {
  std::vector<Aggregate> buckets(static_cast<size_t>((end - start) / period));
  AggregateRequest req{.start_ms = start,
                       .end_ms = end,
                       .origin_ms = start,
                       .period_ms = period,
                       .source = tier,
                       .distribution = distribution};
  absl::Status s = view.AggregateSeries(id, req, &buckets);
  EXPECT_TRUE(s.ok()) << s;
  return buckets;
}

std::vector<Stats> StatsOf(const std::vector<Aggregate>& buckets) {
  std::vector<Stats> out;
  for (const Aggregate& a : buckets) {
    out.push_back(a.empty() ? Stats{0, 0, 0, 0} : Stats{a.count, a.ReportedSum(), a.min, a.max});
  }
  return out;
}

int Records(Db& db, kv::Cf cf) {
  int n = 0;
  auto it = db.kv().NewIterator(cf);
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  return n;
}

// What the writer test adds to a copy of the fixture.
model::SampleBatch Appended() {
  model::SampleBatch b;
  b.series.push_back({LossKey(), 1, {}, {}, {}});
  for (int i = 0; i < 6; ++i) b.series[0].samples.push_back({kGen + i * 10 * kSecond, 50.0 + i});
  return b;
}
const FixtureEvent kAppendedEvent = {kGen + kSecond, kGen, "appended"};
model::JobRecord AppendedJob() {
  model::JobRecord j = FixtureJob();
  j.name = "fixture-2";
  j.arn = model::TrainingJobArn("fixture-2");
  j.creation_ms = kGen;
  return j;
}

// Everything the fixture holds, read through `db`, with exact values; and
// what the writer test added (`appended`), before or after it sealed the
// head (`sealed`).
void ExpectFixtureContents(Db& db, bool appended = false, bool sealed = false) {
  // The column families hold what the fixture put there.
  for (kv::Cf cf : {kv::Cf::kIndex, kv::Cf::kHead, kv::Cf::kRaw, kv::Cf::kRollup60,
                    kv::Cf::kRollup300, kv::Cf::kRollup3600, kv::Cf::kLogs, kv::Cf::kJobs}) {
    if (cf == kv::Cf::kHead && sealed) {
      EXPECT_EQ(Records(db, cf), 0);
    } else {
      EXPECT_GT(Records(db, cf), 0) << kv::CfName(cf);
    }
  }
  auto delivered = db.DeliveredUpTo(kAgent);
  ASSERT_TRUE(delivered.ok()) << delivered.status();
  EXPECT_EQ(*delivered, kAgentSeq);

  auto view_or = db.View();
  ASSERT_TRUE(view_or.ok()) << view_or.status();
  const ReadView& view = *view_or;

  // The jobs, by any case of their names.
  auto job = view.GetJob("FIXTURE-1");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ(**job, FixtureJob());
  std::vector<std::string> jobs;
  ASSERT_TRUE(view.ForEachJob([&](model::JobRecord&& j) {
                    jobs.push_back(j.name);
                    return true;
                  })
                  .ok());
  if (appended) {
    EXPECT_THAT(jobs, ElementsAre("fixture-1", "fixture-2"));
    auto second = view.GetJob("fixture-2");
    ASSERT_TRUE(second.ok() && second->has_value());
    EXPECT_EQ(**second, AppendedJob());
  } else {
    EXPECT_THAT(jobs, ElementsAre("fixture-1"));
  }

  // The log events.
  auto group = view.GetLogGroup(model::kTrainingJobsLogGroup);
  ASSERT_TRUE(group.ok() && group->has_value());
  EXPECT_EQ((*group)->creation_ms, kGen - 2 * kHour + kSecond);
  auto stream = view.GetLogStream(model::kTrainingJobsLogGroup, kLogStream);
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(stream->has_value());
  const LogStreamInfo& info = **stream;
  EXPECT_EQ(info.creation_ms, kGen - 2 * kHour + kSecond);
  EXPECT_EQ(info.first_event_ms, kGen - 2 * kHour);
  EXPECT_EQ(info.last_event_ms, appended ? kGen + kSecond : kGen - 90 * kMinute);
  EXPECT_EQ(info.last_ingestion_ms, appended ? kGen : kGen - 90 * kMinute);
  EXPECT_EQ(info.event_count, appended ? 6u : 5u);
  EXPECT_EQ(info.stored_bytes, 17u + 7 + 9 + 14 + 4 + (appended ? 8 : 0));
  std::vector<std::tuple<int64_t, int64_t, std::string>> events;
  auto cursor = view.NewLogCursor(info);
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
    auto e = cursor->event();
    ASSERT_TRUE(e.ok()) << e.status();
    events.emplace_back(e->pos.t_ms, e->ingestion_ms, e->message);
  }
  ASSERT_TRUE(cursor->status().ok());
  std::vector<std::tuple<int64_t, int64_t, std::string>> want;
  std::vector<FixtureEvent> want_events = kEvents;
  if (appended) want_events.push_back(kAppendedEvent);
  for (const FixtureEvent& e : want_events) want.emplace_back(e.t_ms, e.ingestion_ms, e.message);
  EXPECT_EQ(events, want);

  // train:loss, hour by hour: each tier answers for the hours it holds, with
  // every bucket exact, and percentiles from its sketches; the tiers finer
  // than an hour's `finest` hold nothing of it.
  const SeriesId loss = IdOf(view, LossKey());
  for (const Segment& seg : kSegments) {
    const int64_t start = seg.start_ms;
    const int64_t end = start + kHour;
    for (Tier tier : {Tier::kRaw, Tier::k60, Tier::k300, Tier::k3600}) {
      SCOPED_TRACE(absl::StrFormat("hour at %d, tier %s", start, TierName(tier)));
      const bool held = static_cast<int>(tier) >= static_cast<int>(seg.finest);
      const int64_t period = tier == Tier::kRaw ? kMinute : kTierPeriodMs[static_cast<int>(tier)];
      const double minutes = static_cast<double>(period / kMinute);
      const Stats each =
          held ? Stats{6 * minutes, minutes * (15 + 6 * seg.offset), seg.offset, seg.offset + 5}
               : Stats{0, 0, 0, 0};
      EXPECT_EQ(StatsOf(Buckets(view, loss, tier, start, end, period, Distribution::kNone)),
                std::vector<Stats>(static_cast<size_t>(kHour / period), each));
      const Distribution dist = tier == Tier::kRaw ? Distribution::kExact : Distribution::kSketch;
      std::vector<Aggregate> hour = Buckets(view, loss, tier, start, end, kHour, dist);
      ASSERT_EQ(hour.size(), 1u);
      if (held) {
        EXPECT_EQ(StatsOf(hour)[0],
                  (Stats{360, 900 + 360 * seg.offset, seg.offset, seg.offset + 5}));
        ASSERT_TRUE(hour[0].HasPercentiles());
        EXPECT_EQ(hour[0].Percentile(0.5), seg.offset + 2);
        EXPECT_EQ(hour[0].Percentile(0.99), seg.offset + 5);
      } else {
        EXPECT_TRUE(hour[0].empty());
      }
    }
  }
  // The fixture's head: 30 samples, read from head records by every tier
  // (no tier holds them yet), or from the tiers once sealed.
  for (Tier tier : {Tier::kRaw, Tier::k60, Tier::k300, Tier::k3600}) {
    EXPECT_EQ(StatsOf(Buckets(view, loss, tier, kGen - kHour, kGen, kHour, Distribution::kNone)),
              (std::vector<Stats>{{30, 30 * 40 + 5 * 15, 40, 45}}))
        << TierName(tier);
  }
  size_t head_rows = 0;
  ASSERT_TRUE(
      view.ScanHeadRows(loss, INT64_MIN, INT64_MAX, [&](uint8_t, const Row&) { ++head_rows; })
          .ok());
  EXPECT_EQ(head_rows, sealed ? 0u : appended ? 36u : 30u);
  if (appended) {
    EXPECT_EQ(StatsOf(Buckets(view, loss, Tier::kRaw, kGen, kGen + kMinute, kMinute,
                              Distribution::kNone)),
              (std::vector<Stats>{{6, 315, 50, 55}}));
  }
  auto last = view.GetLastValue(loss);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->t_ms, appended ? kGen + 50 * kSecond : kGen - 10 * kSecond);
  EXPECT_EQ((*last)->value, appended ? 55 : 45);

  // Values/Counts and statistic sets (standard resolution), from every tier.
  const SeriesId batch = IdOf(view, BatchKey());
  const SeriesId gpu = IdOf(view, GpuKey());
  for (Tier tier : {Tier::kRaw, Tier::k60, Tier::k300, Tier::k3600}) {
    SCOPED_TRACE(TierName(tier));
    const Distribution dist = tier == Tier::kRaw ? Distribution::kExact : Distribution::kSketch;
    std::vector<Aggregate> b =
        Buckets(view, batch, tier, kGen - 2 * kHour, kGen - kHour, kHour, dist);
    EXPECT_EQ(StatsOf(b), (std::vector<Stats>{{120, 2880, 16, 32}}));
    EXPECT_EQ(b[0].Percentile(0.5), 16);
    EXPECT_EQ(b[0].Percentile(0.51), 32);
    std::vector<Aggregate> g =
        Buckets(view, gpu, tier, kGen - 2 * kHour, kGen - kHour, kHour, dist);
    EXPECT_EQ(StatsOf(g), (std::vector<Stats>{{3600, 162015, 12.5, 87.75}}));
    EXPECT_FALSE(g[0].HasPercentiles());
  }
  auto gpu_last = view.GetLastValue(gpu);
  ASSERT_TRUE(gpu_last.ok() && gpu_last->has_value());
  EXPECT_EQ((*gpu_last)->t_ms, kGen - 2 * kHour + 59 * kMinute);
  EXPECT_EQ((*gpu_last)->value, 2700.25 / 60);

  // The index lists the three series in ListMetrics order.
  std::vector<std::string> listed;
  ASSERT_TRUE(view.ForEachSeries("", "", "",
                                 [&](SeriesRef&& ref, std::string_view) {
                                   listed.push_back(ref.key.metric);
                                   return true;
                                 })
                  .ok());
  EXPECT_THAT(listed, ElementsAre("GPUUtilization", "batch_size", "train:loss"));
}

// tests/testdata/format_v<N>, one for every format this build reads.
class FormatFixtures : public ::testing::TestWithParam<int> {
 protected:
  fs::path FixtureDir() const {
    return fs::path(TW_SOURCE_DIR) / "tests" / "testdata" / absl::StrFormat("format_v%d", GetParam());
  }
  // A copy of the fixture (the checked-in one is never opened: a writer changes it).
  std::string CopyFixture(const testing::TempDir& dir) const {
    const std::string copy = dir.Sub("fixture");
    fs::copy(FixtureDir(), copy, fs::copy_options::recursive);
    for (const auto& entry : fs::recursive_directory_iterator(copy)) {
      fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
    }
    return copy;
  }
};

INSTANTIATE_TEST_SUITE_P(EveryFormatThisBuildReads, FormatFixtures,
                         ::testing::Range(kOldestDataFormatVersion, kDataFormatVersion + 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrFormat("V%d", info.param);
                         });

TEST_P(FormatFixtures, TheFixtureIsSmallAndHoldsTheFormatFile) {
  ASSERT_TRUE(fs::exists(FixtureDir() / "db" / "CURRENT")) << FixtureDir();
  EXPECT_EQ(ReadText((FixtureDir() / "format").string()),
            absl::StrFormat("trainwatch-data-format %d\n", GetParam()));
  uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(FixtureDir())) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  EXPECT_LT(bytes, 1u << 20);
}

TEST_P(FormatFixtures, AReaderReadsEverythingAndLeavesTheFormat) {
  testing::TempDir dir;
  const std::string copy = CopyFixture(dir);
  util::FakeClock clock(kGen);
  auto db = Db::Open(Options(copy, OpenMode::kReader, &clock));
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_FALSE((*db)->writable());
  ExpectFixtureContents(**db);
  EXPECT_EQ(ReadText(copy + "/format"), absl::StrFormat("trainwatch-data-format %d\n", GetParam()));
}

// A writer marks an older folder as this build's format before it writes.
TEST_P(FormatFixtures, AWriterReadsEverythingAppendsAndReadsItBackAfterASealAndAReopen) {
  testing::TempDir dir;
  const std::string copy = CopyFixture(dir);
  util::FakeClock clock(kGen);
  const DbOptions o = Options(copy, OpenMode::kWriter, &clock);
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ(ReadText(o.data_dir + "/format"),
              absl::StrFormat("trainwatch-data-format %d\n", kDataFormatVersion));
    ExpectFixtureContents(**db);
    ASSERT_TRUE((*db)->PutSamples(Appended()).ok());
    ASSERT_TRUE((*db)
                    ->PutLogs({{std::string(model::kTrainingJobsLogGroup), kLogStream},
                               {{kAppendedEvent.t_ms, kAppendedEvent.message}}})
                    .ok());
    ASSERT_TRUE((*db)->CreateJob(AppendedJob()).ok());
    ExpectFixtureContents(**db, /*appended=*/true);
    ASSERT_TRUE((*db)->SealAll().ok());  // the head, the fixture's included, into chunks
    ExpectFixtureContents(**db, /*appended=*/true, /*sealed=*/true);
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status();
  ExpectFixtureContents(**db, /*appended=*/true, /*sealed=*/true);
}

}  // namespace
}  // namespace trainwatch::store
