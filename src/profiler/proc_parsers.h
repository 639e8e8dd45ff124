#pragma once
// Parsers for the kernel files the profiler reads. Each parses text already in
// memory, allocates nothing once its output vectors have grown, and returns
// InvalidArgument (quoting the offending line) only when the file is not
// recognisable at all; a known line with fields missing is skipped or
// zero-filled and counted in `missing_fields`, so that callers can log the
// degraded mode once and go on.
//
// Formats: Documentation/filesystems/proc.rst, admin-guide/iostats.rst,
// accounting/psi.rst and admin-guide/cgroup-v2.rst of the Linux kernel.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace trainwatch::profiler {

// ---- /proc/stat -------------------------------------------------------------

// Cumulative CPU time in USER_HZ ticks (sysconf(_SC_CLK_TCK)). guest and
// guest_nice are already included in user and nice by the kernel.
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  // Time not idle and not waiting for I/O.
  uint64_t Busy() const { return Total() - idle - iowait; }
};

struct ProcStat {
  CpuTimes total;               // the "cpu" line
  std::vector<int> core_ids;    // N of each "cpuN" line, in file order (offline cores absent)
  std::vector<CpuTimes> cores;  // parallel to core_ids
  int missing_fields = 0;       // cpu lines shorter than the 8 columns above (kernels < 2.6.11)
};

// InvalidArgument when there is no "cpu " line.
absl::Status ParseProcStat(std::string_view text, ProcStat* out);

// ---- /proc/meminfo ----------------------------------------------------------

struct MemInfo {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t available_bytes = 0;  // MemAvailable, or an estimate when absent (see below)
  uint64_t buffers_bytes = 0;
  uint64_t cached_bytes = 0;
  uint64_t swap_total_bytes = 0;
  uint64_t swap_free_bytes = 0;
  // MemAvailable is missing before Linux 3.14: then available_bytes is
  // MemFree + Buffers + Cached and this is false.
  bool has_available = false;
  int missing_fields = 0;  // of MemTotal, MemFree, MemAvailable, Buffers, Cached
};

// InvalidArgument when MemTotal is absent or zero.
absl::Status ParseMeminfo(std::string_view text, MemInfo* out);

// ---- /proc/diskstats --------------------------------------------------------

struct DiskStat {
  std::string_view name;      // points into the parsed text
  uint64_t reads = 0;         // completed
  uint64_t read_sectors = 0;  // always 512-byte units
  uint64_t writes = 0;
  uint64_t write_sectors = 0;
  uint64_t io_ticks_ms = 0;  // time the device had I/O in flight
};

// Lines with fewer than the 14 columns of Linux 2.6 are skipped and counted.
absl::Status ParseDiskstats(std::string_view text, std::vector<DiskStat>* out, int* missing_fields);

// ---- /proc/net/dev ----------------------------------------------------------

struct NetDevStat {
  std::string_view name;  // points into the parsed text
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_drops = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_drops = 0;
};

// The two header lines are skipped; an interface line with fewer than 16
// counters is skipped and counted.
absl::Status ParseNetDev(std::string_view text, std::vector<NetDevStat>* out, int* missing_fields);

// ---- /proc/loadavg ----------------------------------------------------------

struct LoadAvg {
  double load1 = 0, load5 = 0, load15 = 0;
  uint64_t runnable = 0;     // currently runnable scheduling entities
  uint64_t total_tasks = 0;  // existing scheduling entities
};

absl::Status ParseLoadavg(std::string_view text, LoadAvg* out);

// ---- /proc/pressure/{cpu,memory,io} and cgroup *.pressure --------------------

struct Pressure {
  bool has_some = false, has_full = false;
  uint64_t some_total_us = 0;  // cumulative stall time, microseconds
  uint64_t full_total_us = 0;
};

absl::Status ParsePressure(std::string_view text, Pressure* out);

// ---- /proc/<pid>/stat, /proc/<pid>/io -----------------------------------------

struct PidStat {
  char state = '?';
  int64_t ppid = 0;
  uint64_t utime = 0, stime = 0;    // ticks, this process (all its threads, live and exited)
  uint64_t cutime = 0, cstime = 0;  // ticks, children it has waited for (recursively)
  int64_t num_threads = 0;
  uint64_t start_time = 0;  // ticks after boot
  int64_t rss_pages = 0;
};

// InvalidArgument when the line has no "(comm)" or fewer than 24 fields.
absl::Status ParsePidStat(std::string_view text, PidStat* out);

struct PidIo {
  uint64_t rchar = 0, wchar = 0;             // all read()/write() bytes (pipes, sockets too)
  uint64_t read_bytes = 0, write_bytes = 0;  // bytes fetched from / sent to storage
};

absl::Status ParsePidIo(std::string_view text, PidIo* out);

// ---- cgroup -----------------------------------------------------------------

// /proc/<pid>/cgroup. Lines are "hierarchy-id:controllers:path".
struct ProcCgroup {
  bool has_unified = false;       // a "0::<path>" line
  std::string unified_path;       // its path
  bool has_v1 = false;            // any v1 hierarchy line with controllers
  bool v1_cpu_or_memory = false;  // a v1 hierarchy holds the cpu or memory controller
};

absl::Status ParseProcCgroup(std::string_view text, ProcCgroup* out);

// Calls fn(key, value) for each "key value" line of a flat-keyed cgroup file
// (cpu.stat, memory.events, memory.stat); lines whose value is not a number
// are skipped.
template <typename Fn>
void ForEachFlatKeyed(std::string_view text, Fn&& fn);

struct CgroupCpuStat {
  uint64_t usage_usec = 0, user_usec = 0, system_usec = 0;
  bool has_throttling = false;  // nr_periods etc. appear only with the cpu controller enabled
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_usec = 0;
};

absl::Status ParseCgroupCpuStat(std::string_view text, CgroupCpuStat* out);

struct CgroupMemoryEvents {
  uint64_t low = 0, high = 0, max = 0, oom = 0, oom_kill = 0;
};

absl::Status ParseCgroupMemoryEvents(std::string_view text, CgroupMemoryEvents* out);

// memory.max / cpu.max style single value: a number, or "max" (unlimited, *out
// set to UINT64_MAX).
absl::Status ParseCgroupLimit(std::string_view text, uint64_t* out);

}  // namespace trainwatch::profiler

// ---- template definitions ---------------------------------------------------

#include "profiler/text_scan.h"

namespace trainwatch::profiler {

template <typename Fn>
void ForEachFlatKeyed(std::string_view text, Fn&& fn) {
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[2];
  while (lines.Next(&line)) {
    if (SplitFields(line, f, 2) != 2) continue;
    uint64_t v = 0;
    if (ParseU64(f[1], &v)) fn(f[0], v);
  }
}

}  // namespace trainwatch::profiler
