#include "store/kv/kv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "store/test_util.h"

namespace trainwatch::store::kv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Kv> OpenPrimary(const std::string& path, DropFn drop = nullptr) {
  KvOptions o;
  o.path = path;
  o.drop = std::move(drop);
  auto kv = Kv::Open(o);
  EXPECT_TRUE(kv.ok()) << kv.status();
  return kv.ok() ? std::move(*kv) : nullptr;
}

std::vector<std::string> Keys(const Kv& kv, Cf cf, ReadOptions ro = {}) {
  std::vector<std::string> out;
  auto it = kv.NewIterator(cf, ro);
  for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->key());
  EXPECT_TRUE(it->status().ok());
  return out;
}

TEST(Kv, PutGetAcrossColumnFamiliesAndReopen) {
  testing::TempDir dir;
  {
    auto kv = OpenPrimary(dir.path());
    ASSERT_NE(kv, nullptr);
    WriteBatch b;
    b.Put(Cf::kJobs, "j1", "job");
    b.Put(Cf::kLogs, "j1", "log");
    ASSERT_TRUE(kv->Write(&b).ok());
    EXPECT_EQ(*kv->Get(Cf::kJobs, "j1").value(), "job");
    EXPECT_EQ(*kv->Get(Cf::kLogs, "j1").value(), "log");
    EXPECT_FALSE(kv->Get(Cf::kRaw, "j1").value().has_value());
  }
  auto kv = OpenPrimary(dir.path());
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(*kv->Get(Cf::kJobs, "j1").value(), "job");
}

TEST(Kv, OpeningMissingDatabaseWithoutCreateIsNotFound) {
  testing::TempDir dir;
  KvOptions o;
  o.path = dir.Sub("nothing");
  o.create_if_missing = false;
  auto kv = Kv::Open(o);
  ASSERT_FALSE(kv.ok());
  EXPECT_TRUE(absl::IsNotFound(kv.status())) << kv.status();
}

TEST(Kv, SecondPrimaryInSameProcessIsRefused) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  ASSERT_NE(kv, nullptr);
  KvOptions o;
  o.path = dir.path();
  auto second = Kv::Open(o);
  EXPECT_FALSE(second.ok());
}

TEST(Kv, IteratorBoundsAndBothDirections) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  for (std::string k : {"a", "b1", "b2", "b3", "c"}) ASSERT_TRUE(kv->Put(Cf::kIndex, k, k).ok());
  ReadOptions ro;
  ro.lower_bound = "b";
  ro.upper_bound = "c";
  EXPECT_THAT(Keys(*kv, Cf::kIndex, ro), ElementsAre("b1", "b2", "b3"));
  auto it = kv->NewIterator(Cf::kIndex, ro);
  it->SeekForPrev("b2x");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "b2");
  it->Prev();
  EXPECT_EQ(it->key(), "b1");
  it->Prev();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_EQ(it->key(), "b3");
}

TEST(Kv, BatchIsAtomicAndSavePointsUndo) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  WriteBatch b;
  b.Put(Cf::kMeta, "keep", "1");
  b.SetSavePoint();
  b.Put(Cf::kMeta, "drop", "2");
  b.DeleteRange(Cf::kMeta, "a", "z");
  EXPECT_TRUE(b.RollbackToSavePoint());
  EXPECT_EQ(b.Count(), 1);
  ASSERT_TRUE(kv->Write(&b).ok());
  EXPECT_TRUE(kv->Get(Cf::kMeta, "keep").value().has_value());
  EXPECT_FALSE(kv->Get(Cf::kMeta, "drop").value().has_value());
}

TEST(Kv, DeleteRangeRemovesHalfOpenInterval) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  for (std::string k : {"h1", "h2", "h3", "h4"}) ASSERT_TRUE(kv->Put(Cf::kHead, k, "").ok());
  WriteBatch b;
  b.DeleteRange(Cf::kHead, "h2", "h4");
  ASSERT_TRUE(kv->Write(&b).ok());
  EXPECT_THAT(Keys(*kv, Cf::kHead), ElementsAre("h1", "h4"));
}

