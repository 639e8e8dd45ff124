#pragma once
// What the job runner configures (ProfilerOptions) and what the profiler
// reports about itself (ProfilerStats, DegradedCounters).

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::profiler {

// SageMaker's ProfilingIntervalInMilliseconds values (spec/aws-api.md §5.5);
// trainwatch accepts exactly these, so that a job's data lines up with
// Debugger's and rules see the granularity they were written for.
inline constexpr int64_t kAllowedIntervalsMs[] = {100, 200, 500, 1000, 5000, 60000};
inline constexpr int64_t kDefaultIntervalMs = 1000;

// "100ms", "200ms", "500ms", "1s", "5s", "1m" (any spelling util::ParseDurationMs
// reads as one of these, e.g. "0.5s", "60s", "1000ms") -> milliseconds; "off"
// (any case) -> 0. InvalidArgument quoting the text and listing the allowed
// values otherwise.
absl::StatusOr<int64_t> ParseProfileInterval(std::string_view text);

// InvalidArgument unless interval_ms is one of kAllowedIntervalsMs.
absl::Status ValidateProfileInterval(int64_t interval_ms);

struct ProfilerOptions {
  int64_t interval_ms = kDefaultIntervalMs;  // one of kAllowedIntervalsMs
  std::string job_name;                      // required; Host = "<job>/algo-<host_index>"
  int host_index = 1;                        // >= 1
  std::string proc_root = "/proc";           // fixture trees in tests
  std::string sys_root = "/sys";
  // NVML to dlopen; empty turns GPU sampling off without a notice.
  std::string nvml_library = "libnvidia-ml.so.1";
  // Filesystem whose fullness is DiskUtilization; empty: the job's working
  // directory (readlink <proc_root>/<pid>/cwd at start).
  std::string disk_path;
  // How often the GPU list is enumerated again (devices appearing or coming back).
  int64_t gpu_rescan_interval_ms = 10000;
  // How often the job's per-GPU memory (process lists) and, on GPUs without
  // GPM, PCIe throughput are read: both cost far more than the other NVML
  // queries (NVML's PCIe counter blocks for 20 ms per call).
  int64_t gpu_slow_query_interval_ms = 1000;
  // Per-device and per-interface series are kept for at most this many
  // devices and interfaces (hosts with hundreds of veth interfaces); the
  // host totals still cover all of them.
  int max_devices = 64;
};

// Degraded modes: each is logged once (util::LogOnce, key "profiler.<name>")
// and counted here every time it occurs.
struct DegradedCounters {
  int64_t nvml_unavailable = 0;       // library absent or nvmlInit failed: no GPU series
  int64_t cgroup_v1 = 0;              // v1 or hybrid hierarchy: no throttling / memory events
  int64_t cgroup_unreadable = 0;      // a cgroup v2 file could not be read
  int64_t psi_unavailable = 0;        // /proc/pressure/<resource> absent (no PSI in the kernel)
  int64_t proc_fields_missing = 0;    // a /proc line lacked fields (old kernel), per occurrence
  int64_t proc_read_errors = 0;       // a host file could not be read or parsed
  int64_t no_children_files = 0;      // no /proc/<pid>/task/<tid>/children: /proc scanned instead
  int64_t pid_io_unreadable = 0;      // /proc/<pid>/io refused (another user's process)
  int64_t disk_path_unavailable = 0;  // no working directory to measure DiskUtilization on
  int64_t gpu_lost = 0;               // GPUs dropped (NVML_ERROR_GPU_IS_LOST or gone)
  int64_t gpu_field_unsupported = 0;  // (GPU, field) pairs answering NOT_SUPPORTED
  int64_t gpu_read_errors = 0;        // other NVML errors on a field, per occurrence
  int64_t gpu_process_list_invalid = 0;  // a process list NVML returned made no sense
  int64_t series_capped = 0;             // devices/interfaces beyond max_devices
  int64_t nonfinite_dropped = 0;         // NaN/Inf values not written
};

struct ProfilerStats {
  int64_t ticks = 0;         // samplings taken, the first and the final included
  int64_t late_ticks = 0;    // grid slots skipped because a tick overran its slot
  int64_t samples = 0;       // values handed to the sink
  int64_t put_errors = 0;    // sink Put failures (that tick's batch is lost)
  int64_t own_cpu_ns = 0;    // CPU time of the sampling thread
  int64_t max_tick_ns = 0;   // longest tick, wall time (sampling + Put)
  int64_t nvml_init_ns = 0;  // time nvmlInit took (0 without NVML)
  int gpus = 0;              // GPUs sampled at the last tick
  DegradedCounters degraded;
};

}  // namespace trainwatch::profiler
