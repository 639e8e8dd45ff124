#include "profiler/series_table.h"

#include <limits>

#include "gtest/gtest.h"

namespace trainwatch::profiler {
namespace {

TEST(SeriesTableTest, BatchHoldsOnlyTheSeriesEmittedThisTick) {
  SeriesTable t;
  Slot a = t.Add("ns", "A", {{"Host", "h"}}, "Percent");
  Slot b = t.Add("ns", "B", {{"Host", "h"}, {"Core", "0"}}, "Bytes");
  t.Begin();
  t.Emit(a, 1000, 1.5);
  const model::SampleBatch& first = t.Finish();
  ASSERT_EQ(first.series.size(), 1u);
  EXPECT_EQ(first.series[0].key.metric, "A");
  EXPECT_EQ(first.series[0].key.unit, "Percent");
  EXPECT_EQ(first.series[0].storage_resolution_s, 1);
  EXPECT_EQ(first.series[0].samples, (std::vector<model::Sample>{{1000, 1.5}}));

  t.Begin();
  t.Emit(b, 2000, 7);
  t.Emit(a, 2000, 2.5);
  const model::SampleBatch& second = t.Finish();
  ASSERT_EQ(second.series.size(), 2u);
  EXPECT_EQ(second.series[0].key.metric, "B");
  EXPECT_EQ(second.series[0].key.dimensions.size(), 2u);
  EXPECT_EQ(second.series[1].samples, (std::vector<model::Sample>{{2000, 2.5}}));
  EXPECT_EQ(t.key(a).metric, "A");
}

TEST(SeriesTableTest, KeysAreReusedAcrossTicksNotRebuilt) {
  SeriesTable t;
  Slot a = t.Add("ns", "A", {{"Host", "a-rather-long-host-name/algo-1"}}, "Percent");
  const char* dim_value = nullptr;
  for (int tick = 0; tick < 3; ++tick) {
    t.Begin();
    t.Emit(a, tick, tick);
    const model::SampleBatch& b = t.Finish();
    const char* now = b.series[0].key.dimensions[0].value.data();
    if (dim_value != nullptr) {
      EXPECT_EQ(now, dim_value);  // the same string, moved back and forth
    }
    dim_value = now;
  }
}

TEST(SeriesTableTest, NonFiniteValuesAreDroppedAndCounted) {
  SeriesTable t;
  Slot a = t.Add("ns", "A", {}, "None");
  t.Begin();
  t.Emit(a, 1, std::numeric_limits<double>::quiet_NaN());
  t.Emit(a, 1, std::numeric_limits<double>::infinity());
  t.Emit(kNoSlot, 1, 1);
  EXPECT_TRUE(t.Finish().empty());
  EXPECT_EQ(t.nonfinite_dropped(), 2);
}

TEST(SeriesTableTest, InvalidKeyGivesNoSlot) {
  SeriesTable t;
  EXPECT_EQ(t.Add("ns", "", {}, "None"), kNoSlot);
  EXPECT_EQ(t.Add("ns", "A", {{"Host", ""}}, "None"), kNoSlot);
}

}  // namespace
}  // namespace trainwatch::profiler
