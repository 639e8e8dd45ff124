#pragma once
// The names the profiler publishes under: namespaces, dimensions, metrics and
// units. docs/profiler.md describes every series (meaning, how computed);
// rules and the CLI refer to these constants rather than to literals.

#include <string>
#include <string_view>

#include "model/job_events.h"

namespace trainwatch::profiler {

// SageMaker's instance metrics (spec/aws-api.md §5.1): dimension Host only.
inline constexpr std::string_view kSageMakerNamespace = "/aws/sagemaker/TrainingJobs";
// trainwatch's finer series; the store keeps this namespace at full
// resolution for as long as configured (forever by default).
inline constexpr std::string_view kProfilerNamespace = "trainwatch/Profiler";

// Dimensions.
inline constexpr std::string_view kHostDim = model::kHostDim;  // "<job>/algo-<n>"
inline constexpr std::string_view kCoreDim = "Core";      // "0", "1", ... (cpuN of /proc/stat)
inline constexpr std::string_view kDeviceDim = "Device";  // block device, e.g. "nvme0n1"
inline constexpr std::string_view kInterfaceDim = "Interface";  // e.g. "eth0"
inline constexpr std::string_view kGpuDim = "GPU";              // NVML index when first seen

// CloudWatch units.
inline constexpr std::string_view kPercent = "Percent";
inline constexpr std::string_view kBytes = "Bytes";
inline constexpr std::string_view kBytesPerSecond = "Bytes/Second";
inline constexpr std::string_view kCount = "Count";
inline constexpr std::string_view kCountPerSecond = "Count/Second";
inline constexpr std::string_view kMicroseconds = "Microseconds";
inline constexpr std::string_view kNone = "None";  // watts, degrees, MHz, load: named in the metric

// The Host dimension value SageMaker uses: "<job>/algo-<host_index>".
std::string HostDimensionValue(std::string_view job_name, int host_index);

namespace metric {
// /aws/sagemaker/TrainingJobs {Host}, unit Percent.
inline constexpr std::string_view kCPUUtilization = "CPUUtilization";
inline constexpr std::string_view kMemoryUtilization = "MemoryUtilization";
inline constexpr std::string_view kGPUUtilization = "GPUUtilization";
inline constexpr std::string_view kGPUMemoryUtilization = "GPUMemoryUtilization";
inline constexpr std::string_view kDiskUtilization = "DiskUtilization";

// trainwatch/Profiler, host CPU: {Host, Core} per core and {Host} over all cores.
inline constexpr std::string_view kHostCPUUtilization = "HostCPUUtilization";
inline constexpr std::string_view kCPUUser = "CPUUserPercent";
inline constexpr std::string_view kCPUSystem = "CPUSystemPercent";
inline constexpr std::string_view kCPUIOWait = "CPUIOWaitPercent";
inline constexpr std::string_view kCPUSteal = "CPUStealPercent";
inline constexpr std::string_view kCPUCores = "CPUCores";

// Host memory {Host}.
inline constexpr std::string_view kMemoryTotal = "MemoryTotal";
inline constexpr std::string_view kMemoryUsed = "MemoryUsed";
inline constexpr std::string_view kMemoryAvailable = "MemoryAvailable";
inline constexpr std::string_view kMemoryPageCache = "MemoryPageCache";
inline constexpr std::string_view kMemoryUsedPercent = "MemoryUsedPercent";
inline constexpr std::string_view kSwapUsed = "SwapUsed";

// Disks {Host, Device} and {Host} (sum over physical disks).
inline constexpr std::string_view kDiskReadBytes = "DiskReadBytesPerSecond";
inline constexpr std::string_view kDiskWriteBytes = "DiskWriteBytesPerSecond";
inline constexpr std::string_view kDiskReadOps = "DiskReadOpsPerSecond";
inline constexpr std::string_view kDiskWriteOps = "DiskWriteOpsPerSecond";
inline constexpr std::string_view kDiskBusy = "DiskBusyPercent";  // per device only

// Filesystem holding the job's working directory {Host}.
inline constexpr std::string_view kFilesystemUsed = "FilesystemUsed";
inline constexpr std::string_view kFilesystemAvailable = "FilesystemAvailable";

// Network {Host, Interface} and {Host} (sum over interfaces except lo).
inline constexpr std::string_view kNetRxBytes = "NetworkReceiveBytesPerSecond";
inline constexpr std::string_view kNetTxBytes = "NetworkTransmitBytesPerSecond";
inline constexpr std::string_view kNetRxPackets = "NetworkReceivePacketsPerSecond";
inline constexpr std::string_view kNetTxPackets = "NetworkTransmitPacketsPerSecond";
inline constexpr std::string_view kNetRxErrors = "NetworkReceiveErrors";
inline constexpr std::string_view kNetTxErrors = "NetworkTransmitErrors";

// Load and pressure {Host}.
inline constexpr std::string_view kLoad1 = "LoadAverage1m";
inline constexpr std::string_view kLoad5 = "LoadAverage5m";
inline constexpr std::string_view kLoad15 = "LoadAverage15m";
inline constexpr std::string_view kRunnableTasks = "RunnableTasks";
inline constexpr std::string_view kPressureCPUSome = "PressureCPUSomePercent";
inline constexpr std::string_view kPressureMemorySome = "PressureMemorySomePercent";
inline constexpr std::string_view kPressureMemoryFull = "PressureMemoryFullPercent";
inline constexpr std::string_view kPressureIOSome = "PressureIOSomePercent";
inline constexpr std::string_view kPressureIOFull = "PressureIOFullPercent";

// The job's process tree {Host}.
inline constexpr std::string_view kJobCPU = "JobCPUUtilization";
inline constexpr std::string_view kJobCPUUser = "JobCPUUserPercent";
inline constexpr std::string_view kJobCPUSystem = "JobCPUSystemPercent";
inline constexpr std::string_view kJobRSS = "JobMemoryRSS";
inline constexpr std::string_view kJobThreads = "JobThreads";
inline constexpr std::string_view kJobProcesses = "JobProcesses";
inline constexpr std::string_view kJobDiskReadBytes = "JobDiskReadBytesPerSecond";
inline constexpr std::string_view kJobDiskWriteBytes = "JobDiskWriteBytesPerSecond";
inline constexpr std::string_view kJobIOReadBytes = "JobIOReadBytesPerSecond";
inline constexpr std::string_view kJobIOWriteBytes = "JobIOWriteBytesPerSecond";

// The job's cgroup v2 {Host}.
inline constexpr std::string_view kCgroupCPU = "CgroupCPUUtilization";
inline constexpr std::string_view kCgroupThrottledPeriods = "CgroupCPUThrottledPeriods";
inline constexpr std::string_view kCgroupThrottledPercent = "CgroupCPUThrottledPercent";
inline constexpr std::string_view kCgroupThrottledTime = "CgroupCPUThrottledTime";
inline constexpr std::string_view kCgroupMemoryUsed = "CgroupMemoryUsed";
inline constexpr std::string_view kCgroupMemoryLimit = "CgroupMemoryLimit";
inline constexpr std::string_view kCgroupMemoryUtilization = "CgroupMemoryUtilization";
inline constexpr std::string_view kCgroupMemoryHighEvents = "CgroupMemoryHighEvents";
inline constexpr std::string_view kCgroupMemoryMaxEvents = "CgroupMemoryMaxEvents";
inline constexpr std::string_view kCgroupOOMEvents = "CgroupOOMEvents";
inline constexpr std::string_view kCgroupOOMKills = "CgroupOOMKills";

// GPUs {Host, GPU}.
inline constexpr std::string_view kGpuUtil = "GPUUtilization";
inline constexpr std::string_view kGpuMemCtrlUtil = "GPUMemoryControllerUtilization";
inline constexpr std::string_view kGpuMemUsed = "GPUMemoryUsed";
inline constexpr std::string_view kGpuMemTotal = "GPUMemoryTotal";
inline constexpr std::string_view kGpuMemUtil = "GPUMemoryUtilization";
inline constexpr std::string_view kGpuPower = "GPUPowerWatts";
inline constexpr std::string_view kGpuTemperature = "GPUTemperatureCelsius";
inline constexpr std::string_view kGpuSmClock = "GPUSMClockMHz";
inline constexpr std::string_view kGpuThrottleReasons = "GPUThrottleReasons";
inline constexpr std::string_view kGpuPcieTx = "GPUPCIeTransmitBytesPerSecond";
inline constexpr std::string_view kGpuPcieRx = "GPUPCIeReceiveBytesPerSecond";
inline constexpr std::string_view kGpuSmActivity = "GPUSMActivity";
inline constexpr std::string_view kGpuSmOccupancy = "GPUSMOccupancy";
inline constexpr std::string_view kGpuTensorActivity = "GPUTensorActivity";
inline constexpr std::string_view kGpuDramBandwidth = "GPUDRAMBandwidthUtilization";
inline constexpr std::string_view kJobGpuMemUsed = "JobGPUMemoryUsed";  // also {Host}: all GPUs
}  // namespace metric

}  // namespace trainwatch::profiler
