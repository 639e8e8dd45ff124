// Db: samples in, rows and aggregates out, through seals, restarts and
// readers in other processes' shoes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <thread>

#include "absl/strings/str_format.h"
#include "store/bulk_loader.h"
#include "store/db.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1736942400000;  // 2025-01-15T12:00:00Z

model::SeriesKey Key(const std::string& metric, const std::string& job = "job-1",
                     const std::string& unit = "None", const std::string& ns = "trainwatch/Test") {
  auto k = model::MakeSeriesKey(ns, metric, {{"TrainingJobName", job}}, unit);
  EXPECT_TRUE(k.ok());
  return *k;
}

model::SampleBatch Plain(const model::SeriesKey& key, std::vector<model::Sample> samples,
                         int resolution = 1) {
  model::SampleBatch b;
  b.series.push_back({key, resolution, std::move(samples), {}, {}});
  return b;
}

class DbMetricsTest : public ::testing::Test {
 protected:
  DbOptions Options(OpenMode mode = OpenMode::kWriter) {
    DbOptions o;
    o.data_dir = dir_.Sub("data");
    o.mode = mode;
    o.clock = &clock_;
    o.background_thread = false;
    o.head = head_;
    o.observe_writes_for_test = observe_writes_;
    return o;
  }
  std::unique_ptr<Db> Open(OpenMode mode = OpenMode::kWriter) {
    auto db = Db::Open(Options(mode));
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Every (t, value) of plain rows of a series, sorted.
  static std::vector<std::pair<int64_t, double>> Rows(Db& db, const model::SeriesKey& key) {
    auto view = db.View();
    EXPECT_TRUE(view.ok());
    std::vector<SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(key.ns, key.metric, key.dimensions, &key.unit, &refs).ok());
    std::vector<std::pair<int64_t, double>> out;
    if (refs.size() != 1) return out;
    EXPECT_TRUE(view->ScanRows(refs[0].id, INT64_MIN, INT64_MAX, [&](uint8_t, const Row& r) {
                      out.emplace_back(r.t_ms, r.c[0]);
                    }).ok());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The series' last value through a fresh view (nullopt: none, or no such series).
  static std::optional<LastValue> LastValueOf(Db& db, const model::SeriesKey& key) {
    auto view = db.View();
    EXPECT_TRUE(view.ok());
    std::vector<SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(key.ns, key.metric, key.dimensions, nullptr, &refs).ok());
    if (refs.size() != 1) return std::nullopt;
    auto last = view->GetLastValue(refs[0].id);
    EXPECT_TRUE(last.ok()) << last.status();
    return last.ok() ? *last : std::nullopt;
  }
  // Copies a folder a writer has open. Its background work may delete a
  // file (obsolete by then) while the copy runs: the copy starts again.
  static void CopyLiveFolder(const std::string& from, const std::string& to) {
    for (int attempt = 0;; ++attempt) {
      std::error_code error;
      std::filesystem::copy(from, to, std::filesystem::copy_options::recursive, error);
      if (!error) return;
      ASSERT_LT(attempt, 20) << "copying " << from << ": " << error.message();
      std::filesystem::remove_all(to);
    }
  }
  // Opens, as a writer, a copy of the data folder as it is now: what a
  // crash would leave (a clean close would checkpoint the head log).
  absl::StatusOr<std::unique_ptr<Db>> OpenCrashImage(const std::string& name) {
    CopyLiveFolder(dir_.Sub("data"), dir_.Sub(name));
    DbOptions o = Options();
    o.data_dir = dir_.Sub(name);
    return Db::Open(o);
  }

  using Want = std::vector<std::pair<int64_t, double>>;
  // Each series has exactly its rows in a crash image of the folder as it is now.
  void ExpectRowsAfterACrash(const std::string& image,
                             const std::vector<std::pair<model::SeriesKey, Want>>& want) {
    auto crashed = OpenCrashImage(image);
    ASSERT_TRUE(crashed.ok()) << crashed.status();
    for (const auto& [key, rows] : want) EXPECT_EQ(Rows(**crashed, key), rows) << key.ToString();
  }
  // Records (tombstones aside) in a column family.
  static int Records(Db& db, kv::Cf cf) {
    int n = 0;
    auto it = db.kv().NewIterator(cf);
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    return n;
  }

  testing::TempDir dir_;
  // Given to the stores opened while it is set (Options()).
  std::function<void(const kv::WriteBatch&)> observe_writes_;
  util::FakeClock clock_{kT0};
  HeadOptions head_;
};

