#include "profiler/process_tree.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/test_util.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

using testing::CopyFixture;
using ::testing::ElementsAre;
using testing::Rewrite;
using testing::StatLine;
using testing::TempDir;

class FixtureTreeTest : public ::testing::Test {
 protected:
  void SetUp() override { proc_ = CopyFixture(dir_, "v2") + "/proc"; }
  std::string P(const std::string& rel) { return proc_ + "/" + rel; }
  TempDir dir_;
  std::string proc_;
  DegradedCounters degraded_;
};

TEST_F(FixtureTreeTest, FindsDescendantsThroughChildrenFilesOnly) {
  ProcessTree tree(proc_, 4242, &degraded_);
  EXPECT_TRUE(tree.uses_children_files());
  JobSnapshot snap;
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4260));  // not 999, which is not ours
  EXPECT_EQ(snap.processes, 3);
  EXPECT_EQ(snap.threads, 4);
  EXPECT_EQ(snap.rss_bytes, (25600 + 12800 + 256) * ::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(snap.total.user_ticks, 155u);
  EXPECT_EQ(snap.total.system_ticks, 35u);
  EXPECT_EQ(snap.total.read_bytes, 4096u);
  EXPECT_EQ(snap.total.rchar, 15100u);
  EXPECT_EQ(snap.delta.user_ticks, 0u);  // no earlier reading
  EXPECT_EQ(degraded_.no_children_files, 0);
}

TEST_F(FixtureTreeTest, ChildReapedByAMemberKeepsTheTotalContinuous) {
  ProcessTree tree(proc_, 4242, &degraded_);
  JobSnapshot snap;
  tree.Refresh(&snap);
  // 4260 burns 3 more user ticks and 1 system tick, exits, and 4250 reaps it:
  // its final counters move into 4250's cutime/cstime.
  Rewrite(P("4242/stat"), StatLine(4242, "python3", 1, 110, 20, 0, 0, 2, 5000, 25600));
  Rewrite(P("4250/stat"), StatLine(4250, "pt_data_worker", 4242, 70, 10, 8, 6, 1, 5100, 12800));
  Rewrite(P("4250/task/4250/children"), "");
  Rewrite(P("4260/stat"), "");  // gone
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250));
  EXPECT_EQ(snap.processes, 2);
  EXPECT_EQ(snap.delta.user_ticks, 10u + 20u + 3u);
  EXPECT_EQ(snap.delta.system_ticks, 1u);
}

TEST_F(FixtureTreeTest, OrphanStaysAMemberAndItsExitDoesNotMakeCpuNegative) {
  ProcessTree tree(proc_, 4242, &degraded_);
  JobSnapshot snap;
  tree.Refresh(&snap);
  // 4250 exits (reaped by the root); 4260 is reparented to init and goes on.
  Rewrite(P("4242/stat"), StatLine(4242, "python3", 1, 100, 20, 50, 10, 2, 5000, 25600));
  Rewrite(P("4242/task/4242/children"), "");
  Rewrite(P("4250/stat"), "");
  Rewrite(P("4260/stat"), StatLine(4260, "sh (worker) x", 1, 25, 5, 0, 0, 1, 5200, 256));
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4260));
  EXPECT_EQ(snap.delta.user_ticks, 20u);  // the orphan's own work
  // Then the orphan exits; init reaps it, so its use leaves the job's total.
  Rewrite(P("4242/stat"), StatLine(4242, "python3", 1, 104, 20, 50, 10, 2, 5000, 25600));
  Rewrite(P("4260/stat"), "");
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242));
  EXPECT_EQ(snap.delta.user_ticks, 4u);
  EXPECT_EQ(snap.total.user_ticks, 154u);
}

TEST_F(FixtureTreeTest, ChildForkedByASecondThreadIsFound) {
  ProcessTree tree(proc_, 4242, &degraded_);
  JobSnapshot snap;
  tree.Refresh(&snap);
  std::filesystem::create_directories(P("4270/task/4270"));
  Rewrite(P("4270/stat"), StatLine(4270, "compile", 4242, 30, 3, 0, 0, 1, 5300, 10));
  Rewrite(P("4270/io"), "rchar: 0\nwchar: 0\nread_bytes: 0\nwrite_bytes: 0\n");
  Rewrite(P("4270/task/4270/children"), "");
  Rewrite(P("4242/task/4243/children"), "4270 ");
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4260, 4270));
  EXPECT_EQ(snap.delta.user_ticks, 30u);  // born during the interval: all of it counts
  EXPECT_EQ(snap.delta.system_ticks, 3u);
}

