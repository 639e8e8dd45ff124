#include "profiler/cgroup.h"

#include <unistd.h>

#include "absl/strings/str_format.h"
#include "util/log.h"

namespace trainwatch::profiler {

CgroupReader::CgroupReader(const std::string& proc_root, const std::string& sys_root,
                           int64_t root_pid, DegradedCounters* degraded)
    : degraded_(degraded) {
  ProcFile f;
  std::string path = absl::StrFormat("%s/%d/cgroup", proc_root, root_pid);
  if (!f.Open(path).ok()) return;  // the job has gone already, or no cgroups at all
  absl::StatusOr<std::string_view> text = f.Read();
  ProcCgroup cg;
  if (!text.ok() || !ParseProcCgroup(*text, &cg).ok()) return;

  std::string mount = sys_root + "/fs/cgroup";
  bool unified_mount = ::access((mount + "/cgroup.controllers").c_str(), F_OK) == 0;
  if (!cg.has_unified || !unified_mount || cg.v1_cpu_or_memory) {
    if (cg.has_v1) {
      ++degraded_->cgroup_v1;
      util::LogOnce("profiler.cgroup-v1",
                    absl::StrFormat(
                        "profiler: the job runs under cgroup v1 (%s): container CPU "
                        "throttling, memory limit and OOM-kill series are off; the process-tree "
                        "series still cover the job (boot with systemd.unified_cgroup_hierarchy=1 "
                        "for cgroup v2)",
                        path));
    }
    return;
  }
  if (cg.unified_path == "/" || cg.unified_path.empty()) return;  // not in a container
  dir_ = mount + cg.unified_path;
  active_ = true;
  // Each file may be absent when its controller is not enabled for the group.
  cpu_stat_.Open(dir_ + "/cpu.stat").IgnoreError();
  memory_current_.Open(dir_ + "/memory.current", 64).IgnoreError();
  memory_max_.Open(dir_ + "/memory.max", 64).IgnoreError();
  memory_events_.Open(dir_ + "/memory.events", 256).IgnoreError();
  memory_stat_.Open(dir_ + "/memory.stat").IgnoreError();
  if (!cpu_stat_.is_open() && !memory_current_.is_open()) {
    ++degraded_->cgroup_unreadable;
    util::LogOnce("profiler.cgroup-unreadable",
                  absl::StrFormat("profiler: cannot open cpu.stat or memory.current in %s; "
                                  "cgroup series are off",
                                  dir_));
    active_ = false;
  }
}

bool CgroupReader::ReadFile(ProcFile* f, std::string_view* text) {
  if (!f->is_open()) return false;
  absl::StatusOr<std::string_view> t = f->Read();
  if (!t.ok()) {
    ++degraded_->cgroup_unreadable;
    util::LogOnce("profiler.cgroup-unreadable",
                  absl::StrFormat("profiler: %s", std::string(t.status().message())));
    return false;
  }
  *text = *t;
  return true;
}

void CgroupReader::Read(CgroupSnapshot* out) {
  *out = CgroupSnapshot();
  if (!active_) return;
  std::string_view text;
  if (ReadFile(&cpu_stat_, &text)) out->has_cpu = ParseCgroupCpuStat(text, &out->cpu).ok();
  if (ReadFile(&memory_current_, &text)) {
    out->has_memory = ParseCgroupLimit(text, &out->memory_current_bytes).ok();
  }
  if (out->has_memory && ReadFile(&memory_max_, &text)) {
    if (!ParseCgroupLimit(text, &out->memory_max_bytes).ok()) out->memory_max_bytes = UINT64_MAX;
  }
  if (out->has_memory && out->memory_max_bytes != UINT64_MAX && ReadFile(&memory_stat_, &text)) {
    ForEachFlatKeyed(text, [&](std::string_view key, uint64_t v) {
      if (key == "inactive_file") out->inactive_file_bytes = v;
    });
  }
  if (ReadFile(&memory_events_, &text)) {
    out->has_events = ParseCgroupMemoryEvents(text, &out->events).ok();
  }
}

}  // namespace trainwatch::profiler
