// Sums of decimal values (Aggregate::ReportedSum) and what they cost in a
// rollup record.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "store/aggregate.h"
#include "store/rollup.h"

namespace trainwatch::store {
namespace {

Aggregate Of(const std::vector<double>& values) {
  Aggregate a;
  for (double v : values) a.AddValue(v, 1, Distribution::kNone);
  return a;
}

double NaiveSum(const std::vector<double>& values) {
  double s = 0;
  for (double v : values) s += v;
  return s;
}

TEST(AggregateSumTest, TenTenthsSumToOne) {
  const std::vector<double> tenths(10, 0.1);
  ASSERT_NE(NaiveSum(tenths), 1.0);  // 0.9999999999999999: what adding doubles gives
  const Aggregate a = Of(tenths);
  EXPECT_EQ(a.ReportedSum(), 1.0);
  EXPECT_EQ(a.count, 10);
}

TEST(AggregateSumTest, APercentageSumIsTheExactDecimalInAnyOrder) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> hundredths(0, 10'000);
  std::vector<double> values;
  int64_t exact = 0;
  for (int i = 0; i < 3600; ++i) {
    const int64_t d = hundredths(rng);
    exact += d;
    values.push_back(static_cast<double>(d) / 100);
  }
  const double want = static_cast<double>(exact) / 100;  // nearest double to the exact sum
  for (int order = 0; order < 5; ++order) {
    std::shuffle(values.begin(), values.end(), rng);
    EXPECT_EQ(std::bit_cast<uint64_t>(Of(values).ReportedSum()), std::bit_cast<uint64_t>(want))
        << "order " << order << ": " << Of(values).ReportedSum() << " vs " << want;
  }
}

TEST(AggregateSumTest, MergedBucketsAndMixedPlacesGiveTheExactSum) {
  // Sixty minutes of 0.25, 0.5 and 0.1 (one, two places), merged as the
  // coarser tiers and queries merge buckets.
  Aggregate hour;
  int64_t exact_hundredths = 0;
  for (int minute = 0; minute < 60; ++minute) {
    Aggregate m;
    for (double v : {0.25, 0.5, 0.1, 0.1, 0.1}) {
      m.AddValue(v, 1, Distribution::kNone);
      exact_hundredths += std::lround(v * 100);
    }
    hour.Merge(m);
  }
  EXPECT_EQ(hour.ReportedSum(), static_cast<double>(exact_hundredths) / 100);
  EXPECT_EQ(hour.count, 300);
}

TEST(AggregateSumTest, StoredSumsMergeExactlyAfterARollupRecordRoundTrip) {
  // Minutes summing to 0.1, 0.2 and 0.1 (twice 0.05), stored and read back.
  std::vector<RollupBucket> buckets;
  for (const std::vector<double>& minute : std::vector<std::vector<double>>{
           {0.1}, {0.2}, {0.05, 0.05}}) {
    RollupBucket b;
    b.t_ms = static_cast<int64_t>(buckets.size()) * 60'000;
    b.agg = Of(minute);
    buckets.push_back(std::move(b));
  }
  std::vector<RollupBucket> back;
  ASSERT_TRUE(DecodeRollupRecord(EncodeRollupRecord(buckets, false), false, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].agg.ReportedSum(), 0.1);  // written as reported
  // A stored sum on either side of a merge, and raw rows added after.
  ASSERT_NE(0.1 + 0.2, 0.3);
  Aggregate three_minutes = back[0].agg.Clone();
  three_minutes.Merge(back[1].agg);
  EXPECT_EQ(three_minutes.ReportedSum(), 0.3);
  three_minutes.Merge(back[2].agg);
  EXPECT_EQ(three_minutes.ReportedSum(), 0.4);
  Aggregate stored_then_rows = back[1].agg.Clone();
  stored_then_rows.AddValue(0.1, 1, Distribution::kNone);
  EXPECT_EQ(stored_then_rows.ReportedSum(), 0.3);
}

// A rollup record of `minutes` buckets of a few values each, the last with
// a non-identical statistic set (no percentiles).
std::string RecordOf(int minutes, double offset) {
  std::vector<RollupBucket> buckets;
  for (int m = 0; m < minutes; ++m) {
    RollupBucket b;
    b.t_ms = m * 60'000LL;
    b.agg = Of({0.1 * m + offset, 0.05, 2.5});
    if (m == minutes - 1) b.agg.no_percentiles = true;
    buckets.push_back(std::move(b));
  }
  return EncodeRollupRecord(buckets, false);
}

std::string RecordKey(uint64_t series, uint64_t seq) { return rollupkeys::Key(series, 0, seq); }

TEST(RollupRecordCacheTest, KeptBucketsMergeAsTheDecodedRecordDoes) {
  const std::string record = RecordOf(5, 0.3);
  std::vector<RollupBucket> decoded;
  ASSERT_TRUE(DecodeRollupRecord(record, false, &decoded).ok());
  RollupRecordCache cache(1 << 20);
  for (int pass = 0; pass < 2; ++pass) {  // decoded, then kept
    auto got = cache.Get(Tier::k60, RecordKey(7, 1), record);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)->size(), decoded.size());
    Aggregate want, have;
    for (size_t i = 0; i < decoded.size(); ++i) {
      EXPECT_EQ((**got)[i].t_ms, decoded[i].t_ms);
      want.Merge(decoded[i].agg);
      MergeStoredBucket((**got)[i], &have);
    }
    EXPECT_EQ(have.count, want.count);
    EXPECT_EQ(have.ReportedSum(), want.ReportedSum());
    EXPECT_EQ(have.min, want.min);
    EXPECT_EQ(have.max, want.max);
    EXPECT_TRUE(have.no_percentiles);
  }
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(RollupRecordCacheTest, KeepsTheRecentlyUsedWithinItsBytes) {
  const std::string record = RecordOf(60, 0);
  RollupRecordCache probe(1 << 20);
  ASSERT_TRUE(probe.Get(Tier::k60, RecordKey(1, 1), record).ok());
  const size_t one = probe.bytes();
  ASSERT_GT(one, 60 * sizeof(StoredBucket));

  // Room for two records. A kept record is served without reading its
  // bytes again, so damaged bytes tell a kept record from a decoded one.
  RollupRecordCache cache(2 * one + one / 2);
  auto kept = [&](uint64_t series) {
    return cache.Get(Tier::k60, RecordKey(series, 1), "damaged").ok();
  };
  ASSERT_TRUE(cache.Get(Tier::k60, RecordKey(1, 1), record).ok());
  ASSERT_TRUE(cache.Get(Tier::k60, RecordKey(2, 1), record).ok());
  EXPECT_TRUE(kept(1));  // and now the most recently used
  ASSERT_TRUE(cache.Get(Tier::k60, RecordKey(3, 1), record).ok());
  EXPECT_TRUE(kept(1));
  EXPECT_TRUE(kept(3));
  EXPECT_FALSE(kept(2));  // the least recently used went
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_LE(cache.bytes(), 2 * one + one / 2);
  // Tiers are kept apart; damaged bytes are reported and not kept.
  EXPECT_FALSE(cache.Get(Tier::k300, RecordKey(1, 1), "damaged").ok());
  absl::StatusOr<std::shared_ptr<const RollupRecordCache::Buckets>> bad =
      cache.Get(Tier::k60, RecordKey(4, 1), "damaged");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(cache.entries(), 2u);
  // Columns: an entry kept with the sum serves the sum, and is decoded
  // again (all it had and the maximum) when the maximum is asked for.
  RollupRecordCache columns(1 << 20);
  auto sum_only = columns.Get(Tier::k60, RecordKey(9, 1), record, kSumColumn);
  ASSERT_TRUE(sum_only.ok());
  EXPECT_EQ((*sum_only)->front().max, -INFINITY);  // not decoded
  EXPECT_TRUE(columns.Get(Tier::k60, RecordKey(9, 1), "damaged", kSumColumn).ok());
  EXPECT_FALSE(columns.Get(Tier::k60, RecordKey(9, 1), "damaged", kMaxColumn).ok());
  auto both = columns.Get(Tier::k60, RecordKey(9, 1), record, kMaxColumn);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ((*both)->front().max, 2.5);
  EXPECT_EQ((*both)->front().sum, (*sum_only)->front().sum);
  EXPECT_TRUE(columns.Get(Tier::k60, RecordKey(9, 1), "damaged", kSumColumn | kMaxColumn).ok());
  EXPECT_EQ(columns.entries(), 1u);
  // A record larger than the whole cache is decoded, not kept.
  RollupRecordCache tiny(one / 2);
  EXPECT_TRUE(tiny.Get(Tier::k60, RecordKey(1, 1), record).ok());
  EXPECT_EQ(tiny.entries(), 0u);
}

TEST(AggregateSumTest, StatisticSetsAndWeightedValuesKeepTheirPlaces) {
  Aggregate a;
  Row set;
  set.c[0] = 4, set.c[1] = 1.1, set.c[2] = 0.2, set.c[3] = 0.4;  // count, sum, min, max
  a.AddRow(MakeLane(SampleKind::kStatSet, false), set, Distribution::kNone);
  a.AddValue(0.1, 7, Distribution::kNone);  // 0.1 seven times (Values/Counts)
  a.AddValue(0.2, 1, Distribution::kNone);
  ASSERT_NE(1.1 + 0.1 * 7 + 0.2, 2.0);  // 2.0000000000000004
  EXPECT_EQ(a.ReportedSum(), 2.0);
  EXPECT_EQ(a.count, 12);
}

TEST(AggregateSumTest, OtherSumsAreTheRunningSum) {
  // Full-precision values.
  const std::vector<double> thirds(7, 1.0 / 3);
  EXPECT_EQ(Of(thirds).ReportedSum(), NaiveSum(thirds));
  // A fractional count: the product is no decimal of the value's places.
  Aggregate weighted;
  weighted.AddValue(0.1, 0.3, Distribution::kNone);
  weighted.AddValue(0.1, 0.3, Distribution::kNone);
  EXPECT_EQ(weighted.ReportedSum(), 0.1 * 0.3 + 0.1 * 0.3);
  // A sum of 2^52 units of its last place or more (3000 values of 9 places
  // near 4e6: 1.2e19 units), whose double might read back as another decimal.
  const std::vector<double> large(3000, 4000000.000000001);
  EXPECT_EQ(Of(large).ReportedSum(), NaiveSum(large));
  // Merged with a sum that has no exact decimal, a decimal one has none either.
  Aggregate mixed = Of({0.1, 0.2});
  mixed.Merge(Of(thirds));
  EXPECT_EQ(mixed.ReportedSum(), 0.1 + 0.2 + NaiveSum(thirds));
}

TEST(AggregateSumTest, TheExactSumDoesNotDependOnTheOrder) {
  // 4e14 has no room for 2 places in 2^52 units, 0.03 needs them: every
  // order keeps the exact sum (a sum of doubles gives 0 in four of six).
  std::vector<double> values = {4e14, 0.03, -4e14};
  std::sort(values.begin(), values.end());
  do {
    EXPECT_EQ(Of(values).ReportedSum(), 0.03) << values[0] << " " << values[1];
  } while (std::next_permutation(values.begin(), values.end()));
}

TEST(AggregateSumTest, PlacesToldByAChunkAreTakenUntested) {
  // As a reader passes a decimal chunk's scale: fewer and more places than
  // the sum has so far.
  ASSERT_NE(0.1 + 0.2 + 0.15, 0.45);  // 0.45000000000000007
  Aggregate a;
  a.AddValue(0.1, 1, Distribution::kNone, 1);
  a.AddValue(0.2, 1, Distribution::kNone, 2);  // 0.20, two places
  a.AddValue(0.15, 1, Distribution::kNone, 2);
  EXPECT_EQ(a.ReportedSum(), 0.45);
  // More places than a sum keeps exact: tested value by value instead.
  Aggregate b;
  b.AddValue(0.1, 1, Distribution::kNone, 12);
  b.AddValue(0.2, 1, Distribution::kNone, 12);
  EXPECT_EQ(b.ReportedSum(), 0.3);
}

TEST(AggregateSumTest, LargeValuesWithDecimalsSumExactly) {
  // Where the running sum drifts far from the exact sum (0.05 here).
  std::vector<double> big;
  for (int i = 0; i < 5; ++i) big.insert(big.end(), {4e13 + 0.01, -4e13});
  ASSERT_EQ(NaiveSum(big), 0.0390625);
  EXPECT_EQ(Of(big).ReportedSum(), 0.05);
}

TEST(AggregateSumTest, ARollupRecordOfPercentagesCostsAboutWhatItsValuesDo) {
  // An hour of a 2-decimal utilisation sampled every second (AR(1) noise),
  // as 60 s buckets: with sums that are decimals, the sum column is coded
  // as decimals like minimum and maximum.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 2.5);
  std::vector<RollupBucket> buckets;
  double x = 0;
  for (int minute = 0; minute < 60; ++minute) {
    RollupBucket b;
    b.t_ms = minute * 60'000;
    for (int s = 0; s < 60; ++s) {
      x = 0.9 * x + noise(rng);
      b.agg.AddValue(std::round((60 + x) * 100) / 100, 1, Distribution::kNone);
    }
    buckets.push_back(std::move(b));
  }
  const std::string record = EncodeRollupRecord(buckets, false);
  // About 4 bytes per bucket; sums left as full doubles took over 6 more.
  EXPECT_LT(record.size(), 60u * 8) << record.size() << " bytes";
}

}  // namespace
}  // namespace trainwatch::store