// The head's write pattern: one record per series per write (series id |
// seq), and a range delete of the whole series when it is sealed. The
// memtable's per-prefix insert hints must survive it (a range tombstone that
// shared a point key's hint corrupted the skiplist).
TEST(Kv, HeadPatternOfRecordsAndRangeDeletes) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  auto big = [](uint64_t v) {
    std::string k(8, '\0');
    for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(v >> (56 - 8 * i));
    return k;
  };
  constexpr uint64_t kSeries = 64;
  uint64_t seq = 0;
  std::vector<uint64_t> kept(kSeries, 0);  // records since the last delete
  for (int round = 0; round < 300; ++round) {
    WriteBatch b;
    for (uint64_t s = 0; s < kSeries; ++s) {
      if ((round + s) % 17 == 0) {
        b.DeleteRange(Cf::kHead, big(s), big(s + 1));
        kept[s] = 0;
      }
      b.Put(Cf::kHead, big(s) + big(++seq), "rows");
      ++kept[s];
      b.Put(Cf::kIndex, "l" + big(s), std::to_string(round));
    }
    ASSERT_TRUE(kv->Write(&b).ok());
  }
  size_t expected = 0;
  for (uint64_t k : kept) expected += k;
  EXPECT_EQ(Keys(*kv, Cf::kHead).size(), expected);
  EXPECT_EQ(kv->Get(Cf::kIndex, "l" + big(5)).value().value_or(""), "299");
}

// The head's seals (store/db_head.cc) also delete from where a series' last
// delete ended: from a 17-byte key between two of its 16-byte records, amid
// puts of the same series that keep their insert hint.
TEST(Kv, HeadRangeDeletesFromBetweenRecordsAmidPointPuts) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  auto key = [](uint64_t series, uint64_t seq) {
    std::string k(16, '\0');
    for (int i = 0; i < 8; ++i) {
      k[i] = static_cast<char>(series >> (56 - 8 * i));
      k[8 + i] = static_cast<char>(seq >> (56 - 8 * i));
    }
    return k;
  };
  constexpr uint64_t kSeries = 16;
  uint64_t seq = 0;
  std::vector<uint64_t> deleted_below(kSeries, 0);
  std::set<std::string> want;
  for (int round = 0; round < 400; ++round) {
    WriteBatch b;
    for (uint64_t s = 0; s < kSeries; ++s) {
      b.Put(Cf::kHead, key(s, ++seq), "rows");
      want.insert(key(s, seq));
      if ((round + s) % 5 == 0) {
        // Deletes every record of the series so far but the newest.
        const uint64_t below = seq;
        std::string start = key(s, deleted_below[s] == 0 ? 0 : deleted_below[s] - 1);
        start.push_back('\0');
        b.DeleteRange(Cf::kHead, start, key(s, below));
        want.erase(want.lower_bound(start), want.lower_bound(key(s, below)));
        deleted_below[s] = below;
      }
    }
    ASSERT_TRUE(kv->Write(&b).ok());
  }
  std::vector<std::string> got = Keys(*kv, Cf::kHead);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want);
  EXPECT_EQ(got.size(), want.size());
}

TEST(Kv, SnapshotSeesThePast) {
  testing::TempDir dir;
  auto kv = OpenPrimary(dir.path());
  ASSERT_TRUE(kv->Put(Cf::kRaw, "k", "old").ok());
  auto snap = kv->GetSnapshot();
  ASSERT_NE(snap, nullptr);
  ASSERT_TRUE(kv->Put(Cf::kRaw, "k", "new").ok());
  ASSERT_TRUE(kv->Put(Cf::kRaw, "k2", "new").ok());
  EXPECT_EQ(*kv->Get(Cf::kRaw, "k", snap.get()).value(), "old");
  ReadOptions ro;
  ro.snapshot = snap.get();
  EXPECT_THAT(Keys(*kv, Cf::kRaw, ro), ElementsAre("k"));
  EXPECT_EQ(*kv->Get(Cf::kRaw, "k").value(), "new");
}

