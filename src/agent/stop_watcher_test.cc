#include "agent/stop_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace trainwatch::agent {
namespace {

bool WaitFor(const std::atomic<int>& value, int want) {
  for (int i = 0; i < 500 && value.load() < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return value.load() >= want;
}

TEST(StopWatcher, StopsOnceWhenAskedAndBeatsOnWhileTheCommandStops) {
  std::atomic<int> beats{0}, stops{0};
  std::atomic<bool> requested{false};
  StopWatcher watcher(
      [&]() -> absl::StatusOr<bool> {
        ++beats;
        return requested.load();
      },
      5, [&] { ++stops; });
  ASSERT_TRUE(WaitFor(beats, 3));
  EXPECT_EQ(stops.load(), 0);
  requested = true;
  ASSERT_TRUE(WaitFor(stops, 1));
  // The server still hears from the runner while its command takes the grace
  // period: it must not record it as silent.
  const int after = beats.load();
  ASSERT_TRUE(WaitFor(beats, after + 5));
  EXPECT_EQ(stops.load(), 1) << "on_stop is called once";
}

TEST(StopWatcher, AnUnreachableServerIsNoStopAndBeatsGoOn) {
  std::atomic<int> beats{0}, stops{0};
  StopWatcher watcher(
      [&]() -> absl::StatusOr<bool> {
        if (++beats % 2 == 0) return absl::UnavailableError("connection refused");
        return absl::NotFoundError("the job is not created yet");
      },
      5, [&] { ++stops; });
  ASSERT_TRUE(WaitFor(beats, 6));
  EXPECT_EQ(stops.load(), 0);
}

TEST(StopWatcher, EndsPromptlyWhenDestroyed) {
  const auto start = std::chrono::steady_clock::now();
  {
    StopWatcher watcher([]() -> absl::StatusOr<bool> { return false; }, 60000, [] {});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace trainwatch::agent