TEST_F(DbMetricsTest, SamplesAreReadableAtOnceAndAfterSealAndRestart) {
  model::SeriesKey loss = Key("train_loss");
  std::vector<std::pair<int64_t, double>> expected;
  {
    auto db = Open();
    for (int i = 0; i < 50; ++i) {
      const double v = 1.0 / (i + 1);
      ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + i * 1000, v}})).ok());
      expected.emplace_back(kT0 + i * 1000, v);
    }
    EXPECT_EQ(Rows(*db, loss), expected);  // from head records
    ASSERT_TRUE(db->SealAll().ok());
    EXPECT_EQ(Rows(*db, loss), expected);  // from raw chunks
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 50'000, 0.5}})).ok());
    expected.emplace_back(kT0 + 50'000, 0.5);
  }
  auto db = Open();  // replays the head (one open sample)
  EXPECT_EQ(Rows(*db, loss), expected);
  auto view = db->View();
  std::vector<SeriesRef> refs;
  ASSERT_TRUE(view->FindSeries(loss.ns, loss.metric, loss.dimensions, nullptr, &refs).ok());
  ASSERT_EQ(refs.size(), 1u);
  auto last = view->GetLastValue(refs[0].id);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ(**last, (LastValue{kT0 + 50'000, 0.5}));
}

// A batch may bring its keys' canonical forms (the native decoder does); the
// store uses them when there is one per series; a debug build stops at a
// batch whose canonical keys disagree with its keys (they would file samples
// under another series).
TEST_F(DbMetricsTest, ABatchsOwnCanonicalKeysAreUsed) {
  const model::SeriesKey a = Key("a"), b = Key("b");
  auto db = Open();
  model::SampleBatch given = Plain(a, {{kT0, 1}});
  given.series.push_back(Plain(b, {{kT0, 2}}).series[0]);
  given.canonical_keys = {a.Canonical(), b.Canonical()};
  ASSERT_TRUE(db->PutSamples(given).ok());
  model::SampleBatch partial = Plain(a, {{kT0 + 1000, 3}});
  partial.series.push_back(Plain(b, {{kT0 + 1000, 4}}).series[0]);
  partial.canonical_keys = {b.Canonical()};  // not one per series: made again
  ASSERT_TRUE(db->PutSamples(partial).ok());
  EXPECT_EQ(Rows(*db, a), (Want{{kT0, 1}, {kT0 + 1000, 3}}));
  EXPECT_EQ(Rows(*db, b), (Want{{kT0, 2}, {kT0 + 1000, 4}}));
#ifndef NDEBUG
  // Canonical keys that do not follow their series are a producer's bug: a
  // debug build stops at once rather than file samples under another series.
  model::SampleBatch swapped = given;
  std::swap(swapped.canonical_keys[0], swapped.canonical_keys[1]);
  EXPECT_DEATH(db->PutSamples(swapped).IgnoreError(), "invariant violated");
#endif
}

// A write looks all its series up before it appends (store/db.h,
// ResolveBatch); the series it creates grow the registry, which moves the
// entries of those looked up before them. Each series must still get exactly
// its own rows and last value, a series named twice in one write both parts.
TEST_F(DbMetricsTest, AWriteThatCreatesManySeriesKeepsEverySeriesItsOwnRows) {
  auto job = [](int i) { return Key("loss", absl::StrFormat("job-%d", i)); };
  auto db = Open();
  model::SampleBatch first;
  for (int i = 0; i < 10; ++i) first.series.push_back({job(i), 1, {{kT0, double(i)}}, {}, {}});
  ASSERT_TRUE(db->PutSamples(first).ok());
  // Known series first and last, 2,000 new ones between, and job-3 twice.
  model::SampleBatch second;
  for (int i = 0; i < 2010; ++i) {
    second.series.push_back({job(i), 1, {{kT0 + 1000, 1000.0 + i}}, {}, {}});
  }
  second.series.push_back({job(3), 1, {{kT0 + 2000, 7.5}}, {}, {}});
  second.series.push_back({job(4), 1, {{kT0 + 500, 4.5}}, {}, {}});
  ASSERT_TRUE(db->PutSamples(second).ok());
  for (int i : {0, 3, 4, 9, 10, 1000, 2009}) {
    SCOPED_TRACE(i);
    Want want;
    if (i < 10) want.emplace_back(kT0, double(i));
    if (i == 4) want.emplace_back(kT0 + 500, 4.5);
    want.emplace_back(kT0 + 1000, 1000.0 + i);
    if (i == 3) want.emplace_back(kT0 + 2000, 7.5);
    EXPECT_EQ(Rows(*db, job(i)), want);
    EXPECT_EQ(LastValueOf(*db, job(i)), (i == 3 ? LastValue{kT0 + 2000, 7.5}
                                                : LastValue{kT0 + 1000, 1000.0 + i}));
  }
  // The writer's own idea of each last value went to the right series too:
  // an older sample does not take over.
  ASSERT_TRUE(db->PutSamples(Plain(job(0), {{kT0 + 900, -1}})).ok());
  EXPECT_EQ(LastValueOf(*db, job(0)), (LastValue{kT0 + 1000, 1000.0}));
}

// The last value lives in the head records between seals (no "l" record per
// write); every reader must still see the newest sample, however it got there.
TEST_F(DbMetricsTest, LastValueIsTheNewestSampleThroughLateWritesSealsRestartsAndFollowers) {
  model::SeriesKey loss = Key("train_loss");
  {
    auto db = Open();
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 2000, 2}, {kT0 + 1000, 1}})).ok());
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 2000, 2}));
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 500, 9}})).ok());  // late: not the last
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 2000, 2}));
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 2000, 3}})).ok());  // a tie: the later write
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 2000, 3}));

    auto follower = Open(OpenMode::kReader);
    ASSERT_NE(follower, nullptr);
    EXPECT_EQ(LastValueOf(*follower, loss), (LastValue{kT0 + 2000, 3}));

    ASSERT_TRUE(db->SealAll().ok());  // head records gone: the "l" record has it
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 2000, 3}));
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 1500, 7}})).ok());  // late, after the seal
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 2000, 3}));
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 4000, 4}})).ok());
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 4000, 4}));
    clock_.AdvanceMs(1000);  // past the follower's catch-up interval
    EXPECT_EQ(LastValueOf(*follower, loss), (LastValue{kT0 + 4000, 4}));
  }
  // Restart without a seal: the replayed head keeps the last value...
  {
    auto db = Open();
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 4000, 4}));
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 3000, 5}})).ok());
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 4000, 4}));
  }
  // ...and the writer after that one still knows it (a late sample must not
  // become the last when its head seals).
  {
    auto db = Open();
    ASSERT_TRUE(db->PutSamples(Plain(loss, {{kT0 + 3500, 6}})).ok());
    ASSERT_TRUE(db->SealAll().ok());
    EXPECT_EQ(LastValueOf(*db, loss), (LastValue{kT0 + 4000, 4}));
  }
  EXPECT_EQ(LastValueOf(*Open(), loss), (LastValue{kT0 + 4000, 4}));
}

