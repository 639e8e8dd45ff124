#pragma once
// HostSampler: the machine under the job: CPU per core and in total, memory,
// disks, network interfaces, load, pressure stall information, and the
// filesystem holding the job's working directory. Series: docs/profiler.md.
// Thread safety: none.

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/proc_file.h"
#include "profiler/proc_parsers.h"
#include "profiler/profiler_options.h"
#include "profiler/series_table.h"
#include "profiler/tick_context.h"

namespace trainwatch::profiler {

// What the SageMaker metrics need from the host part of a tick.
struct HostResult {
  bool has_memory = false;
  double memory_used_percent = 0;  // (MemTotal - MemAvailable) / MemTotal
  bool has_filesystem = false;
  double filesystem_used_percent = 0;  // as df: used / (used + available to users)
  int cores = 0;
};

class HostSampler {
 public:
  // Opens the files under options.proc_root / sys_root. FailedPrecondition
  // when <proc_root>/stat or meminfo cannot be opened (not a Linux /proc);
  // every other file may be missing (degraded modes, logged once and counted).
  static absl::StatusOr<std::unique_ptr<HostSampler>> Create(const ProfilerOptions& options,
                                                             std::string host,
                                                             std::string disk_path,
                                                             SeriesTable* table,
                                                             DegradedCounters* degraded);

  void Sample(const TickContext& ctx, HostResult* out);

 private:
  struct CpuSlots {
    int id = -1;  // core id, -1 for the total
    CpuTimes prev;
    bool have_prev = false;
    Slot busy, user, system, iowait, steal;
  };
  struct DiskState {
    std::string name;
    bool ignored = false;   // partition, loop, ram, zram or fd: not sampled at all
    bool capped = false;    // beyond max_devices: in the totals only
    bool physical = false;  // has <sys>/block/<name>/device: counted in the host totals
    DiskStat prev;
    bool have_prev = false;
    Slot read_bytes, write_bytes, read_ops, write_ops, busy;
  };
  struct NetState {
    std::string name;
    bool capped = false;  // beyond max_devices: only in the totals
    NetDevStat prev;
    bool have_prev = false;
    Slot rx_bytes, tx_bytes, rx_packets, tx_packets, rx_errors, tx_errors;
  };
  struct PsiState {
    const char* resource;
    ProcFile file;
    Pressure prev;
    bool have_prev = false;
    Slot some = kNoSlot, full = kNoSlot;
  };

  HostSampler(const ProfilerOptions& options, std::string host, std::string disk_path,
              SeriesTable* table, DegradedCounters* degraded);
  Slot AddHost(std::string_view metric, std::string_view unit);
  Slot AddWith(std::string_view metric, std::string_view dim, const std::string& value,
               std::string_view unit);
  CpuSlots MakeCpuSlots(int id);
  void EmitCpu(const TickContext& ctx, CpuSlots* s, const CpuTimes& now);
  bool ReadHostFile(ProcFile* f, std::string_view* text);
  void SampleCpu(const TickContext& ctx, HostResult* out);
  void SampleMemory(const TickContext& ctx, HostResult* out);
  void SampleDisks(const TickContext& ctx);
  void SampleNetwork(const TickContext& ctx);
  void SampleLoadAndPressure(const TickContext& ctx);
  void SampleFilesystem(const TickContext& ctx, HostResult* out);
  DiskState* FindDisk(std::string_view name, size_t hint);
  NetState* FindNet(std::string_view name, size_t hint);
  void MissingFields(const char* file, int count);

  ProfilerOptions options_;
  std::string host_;
  std::string disk_path_;
  SeriesTable* table_;
  DegradedCounters* degraded_;

  ProcFile stat_, meminfo_, diskstats_, netdev_, loadavg_;
  ProcStat proc_stat_;
  CpuSlots cpu_total_;
  std::vector<CpuSlots> cores_;  // sorted by id
  Slot cores_count_;
  Slot mem_total_, mem_used_, mem_available_, mem_cache_, mem_used_pct_, swap_used_;
  std::vector<DiskStat> disk_stats_;
  std::vector<DiskState> disks_;
  Slot disk_read_bytes_, disk_write_bytes_, disk_read_ops_, disk_write_ops_;
  int per_device_disks_ = 0;
  std::vector<NetDevStat> net_stats_;
  std::vector<NetState> nets_;
  Slot net_rx_bytes_, net_tx_bytes_, net_rx_packets_, net_tx_packets_, net_rx_errors_,
      net_tx_errors_;
  Slot load1_, load5_, load15_, runnable_;
  PsiState psi_[3];
  Slot fs_used_, fs_available_;
};

}  // namespace trainwatch::profiler
