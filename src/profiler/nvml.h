#pragma once
// NVML loaded with dlopen, and the GPU part of the sampler.
//
// No build dependency on NVIDIA's headers or libraries: NvmlLibrary::Load
// dlopens the library (libnvidia-ml.so.1 by default), looks the functions up
// and calls nvmlInit_v2. Optional functions (GPM, throttle reasons, process
// lists) may be missing on older drivers; their series are then left out.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiler/nvml_api.h"
#include "profiler/profiler_options.h"
#include "profiler/series_table.h"
#include "profiler/tick_context.h"
#include "util/shared_library.h"

namespace trainwatch::profiler {

// NvmlLibrary: an initialised NVML. Destroying it calls nvmlShutdown and
// dlcloses the library. Thread safety: NVML's own (thread-safe); the profiler
// uses it from its sampling thread only.
class NvmlLibrary {
 public:
  // Unavailable when the library cannot be loaded (dlerror quoted), lacks a
  // required function, or nvmlInit_v2 fails (NVML's error string quoted, e.g.
  // "Driver Not Loaded").
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Load(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // "NVML_ERROR_..." text from nvmlErrorString, or the number.
  std::string ErrorString(nvml::Return r) const;

  // Required.
  nvml::DeviceGetCountFn device_get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetStringFn device_get_uuid = nullptr;
  nvml::DeviceGetStringFn device_get_name = nullptr;
  nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  // Optional: nullptr when the library lacks them.
  nvml::DeviceGetPowerUsageFn device_get_power_usage = nullptr;
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;
  nvml::DeviceGetClockInfoFn device_get_clock_info = nullptr;
  nvml::DeviceGetThrottleReasonsFn device_get_throttle_reasons = nullptr;
  nvml::DeviceGetPcieThroughputFn device_get_pcie_throughput = nullptr;
  nvml::DeviceGetProcessesFn device_get_compute_processes = nullptr;
  size_t process_info_stride = 0;  // bytes per entry of the function found above
  nvml::GpmQueryDeviceSupportFn gpm_query_device_support = nullptr;
  nvml::GpmSampleAllocFn gpm_sample_alloc = nullptr;
  nvml::GpmSampleFreeFn gpm_sample_free = nullptr;
  nvml::GpmSampleGetFn gpm_sample_get = nullptr;
  nvml::GpmMetricsGetFn gpm_metrics_get = nullptr;

 private:
  NvmlLibrary() = default;
  std::unique_ptr<util::SharedLibrary> library_;  // closed after shutdown_ ran
  nvml::ShutdownFn shutdown_ = nullptr;
  nvml::ErrorStringFn error_string_ = nullptr;
};

// Per-tick sums over GPUs, for SageMaker's GPUUtilization and GPUMemoryUtilization.
struct GpuTotals {
  int gpus = 0;  // GPUs that answered this tick
  bool has_utilization = false;
  double utilization_sum = 0;  // 0 .. 100 x GPUs
  bool has_memory = false;
  double memory_utilization_sum = 0;
};

// GpuSampler: every GPU NVML reports, as {Host, GPU} series (see
// docs/profiler.md), plus the memory the job's own processes hold on each.
//
// GPUs are enumerated at the first tick and again every
// gpu_rescan_interval_ms (matched by UUID, so a GPU keeps its series and its
// GPU dimension, the index it had when first seen). A GPU answering
// NVML_ERROR_GPU_IS_LOST, or no longer enumerated, is dropped (logged once,
// counted in gpu_lost); a field answering NVML_ERROR_NOT_SUPPORTED is no
// longer asked for on that GPU (logged once, counted in
// gpu_field_unsupported). On GPUs with GPM (Hopper and later) SM activity,
// SM occupancy, tensor-core activity, DRAM bandwidth and PCIe throughput
// come from two GPM samples one tick apart.
// Thread safety: none.
class GpuSampler {
 public:
  // `table` and `degraded` must outlive the sampler.
  GpuSampler(std::unique_ptr<NvmlLibrary> lib, SeriesTable* table, std::string host,
             const ProfilerOptions& options, DegradedCounters* degraded);
  ~GpuSampler();

  // `job_pids`: the job's live pids, sorted (GPU memory attribution).
  void Sample(const TickContext& ctx, const std::vector<int64_t>& job_pids, GpuTotals* out);

  int gpu_count() const { return static_cast<int>(gpus_.size()); }

 private:
  enum Field : uint32_t {
    kUtilization = 1u << 0,
    kMemory = 1u << 1,
    kPower = 1u << 2,
    kTemperature = 1u << 3,
    kClock = 1u << 4,
    kThrottle = 1u << 5,
    kPcie = 1u << 6,
    kProcesses = 1u << 7,
    kGpm = 1u << 8,
  };
  struct Gpu;

  void Rescan();
  void FreeGpm(Gpu& gpu);
  std::unique_ptr<Gpu> AddGpu(nvml::Device handle, unsigned int index, std::string uuid);
  // True when r is success. Otherwise records what it means: NOT_SUPPORTED
  // stops asking for `field`; GPU_IS_LOST marks the GPU lost; others count.
  bool Check(Gpu& gpu, Field field, nvml::Return r);
  void SampleGpu(const TickContext& ctx, Gpu& gpu, const std::vector<int64_t>& job_pids, bool slow,
                 bool pcie_turn, GpuTotals* out);
  void SampleGpm(const TickContext& ctx, Gpu& gpu);
  void SampleProcesses(const TickContext& ctx, Gpu& gpu, const std::vector<int64_t>& job_pids);

  std::unique_ptr<NvmlLibrary> lib_;
  SeriesTable* table_;
  std::string host_;
  int64_t rescan_interval_ns_;
  int64_t slow_interval_ns_;
  DegradedCounters* degraded_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  int64_t last_rescan_ns_ = 0;
  bool scanned_ = false;
  size_t pcie_next_ = 0;  // round robin over GPUs without GPM for the blocking PCIe query
  Slot job_mem_total_ = kNoSlot;
  std::unique_ptr<nvml::GpmMetricsGet> gpm_request_;
  std::vector<unsigned char> process_buf_;
};

}  // namespace trainwatch::profiler
