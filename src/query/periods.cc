#include "query/periods.h"

namespace trainwatch::query {

bool IsAllowedPeriod(int64_t period_s) {
  return period_s == 1 || period_s == 5 || period_s == 10 || period_s == 20 || period_s == 30 ||
         (period_s > 0 && period_s % 60 == 0);
}

int64_t RoundStartMs(int64_t start_ms, int64_t period_s, int64_t now_ms) {
  auto floor_to = [](int64_t t, int64_t step) {
    int64_t r = t % step;
    if (r < 0) r += step;
    return t - r;
  };
  if (period_s < 60) return floor_to(start_ms, period_s * kSecondMs);
  int64_t age = now_ms - start_ms;
  if (age < 15 * kDayMs) return floor_to(start_ms, kMinuteMs);
  if (age < 63 * kDayMs) return floor_to(start_ms, 5 * kMinuteMs);
  return floor_to(start_ms, kHourMs);
}

bool PeriodServable(int64_t start_ms, int64_t period_s, int64_t now_ms) {
  int64_t age = now_ms - start_ms;
  if (age < 3 * kHourMs) return true;
  if (age < 15 * kDayMs) return period_s % 60 == 0;
  if (age < 63 * kDayMs) return period_s % 300 == 0;
  return period_s % 3600 == 0;
}

int64_t RequestedDatapoints(int64_t start_ms, int64_t end_ms, int64_t period_s, int64_t now_ms) {
  int64_t start = RoundStartMs(start_ms, period_s, now_ms);
  if (end_ms <= start) return 0;
  int64_t step = period_s * kSecondMs;
  return (end_ms - start + step - 1) / step;
}

}  // namespace trainwatch::query