// Commits write one head log record for all their series; a checkpoint moves
// the log's rows to per-series head records. Rows in the log must read like
// any open row, survive a crash, and be sealed exactly once.
TEST_F(DbMetricsTest, RowsInTheHeadLogAreReadReplayedAfterACrashAndSealedOnce) {
  head_.log_checkpoint_bytes = 1 << 30;  // nothing checkpoints but a seal
  const model::SeriesKey a = Key("a"), b = Key("b");
  std::vector<std::pair<int64_t, double>> want_a, want_b;
  auto db = Open();
  for (int i = 0; i < 30; ++i) {
    model::SampleBatch batch = Plain(a, {{kT0 + i * 1000, i * 0.5}});
    // b gets a late row every third commit (it goes to the late chunk).
    const int64_t tb = i % 3 == 2 ? kT0 + (i - 5) * 1000 + 1 : kT0 + i * 1000;
    batch.series.push_back({b, 1, {{tb, -i * 1.0}}, {}, {}});
    ASSERT_TRUE(db->PutSamples(batch).ok());
    want_a.emplace_back(kT0 + i * 1000, i * 0.5);
    want_b.emplace_back(tb, -i * 1.0);
  }
  std::sort(want_b.begin(), want_b.end());
  auto head_keys = [](Db& d, bool log) {
    int n = 0;
    auto it = d.kv().NewIterator(kv::Cf::kHead);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      n += (it->key() >= headkeys::LogPrefix()) == log;
    }
    return n;
  };
  EXPECT_EQ(head_keys(*db, /*log=*/true), 30);  // one record per commit
  EXPECT_EQ(head_keys(*db, /*log=*/false), 0);
  EXPECT_GT(db->GetHeadStats().head_log_bytes, 0u);
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);
  EXPECT_EQ(LastValueOf(*db, a), (LastValue{kT0 + 29'000, 14.5}));
  EXPECT_EQ(LastValueOf(*db, b), (LastValue{kT0 + 28'000, -28}));  // 29 was late
  {
    auto follower = Open(OpenMode::kReader);
    ASSERT_NE(follower, nullptr);
    EXPECT_EQ(Rows(*follower, a), want_a);
    EXPECT_EQ(Rows(*follower, b), want_b);
    EXPECT_EQ(LastValueOf(*follower, b), (LastValue{kT0 + 28'000, -28}));
  }

  {
    auto crashed = OpenCrashImage("crashed");  // the log included
    ASSERT_TRUE(crashed.ok()) << crashed.status();
    EXPECT_EQ(Rows(**crashed, a), want_a);
    EXPECT_EQ(Rows(**crashed, b), want_b);
    EXPECT_EQ(LastValueOf(**crashed, a), (LastValue{kT0 + 29'000, 14.5}));
    EXPECT_EQ(head_keys(**crashed, /*log=*/true), 0);  // replay checkpointed it
    EXPECT_EQ(head_keys(**crashed, /*log=*/false), 2);
    ASSERT_TRUE((*crashed)->SealAll().ok());
    EXPECT_EQ(Rows(**crashed, a), want_a);
    EXPECT_EQ(Rows(**crashed, b), want_b);
  }

  // A seal moves the log's rows out first: every row once, from raw chunks.
  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(head_keys(*db, /*log=*/true) + head_keys(*db, /*log=*/false), 0);
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);
  EXPECT_EQ(LastValueOf(*db, b), (LastValue{kT0 + 28'000, -28}));
}

// A chunk that fills up seals in the middle of a commit, while earlier rows
// of the series (and of others) are still in the log: they must be sealed
// once and never replayed again after a crash.
TEST_F(DbMetricsTest, ASealWhileRowsAreInTheHeadLogKeepsEveryRowOnceThroughACrash) {
  head_.log_checkpoint_bytes = 1 << 30;
  head_.max_chunk_rows = 8;
  const model::SeriesKey a = Key("a"), b = Key("b");
  std::vector<std::pair<int64_t, double>> want_a, want_b;
  auto db = Open();
  for (int i = 0; i < 21; ++i) {
    model::SampleBatch batch = Plain(a, {{kT0 + i * 1000, 1.0 * i}});
    if (i % 2 == 0) batch.series.push_back({b, 1, {{kT0 + i * 1000, -1.0 * i}}, {}, {}});
    ASSERT_TRUE(db->PutSamples(batch).ok());
    want_a.emplace_back(kT0 + i * 1000, 1.0 * i);
    if (i % 2 == 0) want_b.emplace_back(kT0 + i * 1000, -1.0 * i);
  }
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);
  ExpectRowsAfterACrash("crashed", {{a, want_a}, {b, want_b}});
}

// Seals are encoded off the commit path (Db::SealJob). Until a commit writes
// a job, the sealed rows stay in head records: read once, and replayed once
// after a crash; the commit that writes the chunks deletes exactly those
// records, and a series' jobs commit in order.
TEST_F(DbMetricsTest, ASealedHeadIsReadOnceBeforeAndAfterItsSealIsWritten) {
  head_.max_chunk_rows = 10;
  const model::SeriesKey a = Key("a"), b = Key("b");
  std::vector<std::pair<int64_t, double>> want_a, want_b{{kT0, 7}};
  std::vector<model::Sample> rows;
  for (int i = 0; i < 25; ++i) {
    rows.push_back({kT0 + i * 1000, 0.5 * i});
    want_a.emplace_back(kT0 + i * 1000, 0.5 * i);
  }
  auto db = Open();
  model::SampleBatch batch = Plain(a, rows);
  batch.series.push_back({b, 1, {{kT0, 7}}, {}, {}});
  ASSERT_TRUE(db->PutSamples(batch).ok());  // "a" fills two chunks: two jobs
  // Without the sealer thread the jobs wait for maintenance.
  EXPECT_EQ(Records(*db, kv::Cf::kRaw), 0);
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(LastValueOf(*db, a), (LastValue{kT0 + 24'000, 12}));
  ExpectRowsAfterACrash("pending", {{a, want_a}, {b, want_b}});
  // A third job of "a", detached by a later commit, waits behind the first two.
  rows.clear();
  for (int i = 25; i < 32; ++i) {
    rows.push_back({kT0 + i * 1000, 0.5 * i});
    want_a.emplace_back(kT0 + i * 1000, 0.5 * i);
  }
  ASSERT_TRUE(db->PutSamples(Plain(a, rows)).ok());
  EXPECT_EQ(Records(*db, kv::Cf::kRaw), 0);
  EXPECT_EQ(Rows(*db, a), want_a);

  ASSERT_TRUE(db->Maintain().ok());  // writes the three jobs
  EXPECT_EQ(Records(*db, kv::Cf::kRaw), 3);
  EXPECT_EQ(Records(*db, kv::Cf::kHead), 2);  // the open rows of "a" (2) and "b" (1)
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);
  EXPECT_EQ(LastValueOf(*db, a), (LastValue{kT0 + 31'000, 15.5}));
  ExpectRowsAfterACrash("written", {{a, want_a}, {b, want_b}});
}

// A series sealed again and again (heads full, sealed by maintenance, dropped
// while idle, all sealed at once), with the head log checkpointed in
// between: each seal deletes exactly the head records of its own rows, from
// where the series' previous seal stopped (so that RocksDB's range deletes do
// not nest), and a crash at any point replays every open row once; so does
// a writer restarted after a crash, whose first seals and checkpoint delete
// what its replay left.
// The most of `ranges` that cover any one key. RocksDB keeps, for each
// fragment of overlapping range deletes, every delete that covers it: n
// deletes nested in one another cost n^2/2 at every flush, memtable switch
// and reopen (docs/format/store.md, "head").
size_t MaxCoverDepth(const std::vector<std::pair<std::string, std::string>>& ranges) {
  std::vector<std::pair<std::string, int>> edges;  // ends (-1) sort before starts at one key
  for (const auto& [begin, end] : ranges) {
    edges.emplace_back(begin, +1);
    edges.emplace_back(end, -1);
  }
  std::sort(edges.begin(), edges.end());
  size_t depth = 0, most = 0;
  for (const auto& [key, step] : edges) {
    depth += step;
    most = std::max(most, depth);
  }
  return most;
}

TEST_F(DbMetricsTest, EachSealOfASeriesDeletesExactlyItsOwnHeadRecords) {
  head_.max_chunk_rows = 5;
  head_.idle_ms = 10'000;
  head_.log_checkpoint_bytes = 64;
  const model::SeriesKey a = Key("a"), b = Key("b");
  Want want_a, want_b;
  // Round i's writes, seals and maintenance.
  auto round = [&](Db& db, int i) {
    const int64_t t = kT0 + i * 1000;
    model::SampleBatch batch = Plain(a, {{t, 1.0 * i}, {t + 500, 0.5 + i}});
    want_a.emplace_back(t, 1.0 * i);
    want_a.emplace_back(t + 500, 0.5 + i);
    if (i % 3 == 0) {
      batch.series.push_back({b, 1, {{t, -1.0 * i}}, {}, {}});
      want_b.emplace_back(t, -1.0 * i);
    }
    ASSERT_TRUE(db.PutSamples(batch).ok());
    if (i % 7 == 6) {
      ASSERT_TRUE(db.Maintain().ok());
    }
    if (i % 50 == 49) {
      ASSERT_TRUE(db.SealAll().ok());
    }
    if (i % 60 == 59) {
      clock_.AdvanceMs(20'000);  // both idle: maintenance seals and drops their heads
      ASSERT_TRUE(db.Maintain().ok());
      EXPECT_EQ(db.GetHeadStats().open_series, 0u) << "round " << i;
    }
  };
  // The head's range deletes of the first writer (seals and log checkpoints).
  std::vector<std::pair<std::string, std::string>> head_ranges;
  observe_writes_ = [&head_ranges](const kv::WriteBatch& batch) {
    batch.ForEachRangeDelete([&](kv::Cf cf, std::string_view begin, std::string_view end) {
      if (cf == kv::Cf::kHead) head_ranges.emplace_back(begin, end);
    });
  };
  auto db = Open();
  observe_writes_ = nullptr;
  for (int i = 0; i < 240; ++i) {
    round(*db, i);
    if (i % 40 == 20) {
      ExpectRowsAfterACrash(absl::StrFormat("crash-%d", i), {{a, want_a}, {b, want_b}});
    }
  }
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);

  // A writer restarted on a crash image goes on, and crashes again.
  {
    auto restarted = OpenCrashImage("restarted");
    ASSERT_TRUE(restarted.ok()) << restarted.status();
    const Want kept_a = want_a, kept_b = want_b;
    for (int i = 240; i < 300; ++i) round(**restarted, i);
    EXPECT_EQ(Rows(**restarted, a), want_a);
    CopyLiveFolder(dir_.Sub("restarted"), dir_.Sub("restarted-crash"));
    DbOptions o = Options();
    o.data_dir = dir_.Sub("restarted-crash");
    auto crashed = Db::Open(o);
    ASSERT_TRUE(crashed.ok()) << crashed.status();
    EXPECT_EQ(Rows(**crashed, a), want_a);
    EXPECT_EQ(Rows(**crashed, b), want_b);
    want_a = kept_a;  // the first writer goes on from its own folder
    want_b = kept_b;
  }

  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(Records(*db, kv::Cf::kHead), 0);  // every head record and the log deleted
  // Each delete goes on from where the series' (or the log's) previous one
  // ended: however many there were, a key is under a few at most (the
  // first checkpoint's covers the whole log; a delete's start lies just
  // below the previous one's end).
  EXPECT_GT(head_ranges.size(), 100u);
  EXPECT_LE(MaxCoverDepth(head_ranges), 3u);
  db.reset();
  db = Open();
  EXPECT_EQ(Rows(*db, a), want_a);
  EXPECT_EQ(Rows(*db, b), want_b);
  EXPECT_EQ(Records(*db, kv::Cf::kHead), 0);
}

// Past HeadOptions::max_sealing_bytes of waiting jobs the write leader
// encodes them itself, and (without a sealer thread to race it) the commit
// that sealed them writes them.
TEST_F(DbMetricsTest, TheWriteLeaderSealsItselfWhenTheQueueIsFull) {
  head_.max_chunk_rows = 10;
  head_.max_sealing_bytes = 0;
  const model::SeriesKey a = Key("a");
  std::vector<std::pair<int64_t, double>> want;
  std::vector<model::Sample> rows;
  for (int i = 0; i < 25; ++i) {
    rows.push_back({kT0 + i * 1000, 1.0 * i});
    want.emplace_back(kT0 + i * 1000, 1.0 * i);
  }
  auto db = Open();
  ASSERT_TRUE(db->PutSamples(Plain(a, rows)).ok());
  EXPECT_EQ(Records(*db, kv::Cf::kRaw), 2);
  EXPECT_EQ(Records(*db, kv::Cf::kHead), 1);  // the log record of the 5 open rows
  EXPECT_EQ(Rows(*db, a), want);
  ExpectRowsAfterACrash("crashed", {{a, want}});
}

// With the sealer thread, as in production: seals are encoded while writes go
// on and written by later commits and maintenance ticks while the store is
// open, and by the close. Every row is read exactly once between commits,
// from another process after the close, and after a reopen. The second run
// has the write leader encode too (max_sealing_bytes 0), so jobs may finish
// out of order (they are still written in order).
class SealerThreadTest : public DbMetricsTest, public ::testing::WithParamInterface<size_t> {};

INSTANTIATE_TEST_SUITE_P(SealingBytes, SealerThreadTest,
                         ::testing::Values(HeadOptions().max_sealing_bytes, 0));

TEST_P(SealerThreadTest, EveryRowIsReadOnceWhileWritingAndAfterAClose) {
  head_.max_chunk_rows = 7;
  head_.max_sealing_bytes = GetParam();
  std::vector<model::SeriesKey> keys;
  for (int k = 0; k < 12; ++k) keys.push_back(Key("m" + std::to_string(k)));
  std::vector<std::vector<std::pair<int64_t, double>>> want(keys.size());
  {
    DbOptions o = Options();
    o.background_thread = true;
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int c = 0; c < 150; ++c) {
      model::SampleBatch batch;
      for (size_t k = 0; k < keys.size(); ++k) {
        if ((c + k) % 3 == 0) continue;  // series seal at different commits
        std::vector<model::Sample> rows;
        for (size_t r = 0; r <= (c + k) % 4; ++r) {
          const int64_t t = kT0 + (c * 4 + static_cast<int64_t>(r)) * 1000;
          const double v = c * 100.0 + static_cast<double>(k) + 0.25 * static_cast<double>(r);
          rows.push_back({t, v});
          want[k].emplace_back(t, v);
        }
        batch.series.push_back({keys[k], 1, std::move(rows), {}, {}});
      }
      ASSERT_TRUE((*db)->PutSamples(batch).ok());
      if (c % 10 == 9) {
        for (size_t k = 0; k < keys.size(); ++k) {
          ASSERT_EQ(Rows(**db, keys[k]), want[k]) << "series " << k << " after commit " << c;
        }
      }
      if (c == 99) {
        // Writes stop: maintenance ticks (about a second apart) write every
        // sealed chunk. A chunk seals when an 8th row comes.
        int sealed = 0;
        for (const auto& w : want) sealed += static_cast<int>((w.size() - 1) / 7);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (Records(**db, kv::Cf::kRaw) < sealed &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ASSERT_EQ(Records(**db, kv::Cf::kRaw), sealed);
      }
    }
  }
  int sealed = 0;
  for (const auto& w : want) sealed += static_cast<int>((w.size() - 1) / 7);
  {
    auto reader = Open(OpenMode::kReader);  // sees the folder as the close left it
    ASSERT_NE(reader, nullptr);
    EXPECT_EQ(Records(*reader, kv::Cf::kRaw), sealed);
    for (size_t k = 0; k < keys.size(); ++k) EXPECT_EQ(Rows(*reader, keys[k]), want[k]) << k;
  }
  auto db = Open();
  for (size_t k = 0; k < keys.size(); ++k) EXPECT_EQ(Rows(*db, keys[k]), want[k]) << k;
  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(Records(*db, kv::Cf::kHead), 0);
  for (size_t k = 0; k < keys.size(); ++k) EXPECT_EQ(Rows(*db, keys[k]), want[k]) << k;
}

// An open that fails on a damaged head log must leave the folder as it was:
// the half-loaded head is not checkpointed on the way out (which would delete
// the log, and the acknowledged rows in it, so the next open would pass).
TEST_F(DbMetricsTest, AFailedOpenLeavesTheHeadLogAlone) {
  head_.log_checkpoint_bytes = 1 << 30;
  const model::SeriesKey a = Key("a");
  auto db = Open();
  ASSERT_TRUE(db->PutSamples(Plain(a, {{kT0, 1}})).ok());
  kv::WriteBatch damage;
  damage.Put(kv::Cf::kHead, headkeys::LogKey(1ull << 40), "\x07\x7f");
  ASSERT_TRUE(db->kv().Write(&damage, kv::WriteOptions()).ok());
  EXPECT_EQ(OpenCrashImage("crashed").status().code(), absl::StatusCode::kDataLoss);
  DbOptions again = Options();
  again.data_dir = dir_.Sub("crashed");
  EXPECT_EQ(Db::Open(again).status().code(), absl::StatusCode::kDataLoss);  // still there
}

// A tie across a checkpoint: the later write (in the log) is the last value.
TEST_F(DbMetricsTest, TheLastValueOfATieIsTheLaterWriteAcrossACheckpoint) {
  const model::SeriesKey a = Key("a");
  auto db = Open();
  ASSERT_TRUE(db->PutSamples(Plain(a, {{kT0, 2}})).ok());
  ASSERT_TRUE(db->Maintain().ok());  // the first value is in a head record now
  ASSERT_TRUE(db->PutSamples(Plain(a, {{kT0, 3}})).ok());  // the second in the log
  EXPECT_EQ(LastValueOf(*db, a), (LastValue{kT0, 3}));
}

// The log stays small: a commit past log_checkpoint_bytes and every
// maintenance tick move it to per-series head records.
TEST_F(DbMetricsTest, TheHeadLogIsCheckpointedBySizeAndByMaintenance) {
  head_.log_checkpoint_bytes = 2000;
  std::vector<model::SeriesKey> keys;
  for (int s = 0; s < 10; ++s) keys.push_back(Key("m" + std::to_string(s)));
  auto db = Open();
  size_t most = 0;
  for (int i = 0; i < 100; ++i) {
    model::SampleBatch batch;
    for (const auto& k : keys) batch.series.push_back({k, 1, {{kT0 + i * 1000, 1.0 * i}}, {}, {}});
    ASSERT_TRUE(db->PutSamples(batch).ok());
    most = std::max(most, db->GetHeadStats().head_log_bytes);
  }
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, 2000u);
  for (const auto& k : keys) EXPECT_EQ(Rows(*db, k).size(), 100u);
  ASSERT_TRUE(db->Maintain().ok());
  EXPECT_EQ(db->GetHeadStats().head_log_bytes, 0u);
  EXPECT_EQ(db->GetHeadStats().open_series, 10u);  // checkpointed, not sealed
  for (const auto& k : keys) EXPECT_EQ(Rows(*db, k).size(), 100u);
  db.reset();
  db = Open();
  for (const auto& k : keys) EXPECT_EQ(Rows(*db, k).size(), 100u);
}

TEST_F(DbMetricsTest, ValuesRoundTripBitExactly) {
  model::SeriesKey k = Key("weird");
  std::vector<double> values = {0.1, -0.0, 1e-300, std::numeric_limits<double>::denorm_min(),
                                1.7976931348623157e308, 3.141592653589793, 0.30000000000000004};
  std::vector<model::Sample> samples;
  for (size_t i = 0; i < values.size(); ++i) samples.push_back({kT0 + int64_t(i), values[i]});
  auto db = Open();
  ASSERT_TRUE(db->PutSamples(Plain(k, samples)).ok());
  ASSERT_TRUE(db->SealAll().ok());
  auto rows = Rows(*db, k);
  ASSERT_EQ(rows.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::memcmp(&rows[i].second, &values[i], 8), 0) << i;
  }
}

TEST_F(DbMetricsTest, NonFiniteValuesAndBadKeysAreRefusedNamingTheSeries) {
  auto db = Open();
  auto s = db->PutSamples(Plain(Key("loss"), {{kT0, 1}, {kT0 + 1, std::nan("")}}));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("loss"));
  EXPECT_THAT(s.message(), HasSubstr("nan"));
  model::SeriesKey unsorted = Key("x");
  unsorted.dimensions = {{"b", "1"}, {"a", "2"}};
  EXPECT_TRUE(absl::IsInvalidArgument(db->PutSamples(Plain(unsorted, {{kT0, 1}}))));
  model::SampleBatch bad_set;
  bad_set.series.push_back({Key("s"), 1, {}, {}, {{kT0, 2, 10, 6, 4}}});  // min > max
  EXPECT_TRUE(absl::IsInvalidArgument(db->PutSamples(bad_set)));
  EXPECT_TRUE(Rows(*db, Key("loss")).empty());  // nothing of the batch was written
  // The writer still works after refusing input.
  EXPECT_TRUE(db->PutSamples(Plain(Key("loss"), {{kT0, 1}})).ok());
}

TEST_F(DbMetricsTest, LateAndOutOfOrderSamplesAreKeptAndCounted) {
  head_.max_chunk_rows = 8;  // many seals
  auto db = Open();
  model::SeriesKey k = Key("late");
  std::vector<std::pair<int64_t, double>> expected;
  // Mostly in order with late arrivals far back, and duplicate timestamps.
  std::vector<int64_t> order = {10, 11, 12, 5, 13, 6, 14, 14, 1, 15, 2, 3, 16, 4, 20, 19, 18, 17};
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t t = kT0 + order[i] * 1000;
    ASSERT_TRUE(db->PutSamples(Plain(k, {{t, double(i)}})).ok());
    expected.emplace_back(t, double(i));
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Rows(*db, k), expected);
  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(Rows(*db, k), expected);
  db.reset();
  db = Open();
  EXPECT_EQ(Rows(*db, k), expected);
}

TEST_F(DbMetricsTest, ReaderSeesWhatTheWriterWrote) {
  auto writer = Open();
  model::SeriesKey k = Key("gpu");
  ASSERT_TRUE(writer->PutSamples(Plain(k, {{kT0, 1}})).ok());
  auto reader = Open(OpenMode::kReader);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(Rows(*reader, k).size(), 1u);
  ASSERT_TRUE(writer->PutSamples(Plain(k, {{kT0 + 1, 2}})).ok());
  EXPECT_EQ(Rows(*reader, k).size(), 2u);
  ASSERT_TRUE(writer->SealAll().ok());
  ASSERT_TRUE(writer->Flush().ok());
  ASSERT_TRUE(writer->PutSamples(Plain(k, {{kT0 + 2, 3}})).ok());
  EXPECT_EQ(Rows(*reader, k), (std::vector<std::pair<int64_t, double>>{
                                  {kT0, 1}, {kT0 + 1, 2}, {kT0 + 2, 3}}));
  EXPECT_TRUE(absl::IsFailedPrecondition(reader->PutSamples(Plain(k, {{kT0 + 3, 4}}))));
}

TEST_F(DbMetricsTest, IndexListsAndFindsSeriesByExactDimensionsAndUnit) {
  auto db = Open();
  auto put = [&](const model::SeriesKey& k) {
    ASSERT_TRUE(db->PutSamples(Plain(k, {{kT0, 1}})).ok());
  };
  put(Key("loss", "job-1", "None"));
  put(Key("loss", "job-1", "Percent"));
  put(Key("loss", "job-2"));
  put(*model::MakeSeriesKey("trainwatch/Test", "loss", {}, "None"));
  put(*model::MakeSeriesKey("trainwatch/Test", "loss",
                            {{"TrainingJobName", "job-1"}, {"Host", "algo-1"}}, "None"));
  put(Key("acc", "job-1", "None", "a/other"));
  auto view = db->View();
  std::vector<SeriesRef> found;
  ASSERT_TRUE(view->FindSeries("trainwatch/Test", "loss", {{"TrainingJobName", "job-1"}}, nullptr,
                               &found).ok());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].key.unit, "None");
  EXPECT_EQ(found[1].key.unit, "Percent");
  std::string percent = "Percent";
  found.clear();
  ASSERT_TRUE(view->FindSeries("trainwatch/Test", "loss", {{"TrainingJobName", "job-1"}},
                               &percent, &found).ok());
  EXPECT_EQ(found.size(), 1u);

  std::vector<std::string> listed;
  ASSERT_TRUE(view->ForEachSeries("", "", "", [&](SeriesRef&& r, std::string_view) {
                    listed.push_back(r.key.ToString());
                    return true;
                  }).ok());
  EXPECT_THAT(listed, ElementsAre("a/other/acc{TrainingJobName=\"job-1\"}",
                                  "trainwatch/Test/loss{}",
                                  "trainwatch/Test/loss{Host=\"algo-1\",TrainingJobName=\"job-1\"}",
                                  "trainwatch/Test/loss{TrainingJobName=\"job-1\"}",
                                  "trainwatch/Test/loss{TrainingJobName=\"job-1\"} [Percent]",
                                  "trainwatch/Test/loss{TrainingJobName=\"job-2\"}"));
  // Resume after a listing key.
  std::string second_key;
  int n = 0;
  ASSERT_TRUE(view->ForEachSeries("trainwatch/Test", "", "", [&](SeriesRef&&, std::string_view k) {
                    if (++n == 2) second_key = std::string(k);
                    return n < 2;
                  }).ok());
  std::vector<std::string> rest;
  ASSERT_TRUE(view->ForEachSeries("trainwatch/Test", "", second_key,
                                  [&](SeriesRef&& r, std::string_view) {
                                    rest.push_back(r.key.unit + " " + r.key.dimensions.back().value);
                                    return true;
                                  }).ok());
  EXPECT_THAT(rest, ElementsAre("None job-1", "Percent job-1", "None job-2"));
}

// Sums of decimals are exact, and the same from the head, from raw chunks,
// from every rollup tier and after a restart: a minute of ten 0.1 and an
// hour of hundredths.
TEST_F(DbMetricsTest, TheSumOfDecimalsIsTheSameExactValueFromEveryTier) {
  model::SeriesKey gpu = Key("GPUUtilization");
  // Hundredths: 0.1 ten times, then 0.00 to 99.99.
  auto hundredths = [](int s) -> int64_t { return s < 10 ? 10 : (s * 7919 + 14) % 10'000; };
  // The double nearest to the exact sum of the first n values.
  auto exact_sum = [&](int n) {
    int64_t d = 0;
    for (int s = 0; s < n; ++s) d += hundredths(s);
    return static_cast<double>(d) / 100;
  };
  // Adding the doubles in order gives another value for each sum asked.
  for (int n : {10, 60, 300, 3600}) {
    double naive = 0;
    for (int s = 0; s < n; ++s) naive += static_cast<double>(hundredths(s)) / 100;
    ASSERT_NE(naive, exact_sum(n)) << n;
  }
  model::SampleBatch b;
  b.series.push_back({gpu, 1, {}, {}, {}});
  for (int s = 0; s < 3600; ++s) {
    b.series[0].samples.push_back({kT0 + s * 1000, static_cast<double>(hundredths(s)) / 100});
  }
  // The Sum of the first bucket of a period over the hour.
  auto sum_of = [&](Db& db, Tier tier, int64_t period_ms) {
    auto view = db.View();
    EXPECT_TRUE(view.ok());
    std::vector<SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(gpu.ns, gpu.metric, gpu.dimensions, nullptr, &refs).ok());
    std::vector<Aggregate> buckets(3'600'000 / period_ms);
    AggregateRequest req{.start_ms = kT0, .end_ms = kT0 + 3'600'000, .origin_ms = kT0,
                         .period_ms = period_ms, .source = tier,
                         .distribution = Distribution::kNone};
    EXPECT_EQ(refs.size(), 1u);
    if (refs.size() == 1) {
      EXPECT_TRUE(view->AggregateSeries(refs[0].id, req, &buckets).ok());
    }
    return buckets.front().ReportedSum();
  };
  {
    auto db = Open();
    ASSERT_TRUE(db->PutSamples(b).ok());
    EXPECT_EQ(sum_of(*db, Tier::kRaw, 10'000), exact_sum(10)) << "head";  // ten 0.1
    EXPECT_EQ(sum_of(*db, Tier::kRaw, 60'000), exact_sum(60)) << "head";
    EXPECT_EQ(sum_of(*db, Tier::kRaw, 3'600'000), exact_sum(3600)) << "head";
    ASSERT_TRUE(db->SealAll().ok());
    EXPECT_EQ(sum_of(*db, Tier::kRaw, 10'000), exact_sum(10)) << "sealed";
    for (Tier tier : {Tier::kRaw, Tier::k60}) {
      EXPECT_EQ(sum_of(*db, tier, 60'000), exact_sum(60)) << "sealed, tier " << int(tier);
    }
    EXPECT_EQ(sum_of(*db, Tier::k300, 300'000), exact_sum(300)) << "sealed";
  }
  auto db = Open();
  for (Tier tier : {Tier::kRaw, Tier::k60, Tier::k300, Tier::k3600}) {
    EXPECT_EQ(sum_of(*db, tier, 3'600'000), exact_sum(3600)) << "reopened, tier " << int(tier);
  }
}

TEST_F(DbMetricsTest, KeptRollupRecordsAnswerAsDecodedOnesThroughNewSealsAndReaders) {
  model::SeriesKey key = Key("loss");
  // Each minute's count, sum, min and max, through fresh views of `db`,
  // asking for the given columns (Average, Minimum, Maximum, all).
  auto minutes = [&](Db& db, uint8_t columns) {
    auto view = db.View();
    EXPECT_TRUE(view.ok());
    std::vector<SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(key.ns, key.metric, key.dimensions, nullptr, &refs).ok());
    std::vector<Aggregate> buckets(10);
    AggregateRequest req{.start_ms = kT0, .end_ms = kT0 + 600'000, .origin_ms = kT0,
                         .period_ms = 60'000, .source = Tier::k60,
                         .distribution = Distribution::kNone, .columns = columns};
    EXPECT_EQ(refs.size(), 1u);
    if (refs.size() == 1) {
      EXPECT_TRUE(view->AggregateSeries(refs[0].id, req, &buckets).ok());
    }
    // The statistics asked for (the others are meaningless, see AggregateRequest).
    std::vector<std::array<double, 4>> out;
    for (const Aggregate& a : buckets) {
      out.push_back({a.count, columns & kSumColumn ? a.ReportedSum() : 0,
                     columns & kMinColumn ? a.min : 0, columns & kMaxColumn ? a.max : 0});
    }
    return out;
  };
  // Writes minutes [from, to) at 0.25 s and seals them.
  auto write = [&](Db& db, int from, int to, double offset) {
    model::SampleBatch b;
    b.series.push_back({key, 1, {}, {}, {}});
    for (int64_t t = from * 60'000LL; t < to * 60'000LL; t += 250) {
      b.series[0].samples.push_back({kT0 + t, offset + static_cast<double>(t % 7'000) / 100});
    }
    ASSERT_TRUE(db.PutSamples(b).ok());
    ASSERT_TRUE(db.SealAll().ok());
  };
  DbOptions kept_options = Options();
  DbOptions plain_options = Options();
  plain_options.data_dir = dir_.Sub("plain");
  plain_options.rollup_cache_bytes = 0;
  auto kept = Db::Open(kept_options);
  auto plain = Db::Open(plain_options);
  ASSERT_TRUE(kept.ok() && plain.ok());
  const std::vector<uint8_t> column_sets = {kSumColumn, kMinColumn, kMaxColumn, kAllColumns};
  for (auto* db : {&*kept, &*plain}) {
    write(**db, 0, 4, 1);
  }
  for (int round = 0; round < 2; ++round) {  // decoded, then kept
    for (uint8_t columns : column_sets) {
      EXPECT_EQ(minutes(**kept, columns), minutes(**plain, columns)) << int(columns);
    }
  }
  // New seals in the same window (records under new keys), late rows among them.
  for (auto* db : {&*kept, &*plain}) {
    write(**db, 2, 7, 3);
  }
  for (uint8_t columns : column_sets) {
    auto got = minutes(**kept, columns);
    EXPECT_EQ(got, minutes(**plain, columns)) << int(columns);
    EXPECT_EQ(got[3][0], 480) << "minute 3 was written twice";
  }
  // A reader of the folder, with its own kept records.
  kept->reset();
  DbOptions reader_options = Options(OpenMode::kReader);
  auto reader = Db::Open(reader_options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(minutes(**reader, kAllColumns), minutes(**plain, kAllColumns));
  }
}

TEST_F(DbMetricsTest, StatisticSetsWeightedValuesAndResolutionLanes) {
  auto db = Open();
  model::SeriesKey k = Key("step_time");
  model::SampleBatch b;
  b.series.push_back({k, 1, {{kT0, 5}}, {{kT0 + 10, 101.5, 10}, {kT0 + 20, 99, 5}},
                      {{kT0 + 30, 10, 875, 80, 95}}});
  b.series.push_back({k, 60, {{kT0 + 40, 7}}, {}, {}});
  ASSERT_TRUE(db->PutSamples(b).ok());
  for (bool sealed : {false, true}) {
    if (sealed) {
      ASSERT_TRUE(db->SealAll().ok());
    }
    auto view = db->View();
    std::vector<SeriesRef> refs;
    ASSERT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, nullptr, &refs).ok());
    ASSERT_EQ(refs.size(), 1u);
    for (Tier tier : {Tier::kRaw, Tier::k60}) {
      std::vector<Aggregate> buckets(1);
      AggregateRequest req{.start_ms = kT0, .end_ms = kT0 + 60'000, .origin_ms = kT0,
                           .period_ms = 60'000, .source = tier, .distribution = Distribution::kSketch};
      ASSERT_TRUE(view->AggregateSeries(refs[0].id, req, &buckets).ok());
      const Aggregate& a = buckets[0];
      EXPECT_EQ(a.count, 1 + 10 + 5 + 10 + 1) << sealed;
      EXPECT_DOUBLE_EQ(a.sum, 5 + 1015 + 495 + 875 + 7);
      EXPECT_EQ(a.min, 5);
      EXPECT_EQ(a.max, 101.5);
      EXPECT_TRUE(a.no_percentiles);  // the statistic set is not identical values
    }
    // Periods under 60 s leave the standard-resolution sample out.
    std::vector<Aggregate> fine(60);
    AggregateRequest req{.start_ms = kT0, .end_ms = kT0 + 60'000, .origin_ms = kT0,
                         .period_ms = 1'000, .source = Tier::kRaw, .distribution = Distribution::kNone,
                         .high_resolution_only = true};
    ASSERT_TRUE(view->AggregateSeries(refs[0].id, req, &fine).ok());
    double count = 0;
    for (const auto& a : fine) count += a.count;
    EXPECT_EQ(count, 26);
  }
}

TEST_F(DbMetricsTest, MaintenanceSealsIdleAndOldHeadsAndBoundsMemory) {
  head_.idle_ms = 60'000;
  head_.max_open_ms = 600'000;
  auto db = Open();
  ASSERT_TRUE(db->PutSamples(Plain(Key("a"), {{kT0, 1}})).ok());
  ASSERT_TRUE(db->PutSamples(Plain(Key("b"), {{kT0, 1}})).ok());
  EXPECT_EQ(db->GetHeadStats().open_series, 2u);
  clock_.AdvanceMs(30'000);
  ASSERT_TRUE(db->PutSamples(Plain(Key("b"), {{kT0 + 30'000, 1}})).ok());
  clock_.AdvanceMs(31'000);
  ASSERT_TRUE(db->Maintain().ok());  // "a" idle for 61 s
  EXPECT_EQ(db->GetHeadStats().open_series, 1u);
  for (int i = 0; i < 20; ++i) {
    clock_.AdvanceMs(30'000);
    ASSERT_TRUE(db->PutSamples(Plain(Key("b"), {{clock_.NowMs(), 1}})).ok());
    ASSERT_TRUE(db->Maintain().ok());
  }
  // "b" was never idle but its head is sealed every 10 minutes.
  EXPECT_LE(db->GetHeadStats().rows, 21u);
  EXPECT_EQ(Rows(*db, Key("a")).size(), 1u);
  EXPECT_EQ(Rows(*db, Key("b")).size(), 22u);
}

// A bulk load with a newer last value than a series' open head: sealing the
// head afterwards must not put the head's older value back.
TEST_F(DbMetricsTest, ABulkLoadedLastValueSurvivesTheSealOfAnOpenHead) {
  auto db = Open();
  model::SeriesKey k = Key("mixed");
  ASSERT_TRUE(db->PutSamples(Plain(k, {{kT0 + 1000, 1}})).ok());  // stays open
  auto loader = BulkLoader::Create(db.get());
  ASSERT_TRUE(loader.ok()) << loader.status();
  ASSERT_TRUE((*loader)->Add(k, {kT0 + 5000}, {5}).ok());
  ASSERT_TRUE((*loader)->Finish().ok());
  auto last_of = [&] {
    auto view = db->View();
    std::vector<SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, nullptr, &refs).ok());
    EXPECT_EQ(refs.size(), 1u);
    return refs.empty() ? std::optional<LastValue>() : view->GetLastValue(refs[0].id).value();
  };
  EXPECT_EQ(last_of(), (LastValue{kT0 + 5000, 5}));
  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(last_of(), (LastValue{kT0 + 5000, 5}));
  ASSERT_TRUE(db->PutSamples(Plain(k, {{kT0 + 2000, 2}})).ok());  // late: not the last
  ASSERT_TRUE(db->SealAll().ok());
  EXPECT_EQ(last_of(), (LastValue{kT0 + 5000, 5}));
}

TEST_F(DbMetricsTest, BulkLoaderAcceptsHistoryAndUnsortedInput) {
  auto db = Open();
  model::SeriesKey k = Key("old");
  auto loader = BulkLoader::Create(db.get());
  ASSERT_TRUE(loader.ok()) << loader.status();
  std::vector<int64_t> t;
  std::vector<double> v;
  const int64_t year_ago = kT0 - 365LL * 86'400'000;
  for (int i = 0; i < 20000; ++i) {
    t.push_back(year_ago + ((i * 7919) % 20000) * 1000);  // a permutation
    v.push_back(i * 0.25);
  }
  ASSERT_TRUE((*loader)->Add(k, t, v).ok());
  ASSERT_TRUE((*loader)->Add(k, {year_ago + 30'000'000}, {42}).ok());
  auto bad = (*loader)->Add(k, {year_ago}, {std::numeric_limits<double>::infinity()});
  EXPECT_THAT(bad.message(), HasSubstr("inf"));
  ASSERT_TRUE((*loader)->Finish().ok());
  auto rows = Rows(*db, k);
  ASSERT_EQ(rows.size(), 20001u);
  for (int i = 0; i < 20000; ++i) EXPECT_EQ(rows[i].first, year_ago + i * 1000);
  auto view = db->View();
  std::vector<SeriesRef> refs;
  ASSERT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, nullptr, &refs).ok());
  EXPECT_EQ(view->GetLastValue(refs[0].id)->value(), (LastValue{year_ago + 30'000'000, 42}));
}

// Sealing runs on several threads by default; what is stored must not depend
// on how many (nor on which thread sealed which series first).
TEST_F(DbMetricsTest, BulkLoaderStoresTheSameWithAnyNumberOfSealers) {
  auto db = Open();
  std::vector<std::vector<std::pair<int64_t, double>>> first_rows;
  for (int sealers : {-1, 1, 4}) {
    BulkLoadOptions options;
    options.seal_threads = sealers;
    options.max_open_bytes = 64 << 10;  // seal often, from every series
    auto loader = BulkLoader::Create(db.get(), options);
    ASSERT_TRUE(loader.ok()) << loader.status();
    const std::string ns = "sealers/" + std::to_string(sealers);
    for (int round = 0; round < 20; ++round) {
      for (int s = 0; s < 40; ++s) {
        std::vector<int64_t> t;
        std::vector<double> v;
        for (int i = 0; i < 100; ++i) {
          const int n = round * 100 + i;
          t.push_back(kT0 - 3'600'000 + n * 1000LL);  // inside raw retention (3 h)
          v.push_back(s * 1000 + n * 0.5);
        }
        auto key = model::MakeSeriesKey(ns, "m", {{"s", std::to_string(s)}});
        ASSERT_TRUE(key.ok());
        ASSERT_TRUE((*loader)->Add(*key, t, v).ok());
      }
    }
    ASSERT_TRUE((*loader)->Finish().ok());
    for (int s = 0; s < 40; ++s) {
      auto rows = Rows(*db, *model::MakeSeriesKey(ns, "m", {{"s", std::to_string(s)}}));
      ASSERT_EQ(rows.size(), 2000u) << sealers << " sealers, series " << s;
      if (sealers == -1) {
        first_rows.push_back(rows);
      } else {
        EXPECT_EQ(rows, first_rows[s]) << sealers << " sealers, series " << s;
      }
    }
  }
}

}  // namespace
}  // namespace trainwatch::store
