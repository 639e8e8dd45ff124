#include "profiler/nvml.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "profiler/metric_names.h"
#include "util/log.h"
#include "util/shared_library.h"

namespace trainwatch::profiler {

// ---- NvmlLibrary -------------------------------------------------------------

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  absl::StatusOr<std::unique_ptr<util::SharedLibrary>> library = util::SharedLibrary::Open(path);
  if (!library.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("cannot load NVML \"%s\": %s", path, library.status().message()));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->library_ = *std::move(library);
  const util::SharedLibrary& so = *lib->library_;
  auto bind = [&](auto* fn, const char* name) { return so.Bind(fn, name); };
  nvml::InitFn init = nullptr;
  std::string missing;
  auto require = [&](auto* fn, const char* name) { so.Require(fn, name, &missing); };
  require(&init, "nvmlInit_v2");
  require(&lib->shutdown_, "nvmlShutdown");
  require(&lib->device_get_count, "nvmlDeviceGetCount_v2");
  require(&lib->device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  require(&lib->device_get_uuid, "nvmlDeviceGetUUID");
  require(&lib->device_get_name, "nvmlDeviceGetName");
  require(&lib->device_get_utilization_rates, "nvmlDeviceGetUtilizationRates");
  require(&lib->device_get_memory_info, "nvmlDeviceGetMemoryInfo");
  if (!missing.empty()) {
    lib->shutdown_ = nullptr;  // never initialised
    return absl::UnavailableError(absl::StrFormat(
        "NVML \"%s\" lacks%s; is it NVIDIA's libnvidia-ml (driver 450 or later)?", path, missing));
  }
  bind(&lib->error_string_, "nvmlErrorString");
  bind(&lib->device_get_power_usage, "nvmlDeviceGetPowerUsage");
  bind(&lib->device_get_temperature, "nvmlDeviceGetTemperature");
  bind(&lib->device_get_clock_info, "nvmlDeviceGetClockInfo");
  if (!bind(&lib->device_get_throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons")) {
    bind(&lib->device_get_throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  bind(&lib->device_get_pcie_throughput, "nvmlDeviceGetPcieThroughput");
  // _v2 fills nvmlProcessInfo_v2_t on every driver that has it; _v3's layout
  // changed between driver releases (R535), so it is not used.
  if (bind(&lib->device_get_compute_processes, "nvmlDeviceGetComputeRunningProcesses_v2")) {
    lib->process_info_stride = sizeof(nvml::ProcessInfoV2);
  } else if (bind(&lib->device_get_compute_processes, "nvmlDeviceGetComputeRunningProcesses")) {
    lib->process_info_stride = sizeof(nvml::ProcessInfoV1);
  }
  bind(&lib->gpm_query_device_support, "nvmlGpmQueryDeviceSupport");
  bind(&lib->gpm_sample_alloc, "nvmlGpmSampleAlloc");
  bind(&lib->gpm_sample_free, "nvmlGpmSampleFree");
  bind(&lib->gpm_sample_get, "nvmlGpmSampleGet");
  bind(&lib->gpm_metrics_get, "nvmlGpmMetricsGet");

  nvml::Return r = init();
  if (r != nvml::kSuccess) {
    std::string err = lib->ErrorString(r);
    lib->shutdown_ = nullptr;
    return absl::UnavailableError(absl::StrFormat("NVML \"%s\": nvmlInit failed: %s", path, err));
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (shutdown_ != nullptr) shutdown_();
}

std::string NvmlLibrary::ErrorString(nvml::Return r) const {
  const char* s = error_string_ != nullptr ? error_string_(r) : nullptr;
  if (s != nullptr) return absl::StrFormat("%s (%d)", s, r);
  return absl::StrFormat("NVML error %d", r);
}

// ---- GpuSampler ---------------------------------------------------------------

struct GpuSampler::Gpu {
  std::string uuid;
  std::string name;
  std::string label;       // "GPU 0 (NVIDIA H100 80GB HBM3)" for messages
  unsigned int index = 0;  // NVML index when first seen: the GPU dimension
  nvml::Device handle = nullptr;
  uint32_t unsupported = 0;  // Field bits answered NOT_SUPPORTED
  bool lost = false;
  bool seen_in_scan = false;
  bool gpm = false;
  bool gpm_have_prev = false;
  nvml::GpmSample gpm_prev{nullptr};
  nvml::GpmSample gpm_cur{nullptr};
  int64_t last_slow_ns = 0;  // monotonic ns of the last process-list read
  int64_t last_pcie_ns = 0;  // of the last legacy PCIe read
  uint64_t memory_total = 0;
  double job_memory = -1;  // bytes at the last process-list read; -1 before any
  Slot util, mem_ctrl, mem_used, mem_total, mem_util, power, temp, clock, throttle, pcie_tx,
      pcie_rx, sm_activity, sm_occupancy, tensor, dram, job_mem;
};

GpuSampler::GpuSampler(std::unique_ptr<NvmlLibrary> lib, SeriesTable* table, std::string host,
                       const ProfilerOptions& options, DegradedCounters* degraded)
    : lib_(std::move(lib)),
      table_(table),
      host_(std::move(host)),
      rescan_interval_ns_(options.gpu_rescan_interval_ms * 1000000),
      slow_interval_ns_(options.gpu_slow_query_interval_ms * 1000000),
      degraded_(degraded),
      gpm_request_(std::make_unique<nvml::GpmMetricsGet>()) {}

GpuSampler::~GpuSampler() {
  for (auto& g : gpus_) FreeGpm(*g);
}

void GpuSampler::FreeGpm(Gpu& g) {
  if (!g.gpm) return;
  lib_->gpm_sample_free(g.gpm_prev);
  lib_->gpm_sample_free(g.gpm_cur);
  g.gpm = false;
}

namespace {
const char* FieldName(uint32_t field) {
  switch (field) {
    case 1u << 0:
      return "utilization";
    case 1u << 1:
      return "memory info";
    case 1u << 2:
      return "power usage";
    case 1u << 3:
      return "temperature";
    case 1u << 4:
      return "SM clock";
    case 1u << 5:
      return "throttle reasons";
    case 1u << 6:
      return "PCIe throughput";
    case 1u << 7:
      return "running processes";
    case 1u << 8:
      return "GPM metrics";
  }
  return "field";
}
}  // namespace

bool GpuSampler::Check(Gpu& gpu, Field field, nvml::Return r) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kErrorNotSupported) {
    if ((gpu.unsupported & field) == 0) {
      gpu.unsupported |= field;
      ++degraded_->gpu_field_unsupported;
      util::LogOnce(absl::StrFormat("profiler.gpu-unsupported.%s", FieldName(field)),
                    absl::StrFormat("profiler: %s does not report %s (NVML_ERROR_NOT_SUPPORTED); "
                                    "those series are left out for it",
                                    gpu.label, FieldName(field)));
    }
    return false;
  }
  if (r == nvml::kErrorGpuIsLost) {
    if (!gpu.lost) {
      gpu.lost = true;
      ++degraded_->gpu_lost;
      util::LogOnce("profiler.gpu-lost",
                    absl::StrFormat("profiler: %s is lost (%s); its series stop until it "
                                    "answers again",
                                    gpu.label, lib_->ErrorString(r)));
    }
    return false;
  }
  ++degraded_->gpu_read_errors;
  util::LogOnce("profiler.gpu-read-error",
                absl::StrFormat("profiler: %s: reading %s failed: %s", gpu.label, FieldName(field),
                                lib_->ErrorString(r)));
  return false;
}

std::unique_ptr<GpuSampler::Gpu> GpuSampler::AddGpu(nvml::Device handle, unsigned int index,
                                                    std::string uuid) {
  auto g = std::make_unique<Gpu>();
  g->handle = handle;
  g->index = index;
  g->uuid = std::move(uuid);
  char name[96] = {0};
  if (lib_->device_get_name(handle, name, sizeof(name)) == nvml::kSuccess) g->name = name;
  g->label = g->name.empty() ? absl::StrFormat("GPU %u", index)
                             : absl::StrFormat("GPU %u (%s)", index, g->name);
  std::string idx = absl::StrFormat("%u", index);
  namespace m = metric;
  auto add = [&](std::string_view metric, std::string_view unit) {
    return table_->Add(kProfilerNamespace, metric,
                       {{std::string(kHostDim), host_}, {std::string(kGpuDim), idx}}, unit);
  };
  g->util = add(m::kGpuUtil, kPercent);
  g->mem_ctrl = add(m::kGpuMemCtrlUtil, kPercent);
  g->mem_used = add(m::kGpuMemUsed, kBytes);
  g->mem_total = add(m::kGpuMemTotal, kBytes);
  g->mem_util = add(m::kGpuMemUtil, kPercent);
  g->power = add(m::kGpuPower, kNone);
  g->temp = add(m::kGpuTemperature, kNone);
  g->clock = add(m::kGpuSmClock, kNone);
  g->throttle = add(m::kGpuThrottleReasons, kNone);
  g->pcie_tx = add(m::kGpuPcieTx, kBytesPerSecond);
  g->pcie_rx = add(m::kGpuPcieRx, kBytesPerSecond);
  g->sm_activity = add(m::kGpuSmActivity, kPercent);
  g->sm_occupancy = add(m::kGpuSmOccupancy, kPercent);
  g->tensor = add(m::kGpuTensorActivity, kPercent);
  g->dram = add(m::kGpuDramBandwidth, kPercent);
  g->job_mem = add(m::kJobGpuMemUsed, kBytes);

  // GPM needs the device to support it and two samples to compare.
  if (lib_->gpm_query_device_support != nullptr && lib_->gpm_sample_alloc != nullptr &&
      lib_->gpm_sample_get != nullptr && lib_->gpm_metrics_get != nullptr &&
      lib_->gpm_sample_free != nullptr) {
    nvml::GpmSupport support{nvml::kGpmSupportVersion, 0};
    if (lib_->gpm_query_device_support(handle, &support) == nvml::kSuccess &&
        support.is_supported_device != 0 &&
        lib_->gpm_sample_alloc(&g->gpm_prev) == nvml::kSuccess) {
      // The first tick's sample starts the first interval: GPM values, like
      // every rate, come from the second tick on.
      if (lib_->gpm_sample_alloc(&g->gpm_cur) == nvml::kSuccess) {
        g->gpm = true;
      } else {
        lib_->gpm_sample_free(g->gpm_prev);
      }
    }
  }
  util::LogInfo(absl::StrFormat("profiler: sampling %s%s", g->label,
                                g->gpm ? " with GPM (SM and tensor-core activity)"
                                       : "; no GPM, so no SM/tensor activity (needs Hopper "
                                         "or later and driver 525+)"));
  return g;
}

void GpuSampler::Rescan() {
  scanned_ = true;
  unsigned int count = 0;
  nvml::Return r = lib_->device_get_count(&count);
  if (r != nvml::kSuccess) {
    ++degraded_->gpu_read_errors;
    util::LogOnce("profiler.gpu-count",
                  absl::StrFormat("profiler: nvmlDeviceGetCount failed: %s", lib_->ErrorString(r)));
    return;
  }
  for (auto& g : gpus_) g->seen_in_scan = false;
  for (unsigned int i = 0; i < count; ++i) {
    nvml::Device handle = nullptr;
    if (lib_->device_get_handle_by_index(i, &handle) != nvml::kSuccess) continue;
    char uuid[96] = {0};
    if (lib_->device_get_uuid(handle, uuid, sizeof(uuid)) != nvml::kSuccess) continue;
    auto it =
        std::find_if(gpus_.begin(), gpus_.end(), [&](const auto& g) { return g->uuid == uuid; });
    if (it != gpus_.end()) {
      (*it)->handle = handle;
      (*it)->seen_in_scan = true;
      if ((*it)->lost) {
        (*it)->lost = false;
        util::LogInfo(absl::StrFormat("profiler: %s answers again", (*it)->label));
      }
      continue;
    }
    // A new GPU at the index of one that was lost takes over its GPU dimension.
    for (auto old = gpus_.begin(); old != gpus_.end();) {
      if ((*old)->lost && (*old)->index == i) {
        FreeGpm(**old);
        old = gpus_.erase(old);
      } else {
        ++old;
      }
    }
    gpus_.push_back(AddGpu(handle, i, uuid));
    gpus_.back()->seen_in_scan = true;
  }
  // GPUs no longer enumerated are dropped.
  for (auto& g : gpus_) {
    if (!g->seen_in_scan && !g->lost) {
      g->lost = true;
      ++degraded_->gpu_lost;
      util::LogOnce("profiler.gpu-lost", absl::StrFormat("profiler: %s is no longer listed by "
                                                         "NVML; its series stop",
                                                         g->label));
    }
  }
}

void GpuSampler::Sample(const TickContext& ctx, const std::vector<int64_t>& job_pids,
                        GpuTotals* out) {
  *out = GpuTotals();
  if (!scanned_ || ctx.mono_ns - last_rescan_ns_ >= rescan_interval_ns_) {
    Rescan();
    last_rescan_ns_ = ctx.mono_ns;
  }
  // NVML's PCIe counter query blocks ~20 ms per counter: ask one GPU (without
  // GPM, which has its own PCIe metrics) per tick, round robin, each at most
  // once per slow-query interval.
  Gpu* pcie_gpu = nullptr;
  if (lib_->device_get_pcie_throughput != nullptr) {
    for (size_t k = 0; k < gpus_.size() && pcie_gpu == nullptr; ++k) {
      size_t i = (pcie_next_ + k) % gpus_.size();
      Gpu& g = *gpus_[i];
      if (g.lost || g.gpm || (g.unsupported & kPcie)) continue;
      if (g.last_pcie_ns != 0 && ctx.mono_ns - g.last_pcie_ns < slow_interval_ns_) continue;
      pcie_gpu = &g;
      pcie_next_ = i + 1;
    }
  }
  bool any_slow = false;
  for (auto& gp : gpus_) {
    Gpu& g = *gp;
    if (g.lost) continue;
    bool slow = g.last_slow_ns == 0 || ctx.mono_ns - g.last_slow_ns >= slow_interval_ns_;
    SampleGpu(ctx, g, job_pids, slow, &g == pcie_gpu, out);
    if (slow) {
      g.last_slow_ns = ctx.mono_ns;
      any_slow = true;
    }
  }
  if (any_slow && (lib_->device_get_compute_processes != nullptr)) {
    double total = 0;
    bool any = false;
    for (auto& g : gpus_) {
      if (!g->lost && g->job_memory >= 0) {
        total += g->job_memory;
        any = true;
      }
    }
    if (any) {
      if (job_mem_total_ == kNoSlot) {
        job_mem_total_ = table_->Add(kProfilerNamespace, metric::kJobGpuMemUsed,
                                     {{std::string(kHostDim), host_}}, kBytes);
      }
      table_->Emit(job_mem_total_, ctx.t_ms, total);
    }
  }
}

void GpuSampler::SampleGpu(const TickContext& ctx, Gpu& g, const std::vector<int64_t>& job_pids,
                           bool slow, bool pcie_turn, GpuTotals* out) {
  const int64_t t = ctx.t_ms;
  bool answered = false;
  if (!(g.unsupported & kUtilization)) {
    nvml::Utilization u{};
    if (Check(g, kUtilization, lib_->device_get_utilization_rates(g.handle, &u))) {
      table_->Emit(g.util, t, u.gpu);
      table_->Emit(g.mem_ctrl, t, u.memory);
      out->has_utilization = true;
      out->utilization_sum += u.gpu;
      answered = true;
    }
  }
  if (g.lost) return;
  if (!(g.unsupported & kMemory)) {
    nvml::Memory mem{};
    if (Check(g, kMemory, lib_->device_get_memory_info(g.handle, &mem)) && mem.total > 0) {
      g.memory_total = mem.total;
      double util = 100.0 * static_cast<double>(mem.used) / static_cast<double>(mem.total);
      table_->Emit(g.mem_used, t, static_cast<double>(mem.used));
      table_->Emit(g.mem_total, t, static_cast<double>(mem.total));
      table_->Emit(g.mem_util, t, util);
      out->has_memory = true;
      out->memory_utilization_sum += util;
      answered = true;
    }
  }
  if (g.lost) return;
  unsigned int v = 0;
  if (lib_->device_get_power_usage != nullptr && !(g.unsupported & kPower) &&
      Check(g, kPower, lib_->device_get_power_usage(g.handle, &v))) {
    table_->Emit(g.power, t, v / 1000.0);
  }
  if (lib_->device_get_temperature != nullptr && !(g.unsupported & kTemperature) && !g.lost &&
      Check(g, kTemperature, lib_->device_get_temperature(g.handle, nvml::kTemperatureGpu, &v))) {
    table_->Emit(g.temp, t, v);
  }
  if (lib_->device_get_clock_info != nullptr && !(g.unsupported & kClock) && !g.lost &&
      Check(g, kClock, lib_->device_get_clock_info(g.handle, nvml::kClockSm, &v))) {
    table_->Emit(g.clock, t, v);
  }
  unsigned long long reasons = 0;
  if (lib_->device_get_throttle_reasons != nullptr && !(g.unsupported & kThrottle) && !g.lost &&
      Check(g, kThrottle, lib_->device_get_throttle_reasons(g.handle, &reasons))) {
    table_->Emit(g.throttle, t, static_cast<double>(reasons));
  }
  if (g.lost) return;
  if (g.gpm) SampleGpm(ctx, g);
  if (pcie_turn && lib_->device_get_pcie_throughput != nullptr && !(g.unsupported & kPcie)) {
    unsigned int tx = 0, rx = 0;
    if (Check(g, kPcie, lib_->device_get_pcie_throughput(g.handle, nvml::kPcieUtilTxBytes, &tx)) &&
        Check(g, kPcie, lib_->device_get_pcie_throughput(g.handle, nvml::kPcieUtilRxBytes, &rx))) {
      table_->Emit(g.pcie_tx, t, tx * 1024.0);
      table_->Emit(g.pcie_rx, t, rx * 1024.0);
    }
    g.last_pcie_ns = ctx.mono_ns;
  }
  if (slow && !g.lost) SampleProcesses(ctx, g, job_pids);
  if (answered) ++out->gpus;
}

void GpuSampler::SampleGpm(const TickContext& ctx, Gpu& g) {
  if (g.unsupported & kGpm) return;
  if (!Check(g, kGpm, lib_->gpm_sample_get(g.handle, g.gpm_cur))) return;
  if (!g.gpm_have_prev) {
    std::swap(g.gpm_prev, g.gpm_cur);
    g.gpm_have_prev = true;
    return;
  }
  static constexpr unsigned int kIds[] = {nvml::kGpmSmUtil,        nvml::kGpmSmOccupancy,
                                          nvml::kGpmAnyTensorUtil, nvml::kGpmDramBwUtil,
                                          nvml::kGpmPcieTxPerSec,  nvml::kGpmPcieRxPerSec};
  const Slot slots[] = {g.sm_activity, g.sm_occupancy, g.tensor, g.dram, g.pcie_tx, g.pcie_rx};
  const double scale[] = {1, 1, 1, 1, 1048576.0, 1048576.0};  // MiB/s -> bytes/s
  nvml::GpmMetricsGet& req = *gpm_request_;
  constexpr unsigned int n = sizeof(kIds) / sizeof(kIds[0]);
  std::memset(static_cast<void*>(&req), 0,
              offsetof(nvml::GpmMetricsGet, metrics) + n * sizeof(nvml::GpmMetric));
  req.version = nvml::kGpmMetricsGetVersion;
  req.num_metrics = n;
  req.sample1 = g.gpm_prev;
  req.sample2 = g.gpm_cur;
  for (unsigned int i = 0; i < n; ++i) req.metrics[i].metric_id = kIds[i];
  if (Check(g, kGpm, lib_->gpm_metrics_get(&req))) {
    for (unsigned int i = 0; i < n; ++i) {
      if (req.metrics[i].nvml_return == nvml::kSuccess) {
        table_->Emit(slots[i], ctx.t_ms, req.metrics[i].value * scale[i]);
      }
    }
  }
  std::swap(g.gpm_prev, g.gpm_cur);  // this tick's sample is the next one's start
}

void GpuSampler::SampleProcesses(const TickContext& ctx, Gpu& g,
                                 const std::vector<int64_t>& job_pids) {
  if (lib_->device_get_compute_processes == nullptr || (g.unsupported & kProcesses)) return;
  const size_t stride = lib_->process_info_stride;
  unsigned int count = static_cast<unsigned int>(process_buf_.size() / stride);
  if (count < 16) {
    count = 16;
    process_buf_.resize(count * stride);
  }
  nvml::Return r = lib_->device_get_compute_processes(g.handle, &count, process_buf_.data());
  if (r == nvml::kErrorInsufficientSize) {
    count += 16;  // processes may start between the two calls
    process_buf_.resize(count * stride);
    r = lib_->device_get_compute_processes(g.handle, &count, process_buf_.data());
  }
  if (!Check(g, kProcesses, r)) return;
  double job_bytes = 0;
  for (unsigned int i = 0; i < count; ++i) {
    // pid and used_gpu_memory sit at the same offsets in v1 and v2 entries.
    nvml::ProcessInfoV1 info;
    std::memcpy(&info.pid, process_buf_.data() + i * stride, sizeof(info.pid));
    std::memcpy(&info.used_gpu_memory,
                process_buf_.data() + i * stride + offsetof(nvml::ProcessInfoV1, used_gpu_memory),
                sizeof(info.used_gpu_memory));
    if (info.used_gpu_memory == nvml::kValueNotAvailable) continue;
    if (info.pid == 0 || (g.memory_total > 0 && info.used_gpu_memory > g.memory_total)) {
      ++degraded_->gpu_process_list_invalid;
      util::LogOnce("profiler.gpu-process-list",
                    absl::StrFormat("profiler: %s: NVML's process list makes no sense (pid %u, "
                                    "%u bytes); the job's GPU memory is left out",
                                    g.label, info.pid, info.used_gpu_memory));
      return;
    }
    if (std::binary_search(job_pids.begin(), job_pids.end(), static_cast<int64_t>(info.pid))) {
      job_bytes += static_cast<double>(info.used_gpu_memory);
    }
  }
  g.job_memory = job_bytes;
  table_->Emit(g.job_mem, ctx.t_ms, job_bytes);
}

}  // namespace trainwatch::profiler
