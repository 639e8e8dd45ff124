#include "app/stop_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace trainwatch::app {
namespace {

model::RunnerIdentity Runner(int64_t pid) { return {"gpu-2", "boot", pid, 77}; }

model::JobRecord HostRecord(int index, int64_t pid) {
  model::JobRecord h;
  h.name = "ddp-3";
  h.host_index = index;
  h.runner = Runner(pid);
  return h;
}

bool WaitFor(const std::atomic<int>& value, int want) {
  for (int i = 0; i < 500 && value.load() < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return value.load() >= want;
}

TEST(StopWatcher, StopsOnceWhenThisRunnersHostRecordCarriesARequest) {
  std::mutex mu;
  model::JobRecord job = model::MergeHostRecords({HostRecord(1, 10), HostRecord(2, 20)});
  std::atomic<int> fetches{0}, stops{0};
  StopWatcher watcher(
      [&]() -> absl::StatusOr<std::optional<model::JobRecord>> {
        ++fetches;
        std::lock_guard<std::mutex> lock(mu);
        return std::optional<model::JobRecord>(job);
      },
      Runner(20), 5, [&] { ++stops; });
  ASSERT_TRUE(WaitFor(fetches, 3));
  {
    // Host 1's request is for host 1's runner, not this one.
    std::lock_guard<std::mutex> lock(mu);
    model::JobRecord first = HostRecord(1, 10);
    first.stop_requested_ms = 5;
    job = model::MergeHostRecords({first, HostRecord(2, 20)});
  }
  const int seen = fetches.load();
  ASSERT_TRUE(WaitFor(fetches, seen + 3));
  EXPECT_EQ(stops.load(), 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    model::JobRecord second = HostRecord(2, 20);
    second.stop_requested_ms = 6;
    job = model::MergeHostRecords({HostRecord(1, 10), second});
  }
  ASSERT_TRUE(WaitFor(stops, 1));
  const int after = fetches.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(stops.load(), 1);
  EXPECT_EQ(fetches.load(), after) << "no more polling once stopped";
}

TEST(StopWatcher, AnUnreachableServerOrMissingJobIsNoStop) {
  std::atomic<int> fetches{0}, stops{0};
  StopWatcher watcher(
      [&]() -> absl::StatusOr<std::optional<model::JobRecord>> {
        if (++fetches % 2 == 0) return absl::UnavailableError("connection refused");
        return std::optional<model::JobRecord>();
      },
      Runner(20), 5, [&] { ++stops; });
  ASSERT_TRUE(WaitFor(fetches, 6));
  EXPECT_EQ(stops.load(), 0);
}

}  // namespace
}  // namespace trainwatch::app
