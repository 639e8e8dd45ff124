#include "profiler/proc_parsers.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/test_util.h"

namespace trainwatch::profiler {
namespace {

using testing::ReadFile;
using testing::TestdataDir;

TEST(ProcStatTest, ParsesTotalAndEveryCore) {
  ProcStat st;
  ASSERT_TRUE(ParseProcStat(ReadFile(TestdataDir() + "/v2/proc/stat"), &st).ok());
  EXPECT_EQ(st.total.user, 10000u);
  EXPECT_EQ(st.total.steal, 400u);
  EXPECT_EQ(st.total.Total(), 10000u + 200 + 4000 + 80000 + 800 + 0 + 100 + 400);
  EXPECT_EQ(st.total.Busy(), st.total.Total() - 80000 - 800);
  EXPECT_THAT(st.core_ids, ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(st.cores[3].idle, 20000u);
  EXPECT_EQ(st.missing_fields, 0);
}

TEST(ProcStatTest, OldKernelWithoutStealColumnIsCountedNotRefused) {
  ProcStat st;
  ASSERT_TRUE(ParseProcStat(ReadFile(TestdataDir() + "/old/proc/stat"), &st).ok());
  EXPECT_EQ(st.core_ids.size(), 2u);
  EXPECT_EQ(st.total.steal, 0u);
  EXPECT_EQ(st.missing_fields, 3);  // cpu, cpu0, cpu1 lack steal
}

TEST(ProcStatTest, OfflineCoresAreAbsentNotRenumbered) {
  ProcStat st;
  ASSERT_TRUE(
      ParseProcStat("cpu  1 0 1 1 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0\ncpu5 0 0 0 0 0 0 0 0\n", &st)
          .ok());
  EXPECT_THAT(st.core_ids, ::testing::ElementsAre(0, 5));
}

TEST(ProcStatTest, RefusesTextWithoutCpuLine) {
  ProcStat st;
  absl::Status s = ParseProcStat("intr 1 2 3\n", &st);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("no \"cpu \" line"));
  s = ParseProcStat("cpu  a b c\n", &st);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("\"cpu  a b c\""));
}

TEST(MeminfoTest, ReadsBytes) {
  MemInfo m;
  ASSERT_TRUE(ParseMeminfo(ReadFile(TestdataDir() + "/v2/proc/meminfo"), &m).ok());
  EXPECT_EQ(m.total_bytes, 16000000ull * 1024);
  EXPECT_EQ(m.available_bytes, 12000000ull * 1024);
  EXPECT_EQ(m.cached_bytes, 3000000ull * 1024);
  EXPECT_EQ(m.swap_free_bytes, 1500000ull * 1024);
  EXPECT_TRUE(m.has_available);
  EXPECT_EQ(m.missing_fields, 0);
}

TEST(MeminfoTest, EstimatesAvailableOnKernelsWithoutMemAvailable) {
  MemInfo m;
  ASSERT_TRUE(ParseMeminfo(ReadFile(TestdataDir() + "/old/proc/meminfo"), &m).ok());
  EXPECT_FALSE(m.has_available);
  EXPECT_EQ(m.missing_fields, 1);
  EXPECT_EQ(m.available_bytes, (1000000ull + 200000 + 800000) * 1024);
}

TEST(MeminfoTest, RefusesWithoutMemTotal) {
  MemInfo m;
  EXPECT_TRUE(absl::IsInvalidArgument(ParseMeminfo("MemFree: 10 kB\n", &m)));
}

TEST(DiskstatsTest, ReadsCountersAndSkipsShortLines) {
  std::vector<DiskStat> disks;
  int missing = 0;
  // Names point into the text: keep it alive.
  const std::string text = ReadFile(TestdataDir() + "/v2/proc/diskstats");
  ASSERT_TRUE(ParseDiskstats(text, &disks, &missing).ok());
  ASSERT_EQ(disks.size(), 6u);
  EXPECT_EQ(disks[1].name, "nvme0n1");
  EXPECT_EQ(disks[1].reads, 1000u);
  EXPECT_EQ(disks[1].read_sectors, 20000u);
  EXPECT_EQ(disks[1].writes, 2000u);
  EXPECT_EQ(disks[1].write_sectors, 40000u);
  EXPECT_EQ(disks[1].io_ticks_ms, 1000u);
  EXPECT_EQ(missing, 0);

  ASSERT_TRUE(
      ParseDiskstats(ReadFile(TestdataDir() + "/old/proc/diskstats"), &disks, &missing).ok());
  ASSERT_EQ(disks.size(), 1u);  // "sda1" has only the 2.4-era 4 partition counters
  EXPECT_EQ(missing, 1);
}

TEST(NetDevTest, ReadsInterfacesIncludingCountersGluedToTheColon) {
  std::vector<NetDevStat> nets;
  int missing = 0;
  const std::string text = ReadFile(TestdataDir() + "/v2/proc/net/dev");
  ASSERT_TRUE(ParseNetDev(text, &nets, &missing).ok());
  ASSERT_EQ(nets.size(), 3u);
  EXPECT_EQ(nets[0].name, "lo");
  EXPECT_EQ(nets[1].name, "eth0");
  EXPECT_EQ(nets[1].rx_bytes, 1000000000u);
  EXPECT_EQ(nets[1].rx_errors, 1u);
  EXPECT_EQ(nets[1].tx_bytes, 2000000u);
  EXPECT_EQ(nets[1].tx_packets, 1000u);
  EXPECT_EQ(nets[2].name, "ib0");
  EXPECT_EQ(missing, 0);
}

TEST(NetDevTest, ShortInterfaceLineIsCounted) {
  std::vector<NetDevStat> nets;
  int missing = 0;
  ASSERT_TRUE(ParseNetDev("eth0: 1 2 3\n", &nets, &missing).ok());
  EXPECT_TRUE(nets.empty());
  EXPECT_EQ(missing, 1);
}

TEST(LoadavgTest, Reads) {
  LoadAvg l;
  ASSERT_TRUE(ParseLoadavg(ReadFile(TestdataDir() + "/v2/proc/loadavg"), &l).ok());
  EXPECT_DOUBLE_EQ(l.load1, 3.5);
  EXPECT_DOUBLE_EQ(l.load15, 1.0);
  EXPECT_EQ(l.runnable, 3u);
  EXPECT_EQ(l.total_tasks, 412u);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseLoadavg("high\n", &l)));
}

