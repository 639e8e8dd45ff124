#include "util/bounded_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace trainwatch::util {
namespace {

TEST(BoundedQueue, TryPushRefusesWhenFull) {
  BoundedQueue<int> q(2);
  EXPECT_TRUE(q.TryPush(1));
  EXPECT_TRUE(q.TryPush(2));
  EXPECT_FALSE(q.TryPush(3));
  EXPECT_EQ(q.PopFor(std::chrono::milliseconds(0)), 1);
  EXPECT_TRUE(q.TryPush(3));
  EXPECT_EQ(q.Drain(), (std::vector<int>{2, 3}));
}

TEST(BoundedQueue, PushWaitsForRoomAndCloseWakesEveryone) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.Push(1));
  std::thread producer([&] { EXPECT_TRUE(q.Push(2)); });
  EXPECT_EQ(q.PopFor(std::chrono::seconds(5)), 1);
  EXPECT_EQ(q.PopFor(std::chrono::seconds(5)), 2);
  producer.join();
  std::thread blocked([&] { EXPECT_EQ(q.PopFor(std::chrono::hours(1)), std::nullopt); });
  q.Close();
  blocked.join();
  EXPECT_FALSE(q.TryPush(3));
}

}  // namespace
}  // namespace trainwatch::util
