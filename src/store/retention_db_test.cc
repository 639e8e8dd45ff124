// Retention end to end: a FakeClock moves, compaction drops what expired,
// tier by tier, and per-namespace rules keep what they should.
#include <gtest/gtest.h>

#include "store/db.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::store {
namespace {

constexpr int64_t kT0 = 1736942400000;
constexpr int64_t kHour = 3'600'000;
constexpr int64_t kDay = 24 * kHour;

int Count(Db& db, kv::Cf cf) {
  int n = 0;
  auto it = db.kv().NewIterator(cf);
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  return n;
}

// A writer of dir/data on `clock`, without a maintenance thread.
DbOptions Options(const testing::TempDir& dir, util::Clock* clock) {
  DbOptions o;
  o.data_dir = dir.Sub("data");
  o.clock = clock;
  o.background_thread = false;
  return o;
}

TEST(RetentionDb, CompactionDropsEachTierAfterItsRetention) {
  testing::TempDir dir;
  util::FakeClock clock(kT0);
  DbOptions o = Options(dir, &clock);
  auto db_or = Db::Open(o);
  ASSERT_TRUE(db_or.ok());
  Db& db = **db_or;
  auto job = model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss", {});
  auto prof = model::MakeSeriesKey("trainwatch/Profiler", "cpu", {});
  model::SampleBatch b;
  b.series.push_back({*job, 1, {{kT0, 1}, {kT0 + 1000, 2}}, {}, {}});
  b.series.push_back({*prof, 1, {{kT0, 3}}, {}, {}});
  ASSERT_TRUE(db.PutSamples(b).ok());
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 2);  // one chunk per series
  EXPECT_EQ(Count(db, kv::Cf::kRollup60), 2);
  EXPECT_EQ(Count(db, kv::Cf::kHead), 0);

  clock.AdvanceMs(3 * kHour - 10'000);  // not yet
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 2);

  clock.AdvanceMs(20'000);  // the job's raw data is now older than 3 h
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 1);  // the profiler keeps raw data forever
  EXPECT_EQ(Count(db, kv::Cf::kRollup60), 2);

  clock.AdvanceMs(15 * kDay + 4 * kHour);  // past the end of the 6 h window + 15 d
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRollup60), 0);
  EXPECT_EQ(Count(db, kv::Cf::kRollup300), 2);
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 1);

  clock.AdvanceMs(49 * kDay);
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRollup300), 0);
  EXPECT_EQ(Count(db, kv::Cf::kRollup3600), 2);

  clock.AdvanceMs(410 * kDay);
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRollup3600), 0);
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 1);
  // The index and last values stay: the series are still listed.
  auto view = db.View();
  std::vector<SeriesRef> refs;
  ASSERT_TRUE(view->FindSeries(job->ns, job->metric, {}, nullptr, &refs).ok());
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(view->GetLastValue(refs[0].id)->has_value());
}

// The archive's hold: raw samples it has not taken yet stay past their
// retention, and go once the hold moves past them.
TEST(RetentionDb, HeldRawSamplesStayUntilTheHoldMoves) {
  testing::TempDir dir;
  util::FakeClock clock(kT0);
  DbOptions o = Options(dir, &clock);
  auto db_or = Db::Open(o);
  ASSERT_TRUE(db_or.ok());
  Db& db = **db_or;
  auto job = model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss", {});
  model::SampleBatch b;
  b.series.push_back({*job, 1, {{kT0, 1}, {kT0 + 1000, 2}}, {}, {}});
  ASSERT_TRUE(db.PutSamples(b).ok());
  db.SetRetentionHold(kT0);  // everything from kT0 on is not archived yet
  clock.AdvanceMs(4 * kHour);
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 1);  // 4 h old, raw=3h, but held

  db.SetRetentionHold(kT0 + 60'000);  // archived up to a minute past
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 0);
  EXPECT_EQ(Count(db, kv::Cf::kRollup60), 1);  // the rollups keep their own retention
}

// A hold given at open applies before any compaction of that writer.
TEST(RetentionDb, AHoldGivenAtOpenAppliesFromTheStart) {
  testing::TempDir dir;
  util::FakeClock clock(kT0);
  DbOptions o = Options(dir, &clock);
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok());
    model::SampleBatch b;
    b.series.push_back({*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "loss", {}), 1,
                        {{kT0, 1}}, {}, {}});
    ASSERT_TRUE((*db)->PutSamples(b).ok());
  }
  clock.AdvanceMs(4 * 3'600'000);
  o.retention_hold_ms = 0;  // everything
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ((*db)->retention_hold_ms(), 0);
  ASSERT_TRUE((*db)->CompactAll().ok());
  EXPECT_EQ(Count(**db, kv::Cf::kRaw), 1);
}

TEST(RetentionDb, RulesFromRetentionConfApply) {
  testing::TempDir dir;
  util::FakeClock clock(kT0);
  DbOptions o = Options(dir, &clock);
  {
    auto db = Db::Open(o);  // creates the folder
    ASSERT_TRUE(db.ok());
  }
  {
    FILE* f = std::fopen((o.data_dir + "/retention.conf").c_str(), "w");
    std::fputs("imported/*  raw=forever\n", f);
    std::fclose(f);
  }
  auto db_or = Db::Open(o);
  ASSERT_TRUE(db_or.ok()) << db_or.status();
  Db& db = **db_or;
  EXPECT_EQ(db.retention()->For("imported/x").Get(Tier::kRaw), kForever);
  model::SampleBatch b;
  b.series.push_back({*model::MakeSeriesKey("imported/x", "m", {}), 1, {{kT0, 1}}, {}, {}});
  b.series.push_back({*model::MakeSeriesKey("other", "m", {}), 1, {{kT0, 1}}, {}, {}});
  ASSERT_TRUE(db.PutSamples(b).ok());
  clock.AdvanceMs(30 * kDay);
  ASSERT_TRUE(db.CompactAll().ok());
  EXPECT_EQ(Count(db, kv::Cf::kRaw), 1);

  o.data_dir = dir.Sub("bad");
  ASSERT_TRUE(Db::Open(o).ok());
  FILE* f = std::fopen((o.data_dir + "/retention.conf").c_str(), "w");
  std::fputs("x raw=sometimes\n", f);
  std::fclose(f);
  auto bad = Db::Open(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("retention.conf:1"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::store