TEST(PressureTest, ReadsSomeAndFullTotals) {
  Pressure p;
  ASSERT_TRUE(ParsePressure(ReadFile(TestdataDir() + "/v2/proc/pressure/io"), &p).ok());
  EXPECT_TRUE(p.has_some);
  EXPECT_TRUE(p.has_full);
  EXPECT_EQ(p.some_total_us, 6000000u);
  EXPECT_EQ(p.full_total_us, 5000000u);
  // cpu before Linux 5.13 has no "full" line.
  ASSERT_TRUE(ParsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n", &p).ok());
  EXPECT_FALSE(p.has_full);
  EXPECT_EQ(p.some_total_us, 42u);
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePressure("some avg10=0.00\n", &p)));
}

TEST(PidStatTest, HandlesCommWithBlanksAndParentheses) {
  PidStat st;
  ASSERT_TRUE(ParsePidStat(ReadFile(TestdataDir() + "/v2/proc/4260/stat"), &st).ok());
  EXPECT_EQ(st.ppid, 4250);
  EXPECT_EQ(st.utime, 5u);
  EXPECT_EQ(st.stime, 5u);
  EXPECT_EQ(st.num_threads, 1);
  EXPECT_EQ(st.start_time, 5200u);
  EXPECT_EQ(st.rss_pages, 256);
  ASSERT_TRUE(ParsePidStat(testing::StatLine(7, "a) (b", 3, 11, 12, 13, 14, 5, 99, 42), &st).ok());
  EXPECT_EQ(st.ppid, 3);
  EXPECT_EQ(st.cutime, 13u);
  EXPECT_EQ(st.cstime, 14u);
  EXPECT_EQ(st.rss_pages, 42);
}

