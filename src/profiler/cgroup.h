#pragma once
// CgroupReader: the job's cgroup v2 statistics (a container's CPU quota
// throttling, memory use against its limit, OOM kills), read from
// <sys_root>/fs/cgroup/<path of the root pid's "0::" line>.
//
// Degraded modes, each logged once and counted: a cgroup v1 or hybrid
// hierarchy (cgroup_v1: no container statistics; the process-tree series
// still cover the job), a cgroup file that cannot be read (cgroup_unreadable).
// A job in the root cgroup (not in a container) has no cgroup series, and
// that is not a degraded mode.
// Thread safety: none.

#include <cstdint>
#include <string>

#include "profiler/proc_file.h"
#include "profiler/proc_parsers.h"
#include "profiler/profiler_options.h"

namespace trainwatch::profiler {

struct CgroupSnapshot {
  bool has_cpu = false;
  CgroupCpuStat cpu;
  bool has_memory = false;
  uint64_t memory_current_bytes = 0;
  uint64_t memory_max_bytes = UINT64_MAX;  // UINT64_MAX: no limit ("max")
  uint64_t inactive_file_bytes = 0;        // read only when memory_max is finite
  bool has_events = false;
  CgroupMemoryEvents events;
};

class CgroupReader {
 public:
  // Finds the root pid's cgroup and opens its files. `degraded` must outlive it.
  CgroupReader(const std::string& proc_root, const std::string& sys_root, int64_t root_pid,
               DegradedCounters* degraded);

  // True when a cgroup v2 directory other than the root was found.
  bool active() const { return active_; }
  const std::string& dir() const { return dir_; }

  void Read(CgroupSnapshot* out);

 private:
  bool ReadFile(ProcFile* f, std::string_view* text);

  DegradedCounters* degraded_;
  bool active_ = false;
  std::string dir_;
  ProcFile cpu_stat_, memory_current_, memory_max_, memory_events_, memory_stat_;
};

}  // namespace trainwatch::profiler
