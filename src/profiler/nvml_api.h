#pragma once
// The slice of NVIDIA's NVML C API the profiler uses, declared from NVIDIA's
// documentation (docs.nvidia.com/deploy/nvml-api) so that trainwatch builds
// without nvml.h; the library itself is loaded with dlopen (nvml.h here).
// Layouts follow the x86-64/aarch64 ABI of libnvidia-ml.so.1. The fake NVML
// the tests build (testdata/fake_nvml) implements the same declarations.

#include <cstdint>

namespace trainwatch::profiler::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorUnknown = 999;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

struct Utilization {    // nvmlUtilization_t
  unsigned int gpu;     // % of time a kernel ran (past 1/6 s .. 1 s, product-dependent)
  unsigned int memory;  // % of time device memory was read or written
};

struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlProcessInfo_v2_t, what nvmlDevice{Compute,Graphics}RunningProcesses_v2 fill.
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes; kValueNotAvailable when unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
// nvmlProcessInfo_v1_t (the functions without a suffix).
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

inline constexpr unsigned int kTemperatureGpu = 0;   // nvmlTemperatureSensors_t
inline constexpr unsigned int kClockSm = 1;          // nvmlClockType_t
inline constexpr unsigned int kPcieUtilTxBytes = 0;  // nvmlPcieUtilCounter_t, KB/s
inline constexpr unsigned int kPcieUtilRxBytes = 1;

// GPU Performance Monitoring (Hopper and later; NVML 12.0+).
struct GpmSampleSt;
struct GpmSample {  // nvmlGpmSample_t
  GpmSampleSt* handle;
};
struct GpmMetric {  // nvmlGpmMetric_t
  unsigned int metric_id;
  Return nvml_return;
  double value;
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } metric_info;
};
inline constexpr int kGpmMetricMax = 98;  // NVML_GPM_METRIC_MAX of NVML 12.0
struct GpmMetricsGet {                    // nvmlGpmMetricsGet_t
  unsigned int version;
  unsigned int num_metrics;
  GpmSample sample1;
  GpmSample sample2;
  GpmMetric metrics[kGpmMetricMax];
};
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
struct GpmSupport {  // nvmlGpmSupport_t
  unsigned int version;
  unsigned int is_supported_device;
};
inline constexpr unsigned int kGpmSupportVersion = 1;
// nvmlGpmMetricId_t values.
inline constexpr unsigned int kGpmSmUtil = 2;         // % of SMs busy
inline constexpr unsigned int kGpmSmOccupancy = 3;    // % of warps resident vs the maximum
inline constexpr unsigned int kGpmAnyTensorUtil = 5;  // % of time SMs ran any tensor op
inline constexpr unsigned int kGpmDramBwUtil = 10;    // % of peak DRAM bandwidth
inline constexpr unsigned int kGpmPcieTxPerSec = 20;  // MiB/s
inline constexpr unsigned int kGpmPcieRxPerSec = 21;  // MiB/s

// Function types, by the exported names they are looked up under.
using InitFn = Return (*)();                                         // nvmlInit_v2
using ShutdownFn = Return (*)();                                     // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                       // nvmlErrorString
using DeviceGetCountFn = Return (*)(unsigned int*);                  // nvmlDeviceGetCount_v2
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);  // ..._v2
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);   // UUID, Name
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
using DeviceGetPowerUsageFn = Return (*)(Device, unsigned int*);  // milliwatts
using DeviceGetTemperatureFn = Return (*)(Device, unsigned int, unsigned int*);
using DeviceGetClockInfoFn = Return (*)(Device, unsigned int, unsigned int*);
using DeviceGetThrottleReasonsFn = Return (*)(Device, unsigned long long*);
using DeviceGetPcieThroughputFn = Return (*)(Device, unsigned int, unsigned int*);
using DeviceGetProcessesFn = Return (*)(Device, unsigned int*, void*);
using GpmQueryDeviceSupportFn = Return (*)(Device, GpmSupport*);
using GpmSampleAllocFn = Return (*)(GpmSample*);
using GpmSampleFreeFn = Return (*)(GpmSample);
using GpmSampleGetFn = Return (*)(Device, GpmSample);
using GpmMetricsGetFn = Return (*)(GpmMetricsGet*);

}  // namespace trainwatch::profiler::nvml