TEST(PidStatTest, RefusesTruncatedLine) {
  PidStat st;
  absl::Status s = ParsePidStat("12 (x) S 1 2 3", &st);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("12 (x) S 1 2 3"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePidStat("garbage", &st)));
}

TEST(PidIoTest, Reads) {
  PidIo io;
  ASSERT_TRUE(ParsePidIo(ReadFile(TestdataDir() + "/v2/proc/4242/io"), &io).ok());
  EXPECT_EQ(io.rchar, 10000u);
  EXPECT_EQ(io.wchar, 2000u);
  EXPECT_EQ(io.read_bytes, 4096u);
  EXPECT_EQ(io.write_bytes, 8192u);
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePidIo("", &io)));
}

TEST(ProcCgroupTest, UnifiedOnly) {
  ProcCgroup cg;
  ASSERT_TRUE(ParseProcCgroup(ReadFile(TestdataDir() + "/v2/proc/4242/cgroup"), &cg).ok());
  EXPECT_TRUE(cg.has_unified);
  EXPECT_EQ(cg.unified_path, "/system.slice/train.scope");
  EXPECT_FALSE(cg.has_v1);
}

TEST(ProcCgroupTest, V1ControllersAreRecognised) {
  ProcCgroup cg;
  ASSERT_TRUE(ParseProcCgroup(ReadFile(TestdataDir() + "/old/proc/4242/cgroup"), &cg).ok());
  EXPECT_TRUE(cg.has_v1);
  EXPECT_TRUE(cg.v1_cpu_or_memory);
  EXPECT_TRUE(cg.has_unified);  // hybrid: the empty v2 hierarchy is listed too
  ASSERT_TRUE(ParseProcCgroup("3:pids:/x\n1:name=systemd:/x\n", &cg).ok());
  EXPECT_TRUE(cg.has_v1);
  EXPECT_FALSE(cg.v1_cpu_or_memory);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseProcCgroup("nonsense\n", &cg)));
}

TEST(CgroupFilesTest, CpuStatMemoryEventsAndLimits) {
  std::string dir = TestdataDir() + "/v2/sys/fs/cgroup/system.slice/train.scope";
  CgroupCpuStat cpu;
  ASSERT_TRUE(ParseCgroupCpuStat(ReadFile(dir + "/cpu.stat"), &cpu).ok());
  EXPECT_EQ(cpu.usage_usec, 5000000u);
  EXPECT_TRUE(cpu.has_throttling);
  EXPECT_EQ(cpu.nr_periods, 100u);
  EXPECT_EQ(cpu.nr_throttled, 10u);
  EXPECT_EQ(cpu.throttled_usec, 200000u);
  // Without the cpu controller only the usage lines appear.
  ASSERT_TRUE(ParseCgroupCpuStat("usage_usec 1\nuser_usec 1\nsystem_usec 0\n", &cpu).ok());
  EXPECT_FALSE(cpu.has_throttling);

  CgroupMemoryEvents ev;
  ASSERT_TRUE(ParseCgroupMemoryEvents(ReadFile(dir + "/memory.events"), &ev).ok());
  EXPECT_EQ(ev.max, 3u);
  EXPECT_EQ(ev.oom, 1u);
  EXPECT_EQ(ev.oom_kill, 1u);

  uint64_t limit = 0;
  ASSERT_TRUE(ParseCgroupLimit("max\n", &limit).ok());
  EXPECT_EQ(limit, std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(ParseCgroupLimit("8589934592\n", &limit).ok());
  EXPECT_EQ(limit, 8589934592u);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseCgroupLimit("lots\n", &limit)));
}

}  // namespace
}  // namespace trainwatch::profiler
