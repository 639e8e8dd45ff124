#pragma once
// What every part of the sampler knows about the tick it is sampling.

#include <cstdint>

namespace trainwatch::profiler {

struct TickContext {
  int64_t t_ms = 0;     // wall-clock time of the tick (the samples' timestamp), Unix ms
  int64_t mono_ns = 0;  // monotonic time of the tick
  // Seconds since the previous tick; 0 at the first tick, when there is no
  // earlier reading to take a rate from (rates are left out then).
  double dt_s = 0;
  bool has_rates() const { return dt_s > 0; }
};

}  // namespace trainwatch::profiler
