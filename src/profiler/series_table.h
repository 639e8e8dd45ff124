#pragma once
// SeriesTable: the profiler's series, each key built once, and one tick's
// values handed out as a model::SampleBatch without allocating in steady state.
//
//   SeriesTable table;
//   Slot busy = table.Add(kProfilerNamespace, "CPUUtilization", {{"Host", h}, {"Core", "0"}},
//   "Percent"); table.Begin();                       // each tick table.Emit(busy, t_ms, 37.5);
//   sink->Put(table.Finish());           // the batch holds only the series emitted this tick
//
// Thread safety: none; the sampler thread owns it.

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/series.h"

namespace trainwatch::profiler {

using Slot = int32_t;
inline constexpr Slot kNoSlot = -1;

class SeriesTable {
 public:
  // Registers a series and returns its slot (valid for the table's life).
  // Callers register each series once (when the core, device, interface or
  // GPU is first seen) and keep the slot. kNoSlot when the key is invalid
  // (MakeSeriesKey's error is logged once); Emit ignores kNoSlot.
  Slot Add(std::string_view ns, std::string_view metric, std::vector<model::Dimension> dimensions,
           std::string_view unit);

  // Starts a tick: takes back the series lent out by the last Finish.
  void Begin();
  // Records one value for this tick. Non-finite values are dropped and counted
  // (the store refuses them, and one bad value must not lose the batch).
  void Emit(Slot slot, int64_t t_ms, double value);
  // The series emitted since Begin, with their samples; valid until the next
  // Begin. Storage resolution is 1 s (high resolution) for every series.
  const model::SampleBatch& Finish();

  size_t series_count() const { return slots_.size(); }
  int64_t nonfinite_dropped() const { return nonfinite_dropped_; }
  // The key of a slot (tests, diagnostics), wherever it sits.
  const model::SeriesKey& key(Slot slot) const;

 private:
  std::vector<model::SeriesSamples> slots_;
  std::vector<Slot> emitted_;  // slots with samples this tick, in first-emit order
  std::vector<Slot> lent_;     // slots whose SeriesSamples sit in batch_
  model::SampleBatch batch_;
  int64_t nonfinite_dropped_ = 0;
};

}  // namespace trainwatch::profiler
