#include "util/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainwatch::util {
namespace {

TEST(LogOnce, LogsTheFirstTimeAndCountsEveryTime) {
  std::vector<std::string> seen;
  SetLogSinkForTest([&](LogLevel, std::string_view m) { seen.emplace_back(m); });
  LogOnce("test-key", "first");
  LogOnce("test-key", "second");
  LogOnce("test-key", "third");
  SetLogSinkForTest(nullptr);
  EXPECT_EQ(seen, std::vector<std::string>{"first"});
  EXPECT_EQ(LogOnceCount("test-key"), 3);
  EXPECT_EQ(LogOnceCount("never-seen"), 0);
}

}  // namespace
}  // namespace trainwatch::util