TEST_F(FixtureTreeTest, OtherThreadsChildrenAreReadEveryFullScanTheLeadersEveryTick) {
  ProcessTree tree(proc_, 4242, &degraded_, /*full_scan_every=*/3);
  JobSnapshot snap;
  tree.Refresh(&snap);  // full
  for (int pid : {4270, 4280}) {
    std::filesystem::create_directories(P(std::to_string(pid) + "/task/" + std::to_string(pid)));
    Rewrite(P(std::to_string(pid) + "/stat"), StatLine(pid, "w", 4242, 30, 3, 0, 0, 1, 5300, 10));
    Rewrite(P(std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"), "");
  }
  Rewrite(P("4242/task/4243/children"), "4270 ");       // forked by the second thread
  Rewrite(P("4242/task/4242/children"), "4250 4280 ");  // forked by the leader
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4260, 4280));  // the leader's child at once
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4260, 4280));
  tree.Refresh(&snap);  // full again
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4260, 4270, 4280));
  EXPECT_EQ(snap.delta.user_ticks, 30u);  // found late, but all its CPU counts
}

TEST(OldKernelTreeTest, WithoutChildrenFilesScansProcAndSaysSoOnce) {
  TempDir dir;
  std::string proc = CopyFixture(dir, "old") + "/proc";
  DegradedCounters degraded;
  ProcessTree tree(proc, 4242, &degraded);
  EXPECT_FALSE(tree.uses_children_files());
  EXPECT_EQ(degraded.no_children_files, 1);
  EXPECT_GE(util::LogOnceCount("profiler.no-children-files"), 1);
  JobSnapshot snap;
  tree.Refresh(&snap);
  EXPECT_THAT(tree.pids(), ElementsAre(4242, 4250, 4251));  // grandchild too; not 777
  EXPECT_EQ(snap.threads, 5);
}

TEST(ProcessTreeTest, RootAlreadyGoneGivesAnEmptyTree) {
  DegradedCounters degraded;
  ProcessTree tree(testing::TestdataDir() + "/v2/proc", 31337, &degraded);
  JobSnapshot snap;
  tree.Refresh(&snap);
  EXPECT_TRUE(tree.pids().empty());
  EXPECT_EQ(snap.processes, 0);
}

// ---- real processes -----------------------------------------------------------

void BurnCpuMs(int64_t ms) {
  struct timespec start, now;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

// The child side: signals `ready`, waits for one byte on `go`, burns.
[[noreturn]] void Burner(int ready, int go, int64_t ms) {
  char c = 'r';
  if (::write(ready, &c, 1) != 1) ::_exit(2);
  if (::read(go, &c, 1) != 1) ::_exit(3);
  BurnCpuMs(ms);
  ::_exit(0);
}

// Reads exactly n bytes (they may arrive one write at a time).
bool ReadBytes(int fd, int n) {
  char c;
  for (int i = 0; i < n; ++i) {
    if (::read(fd, &c, 1) != 1) return false;
  }
  return true;
}

TEST(ProcessTreeRealTest, CountsCpuOfGrandchildrenThatExitBetweenTicks) {
  int ready[2], go[2], done[2], hold[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(done), 0);
  ASSERT_EQ(::pipe(hold), 0);
  pid_t root = ::fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    ::close(hold[1]);  // or reading `hold` would never see its end
    // root -> g1 -> gg, root -> g2; each of g1, g2, gg burns 300 ms of CPU.
    pid_t g1 = ::fork();
    if (g1 == 0) {
      pid_t gg = ::fork();
      if (gg == 0) Burner(ready[1], go[0], 300);
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(3);
      BurnCpuMs(300);
      ::waitpid(gg, nullptr, 0);
      ::_exit(0);
    }
    pid_t g2 = ::fork();
    if (g2 == 0) Burner(ready[1], go[0], 300);
    ::waitpid(g1, nullptr, 0);
    ::waitpid(g2, nullptr, 0);
    char c = 'd';
    if (::write(done[1], &c, 1) != 1) ::_exit(4);
    ::read(hold[0], &c, 1);  // stays alive until the test closes `hold`
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[1]);
  ::close(hold[0]);
  ASSERT_TRUE(ReadBytes(ready[0], 3));  // g1, g2 and gg are up

  DegradedCounters degraded;
  ProcessTree tree("/proc", root, &degraded);
  JobSnapshot snap;
  tree.Refresh(&snap);
  EXPECT_EQ(snap.processes, 4);
  EXPECT_EQ(tree.pids().size(), 4u);

  ASSERT_EQ(::write(go[1], "ggg", 3), 3);
  ASSERT_TRUE(ReadBytes(done[0], 1));  // all three burned and were reaped
  tree.Refresh(&snap);
  EXPECT_EQ(snap.processes, 1);
  double cpu_s = static_cast<double>(snap.delta.user_ticks + snap.delta.system_ticks) /
                 static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_GE(cpu_s, 0.85);  // 3 x 300 ms, less tick rounding

  ::close(hold[1]);
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(root, &status, 0, &usage), root);
  // Counted once: at most what the kernel charged the whole tree (root and
  // the descendants it reaped, from their forks on), plus a tick of
  // rounding for each of the four processes. A fixed bound failed on a
  // loaded machine, where forking an ASan process costs more.
  const double kernel_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                          static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  EXPECT_LE(cpu_s, kernel_s + 4.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)));
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int fd : {ready[0], go[0], go[1], done[0]}) ::close(fd);
}

}  // namespace
}  // namespace trainwatch::profiler
