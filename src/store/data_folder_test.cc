#include "store/data_folder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>

#include "store/test_util.h"

namespace trainwatch::store {
namespace {

using ::testing::HasSubstr;

TEST(WriterLock, SecondWriterLearnsWhoHoldsTheFolder) {
  testing::TempDir dir;
  DataFolderPaths paths(dir.Sub("data"));
  auto first = WriterLock::Acquire(paths, "trainwatch run --name mnist-7 -- python3 train.py", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(std::filesystem::exists(paths.writer_lock));

  auto second = WriterLock::Acquire(paths, "trainwatch import x", 2);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status()));
  EXPECT_THAT(second.status().message(), HasSubstr(std::to_string(::getpid())));
  EXPECT_THAT(second.status().message(), HasSubstr("trainwatch run --name mnist-7"));
  EXPECT_THAT(second.status().message(), HasSubstr("--data"));

  WriterInfo info = ReadWriterInfo(paths);
  EXPECT_EQ(info.pid, ::getpid());
  EXPECT_EQ(info.since_ms, 1);

  first->reset();  // released: the next writer gets it
  auto third = WriterLock::Acquire(paths, "trainwatch import x", 3);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(WriterLock, LockIsReleasedWhenTheHolderDies) {
  testing::TempDir dir;
  DataFolderPaths paths(dir.Sub("data"));
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto lock = WriterLock::Acquire(paths, "child", 1);
    char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(WriterLock::Acquire(paths, "parent", 2).ok());
  ::kill(child, SIGKILL);
  int status;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WriterLock::Acquire(paths, "parent", 3).ok());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(ReaderScratch, FoldersAreUniqueAndStaleOnesAreRemoved) {
  testing::TempDir dir;
  DataFolderPaths paths(dir.Sub("data"));
  auto a = MakeReaderScratch(paths);
  auto b = MakeReaderScratch(paths);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  // A folder named after a pid that cannot exist (pid_max is far below).
  std::filesystem::create_directories(paths.readers + "/999999999-0");
  RemoveStaleReaderScratch(paths);
  EXPECT_FALSE(std::filesystem::exists(paths.readers + "/999999999-0"));
  EXPECT_TRUE(std::filesystem::exists(*a));
}

TEST(CommandLine, NamesThisProcess) {
  EXPECT_THAT(CurrentCommandLine(), HasSubstr("store_test"));
}

}  // namespace
}  // namespace trainwatch::store
