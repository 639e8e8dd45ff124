#include "util/clock.h"

#include <time.h>

namespace trainwatch::util {

int64_t SystemClock::NowMs() const {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t SystemClock::MonotonicNs() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

SystemClock& SystemClock::Get() {
  static SystemClock clock;
  return clock;
}

}  // namespace trainwatch::util
