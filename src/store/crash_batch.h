#pragma once
// The deterministic batches of the crash test (store_crash_writer and
// store_crash_test): batch b is a pure function of b.

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "model/log_event.h"
#include "model/series.h"
#include "store/retention.h"

namespace trainwatch::store::testing {

inline constexpr int64_t kCrashT0 = 1736942400000;

// The data is older than the default retention: keep it, or compactions in
// the background would (rightly) drop what was sealed.
inline RetentionPolicy CrashRetention() {
  RetentionPolicy p;
  (void)p.AddRule("*", "raw=forever 60s=forever 300s=forever 3600s=forever");
  return p;
}

inline model::SeriesKey CrashKey(const char* metric) {
  return *model::MakeSeriesKey("crash/test", metric, {{"job", "j"}});
}

// The value written at t for series `which` (0 plain, 1 weighted, 2 statistic set).
inline double CrashValue(int which, int64_t t) {
  return std::sin(static_cast<double>(t) * 0.001 + which) * 1000.0 / 3.0;
}

// Batch b: timestamps t = kCrashT0 + b * 10 + i (unique per batch), in order.
inline model::SampleBatch CrashBatch(int64_t b) {
  const int64_t t = kCrashT0 + b * 10;
  model::SampleBatch batch;
  model::SeriesSamples plain{CrashKey("plain"), 1, {}, {}, {}};
  for (int i = 0; i < 5; ++i) plain.samples.push_back({t + i, CrashValue(0, t + i)});
  model::SeriesSamples weighted{CrashKey("weighted"), 1, {}, {}, {}};
  weighted.weighted.push_back({t, CrashValue(1, t), 3});
  model::SeriesSamples sets{CrashKey("sets"), 60, {}, {}, {}};
  const double v = CrashValue(2, t);
  sets.statistic_sets.push_back({t, 2, 2 * v + 1, v, v + 1});
  batch.series = {std::move(plain), std::move(weighted), std::move(sets)};
  return batch;
}

inline model::LogBatch CrashLogs(int64_t b) {
  return {{"crash", "stream"}, {{kCrashT0 + b * 10, absl::StrFormat("batch %d", b)}}};
}

}  // namespace trainwatch::store::testing
