// The stop-aware waits of util/stop_wait.h and util::MutexLock (util/mutex.h):
// a std::jthread's request_stop() wakes them at once.

#include "util/stop_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

#include "util/mutex.h"

namespace trainwatch::util {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(StopWait, SleepForSleepsWithoutAStop) {
  std::stop_source source;
  const auto start = steady_clock::now();
  EXPECT_TRUE(SleepFor(source.get_token(), milliseconds(20)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(20));
}

TEST(StopWait, SleepReturnsAtOnceWhenStoppedBefore) {
  std::stop_source source;
  source.request_stop();
  const auto start = steady_clock::now();
  EXPECT_FALSE(SleepFor(source.get_token(), std::chrono::hours(1)));
  EXPECT_FALSE(SleepUntil(source.get_token(), steady_clock::now() + std::chrono::hours(1)));
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(StopWait, RequestStopWakesASleepingThread) {
  bool slept_through = true;
  std::jthread t([&](std::stop_token stop) {
    slept_through = SleepFor(stop, std::chrono::hours(1));
  });
  std::this_thread::sleep_for(milliseconds(10));
  t.request_stop();
  t.join();  // hangs if the stop does not wake it
  EXPECT_FALSE(slept_through);
}

struct Counter {
  Mutex mu;
  std::condition_variable_any changed;
  int count ABSL_GUARDED_BY(mu) = 0;
};

TEST(MutexLockStopWait, WakesOnNotifyAndOnStop) {
  Counter c;
  int seen = 0;
  bool stopped_ready = true;
  {
    std::jthread t([&](std::stop_token stop) {
      MutexLock lock(c.mu);
      while (lock.Wait(c.changed, stop, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) {
        return c.count > seen;
      })) {
        seen = c.count;
      }
      stopped_ready = c.count > seen;
    });
    {
      MutexLock lock(c.mu);
      c.count = 1;
    }
    c.changed.notify_all();
    // Wait until the thread has seen it (a plain wait on the same cv).
    for (;;) {
      MutexLock lock(c.mu);
      if (seen == 1) break;
      lock.Unlock();
      std::this_thread::sleep_for(milliseconds(1));
    }
  }  // ~jthread: request_stop() wakes the Wait, then join
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(stopped_ready);
}

TEST(MutexLockStopWait, WaitForTimesOutOrStops) {
  Counter c;
  std::stop_source source;
  MutexLock lock(c.mu);
  EXPECT_FALSE(lock.WaitFor(c.changed, source.get_token(), milliseconds(5),
                            [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) { return c.count > 0; }));
  source.request_stop();
  EXPECT_FALSE(lock.WaitUntil(c.changed, source.get_token(),
                              steady_clock::now() + std::chrono::hours(1),
                              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) { return c.count > 0; }));
  c.count = 1;
  EXPECT_TRUE(lock.Wait(c.changed, source.get_token(),
                        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) { return c.count > 0; }));
}

}  // namespace
}  // namespace trainwatch::util
