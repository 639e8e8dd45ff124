#pragma once
// Sleeps that a std::stop_token cuts short, for the loops of threads that a
// std::jthread runs (a heartbeat, a maintenance tick, a retry backoff): the
// thread sleeps its interval, and the owner's request_stop() (the jthread's
// destructor included) wakes it at once rather than after the interval.
//
//   void Loop(std::stop_token stop) {
//     while (util::SleepFor(stop, std::chrono::seconds(1))) Tick();
//   }
//
// For a wait on state that other threads change, use util::MutexLock's
// stop-aware waits (util/mutex.h) instead.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace trainwatch::util {

// Sleeps until `deadline`, or until `stop` is requested if that comes first
// (at once if it already was). True when the deadline came without a stop.
template <class Clock, class Duration>
bool SleepUntil(std::stop_token stop, std::chrono::time_point<Clock, Duration> deadline) {
  // Nothing else waits on these: the condition variable is only how the
  // stop request (std::condition_variable_any's stop_callback) wakes us.
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

// As SleepUntil, for `timeout` from now.
template <class Rep, class Period>
bool SleepFor(std::stop_token stop, std::chrono::duration<Rep, Period> timeout) {
  return SleepUntil(std::move(stop), std::chrono::steady_clock::now() + timeout);
}

}  // namespace trainwatch::util
