#pragma once
// Clock: where "now" comes from. Production code takes a Clock& so that tests
// can drive time with FakeClock instead of sleeping.

#include <atomic>
#include <cstdint>

namespace trainwatch::util {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, Unix epoch milliseconds (timestamps of data).
  virtual int64_t NowMs() const = 0;
  // Monotonic time in nanoseconds (durations, intervals); arbitrary origin.
  virtual int64_t MonotonicNs() const = 0;
};

// The real clocks (CLOCK_REALTIME / CLOCK_MONOTONIC). Thread-safe.
class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t MonotonicNs() const override;
  // A process-wide instance.
  static SystemClock& Get();
};

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now_ms = 1736942400000) : now_ms_(now_ms), mono_ns_(0) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  int64_t MonotonicNs() const override { return mono_ns_.load(); }
  void AdvanceMs(int64_t ms) {
    now_ms_ += ms;
    mono_ns_ += ms * 1000000;
  }
  void SetNowMs(int64_t now_ms) { now_ms_ = now_ms; }

 private:
  std::atomic<int64_t> now_ms_;
  std::atomic<int64_t> mono_ns_;
};

}  // namespace trainwatch::util