TEST(Kv, SecondaryFollowsPrimaryAfterCatchUp) {
  testing::TempDir dir;
  auto primary = OpenPrimary(dir.Sub("db"));
  ASSERT_TRUE(primary->Put(Cf::kLogs, "e1", "first").ok());
  KvOptions so;
  so.path = dir.Sub("db");
  so.mode = OpenMode::kSecondary;
  so.secondary_path = dir.Sub("reader");
  auto secondary = Kv::Open(so);
  ASSERT_TRUE(secondary.ok()) << secondary.status();
  EXPECT_TRUE((*secondary)->secondary());
  EXPECT_EQ(*(*secondary)->Get(Cf::kLogs, "e1").value(), "first");

  ASSERT_TRUE(primary->Put(Cf::kLogs, "e2", "second").ok());
  EXPECT_FALSE((*secondary)->Get(Cf::kLogs, "e2").value().has_value());
  ASSERT_TRUE((*secondary)->CatchUp().ok());
  EXPECT_EQ(*(*secondary)->Get(Cf::kLogs, "e2").value(), "second");

  // Through a flush (memtable -> SST, WAL switched) as well.
  ASSERT_TRUE(primary->Put(Cf::kLogs, "e3", "third").ok());
  ASSERT_TRUE(primary->Flush().ok());
  ASSERT_TRUE(primary->Put(Cf::kLogs, "e4", "fourth").ok());
  ASSERT_TRUE((*secondary)->CatchUp().ok());
  EXPECT_THAT(Keys(**secondary, Cf::kLogs), ElementsAre("e1", "e2", "e3", "e4"));

  WriteBatch b;
  b.Put(Cf::kLogs, "x", "y");
  auto s = (*secondary)->Write(&b);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
}

TEST(Kv, CompactionDropsWhatTheDropFunctionRejects) {
  testing::TempDir dir;
  std::atomic<int> calls{0};
  auto kv = OpenPrimary(dir.path(), [&](Cf cf, std::string_view key, std::string_view) {
    ++calls;
    return cf == Cf::kRaw && key.substr(0, 3) == "old";
  });
  for (std::string k : {"old1", "old2", "new1"}) ASSERT_TRUE(kv->Put(Cf::kRaw, k, "v").ok());
  ASSERT_TRUE(kv->Put(Cf::kJobs, "old-job", "v").ok());  // no retention on jobs
  ASSERT_TRUE(kv->Flush().ok());
  ASSERT_TRUE(kv->CompactAll().ok());
  EXPECT_THAT(Keys(*kv, Cf::kRaw), ElementsAre("new1"));
  EXPECT_THAT(Keys(*kv, Cf::kJobs), ElementsAre("old-job"));
  EXPECT_GT(calls.load(), 0);
}

TEST(Kv, BulkLoadWithoutWalIsDurableAfterFlush) {
  testing::TempDir dir;
  {
    auto kv = OpenPrimary(dir.path());
    ASSERT_TRUE(kv->SetBulkLoad(true).ok());
    WriteBatch b;
    for (int i = 0; i < 100; ++i) b.Put(Cf::kRaw, "k" + std::to_string(i), std::string(100, 'x'));
    WriteOptions wo;
    wo.disable_wal = true;
    ASSERT_TRUE(kv->Write(&b, wo).ok());
    ASSERT_TRUE(kv->Flush().ok());
    ASSERT_TRUE(kv->SetBulkLoad(false).ok());
    EXPECT_GT(kv->SstBytes(Cf::kRaw), 0u);
  }
  auto kv = OpenPrimary(dir.path());
  EXPECT_EQ(Keys(*kv, Cf::kRaw).size(), 100u);
}

TEST(Kv, ColumnFamilyNames) {
  EXPECT_EQ(CfName(Cf::kMeta), "default");
  EXPECT_EQ(CfName(Cf::kRollup3600), "rollup3600");
  EXPECT_EQ(CfName(Cf::kJobs), "jobs");
}

}  // namespace
}  // namespace trainwatch::store::kv
