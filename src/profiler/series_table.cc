#include "profiler/series_table.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/log.h"

namespace trainwatch::profiler {

Slot SeriesTable::Add(std::string_view ns, std::string_view metric,
                      std::vector<model::Dimension> dimensions, std::string_view unit) {
  auto key = model::MakeSeriesKey(std::string(ns), std::string(metric), std::move(dimensions),
                                  std::string(unit));
  if (!key.ok()) {
    util::LogOnce("profiler.invalid-series",
                  absl::StrFormat("profiler: series %s left out: %s", std::string(metric),
                                  std::string(key.status().message())));
    return kNoSlot;
  }
  model::SeriesSamples s;
  s.key = *std::move(key);
  s.storage_resolution_s = 1;
  s.samples.reserve(1);
  slots_.push_back(std::move(s));
  return static_cast<Slot>(slots_.size() - 1);
}

const model::SeriesKey& SeriesTable::key(Slot slot) const {
  for (size_t i = 0; i < lent_.size(); ++i) {
    if (lent_[i] == slot) return batch_.series[i].key;
  }
  return slots_[slot].key;
}

void SeriesTable::Begin() {
  // Swap the lent series back: their keys return to the slots, their sample
  // vectors keep their capacity.
  for (size_t i = 0; i < lent_.size(); ++i) {
    std::swap(slots_[lent_[i]], batch_.series[i]);
    slots_[lent_[i]].samples.clear();
  }
  lent_.clear();
  emitted_.clear();
}

void SeriesTable::Emit(Slot slot, int64_t t_ms, double value) {
  if (slot == kNoSlot) return;
  if (!std::isfinite(value)) {
    ++nonfinite_dropped_;
    return;
  }
  auto& samples = slots_[slot].samples;
  if (samples.empty()) emitted_.push_back(slot);
  samples.push_back(model::Sample{t_ms, value});
}

const model::SampleBatch& SeriesTable::Finish() {
  TW_CHECK(lent_.empty());  // Begin() must come between two Finish() calls
  // Lend the emitted series to the batch by swapping (no copies); resize
  // default-constructs empty SeriesSamples, which allocate nothing.
  batch_.series.resize(emitted_.size());
  for (size_t i = 0; i < emitted_.size(); ++i) std::swap(slots_[emitted_[i]], batch_.series[i]);
  lent_.swap(emitted_);
  emitted_.clear();
  return batch_;
}

}  // namespace trainwatch::profiler
