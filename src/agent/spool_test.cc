// Spool: order, reopening, acknowledgements, a torn last record, a full spool.
#include "agent/spool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "agent/test_util.h"

namespace trainwatch::agent {
namespace {

using ::testing::HasSubstr;

using testing::TempDir;

std::function<std::string(int64_t)> Text(std::string s) {
  return [s](int64_t seq) { return s + "#" + std::to_string(seq); };
}

TEST(SpoolTest, KeepsOrderSurvivesReopenAndForgetsWhatWasAcked) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/s";
  {
    auto spool = Spool::Open(spool_dir, 1 << 20);
    ASSERT_TRUE(spool.ok()) << spool.status();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(*(*spool)->Append(Text("batch")), i + 1);
    auto front = (*spool)->Front(0);
    ASSERT_TRUE(front.ok() && front->has_value());
    EXPECT_EQ((*front)->seq, 1);
    EXPECT_EQ((*front)->payload, "batch#1");
    ASSERT_TRUE((*spool)->Ack(2).ok());
    EXPECT_EQ((*spool)->pending(), 3);
    // A second process cannot take a live spool.
    auto other = Spool::Open(spool_dir, 1 << 20);
    EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
  }
  auto spool = Spool::Open(spool_dir, 1 << 20);
  ASSERT_TRUE(spool.ok()) << spool.status();
  EXPECT_EQ((*spool)->pending(), 3);
  EXPECT_EQ((*(*spool)->Front(0))->payload, "batch#3");
  EXPECT_EQ(*(*spool)->Append(Text("more")), 6) << "numbers go on after a reopen";
  ASSERT_TRUE((*spool)->Ack(6).ok());
  EXPECT_EQ((*spool)->pending(), 0);
  EXPECT_FALSE((*(*spool)->Front(0)).has_value());
}

TEST(SpoolTest, ATornLastRecordIsCutOffAndAFullSpoolRefuses) {
  TempDir dir;
  const std::string spool_dir = dir.path() + "/s";
  {
    auto spool = Spool::Open(spool_dir, 1 << 20);
    ASSERT_TRUE(spool.ok());
    ASSERT_TRUE((*spool)->Append(Text("whole")).ok());
    ASSERT_TRUE((*spool)->Append(Text("torn")).ok());
  }
  // A crash in the middle of the second append: its last bytes never landed.
  std::string segment;
  for (const auto& e : std::filesystem::directory_iterator(spool_dir)) {
    if (e.path().extension() == ".seg") segment = e.path();
  }
  ASSERT_FALSE(segment.empty());
  std::filesystem::resize_file(segment, std::filesystem::file_size(segment) - 3);
  {
    auto spool = Spool::Open(spool_dir, 1 << 20);
    ASSERT_TRUE(spool.ok()) << spool.status();
    EXPECT_EQ((*spool)->pending(), 1);
    EXPECT_EQ((*(*spool)->Front(0))->payload, "whole#1");
    EXPECT_EQ(*(*spool)->Append(Text("after")), 2);
  }
  auto small = Spool::Open(dir.path() + "/small", 64);
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE((*small)->Append(Text(std::string(20, 'x'))).ok());
  auto full = (*small)->Append(Text(std::string(40, 'y')));
  EXPECT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr("full"));
}

}  // namespace
}  // namespace trainwatch::agent
