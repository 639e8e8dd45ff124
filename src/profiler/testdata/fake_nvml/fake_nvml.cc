// A fake libnvidia-ml for tests: implements the NVML functions the profiler
// uses (profiler/nvml_api.h) over a scenario the test sets, so tests can make
// GPUs appear, fail and disappear without NVIDIA hardware.
//
// Scenario text, one directive per line ('#' starts a comment):
//
//   init=ok | driver_not_loaded            what nvmlInit_v2 answers (default ok)
//   device uuid=GPU-1 name=H100 gpm=1 util=87 mem_util=40 mem_total=85899345920
//          mem_used=4294967296 power_mw=350000 temp=65 sm_clock=1980 throttle=4
//          pcie_tx_kb=1000 pcie_rx_kb=2000 sm_util=75 sm_occupancy=50 tensor_util=60
//          dram_util=30 gpm_pcie_tx_mib=100 gpm_pcie_rx_mib=200
//          procs=1234:1073741824,5678:2048 lost=1 fail=power:NOT_SUPPORTED,temp:UNKNOWN
//
// (one line per device, in index order; names hold no blanks). A device with
// lost=1 answers NVML_ERROR_GPU_IS_LOST to everything; `fail=field:ERROR`
// makes one field fail (fields: util memory power temp clock throttle pcie
// procs gpm; errors: NOT_SUPPORTED GPU_IS_LOST UNKNOWN NO_PERMISSION). A
// handle whose index is beyond the current device list answers GPU_IS_LOST.
//
// Tests set the scenario through the exported hook fake_nvml_set_scenario
// (dlsym it from the same path the profiler loads), or point the
// TRAINWATCH_FAKE_NVML_SCENARIO environment variable at a scenario file read
// by nvmlInit_v2 when no scenario was set. fake_nvml_calls(name) counts calls
// per function.

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/nvml_api.h"

namespace nv = trainwatch::profiler::nvml;

namespace {

struct FakeDevice {
  std::string uuid = "GPU-fake";
  std::string name = "Fake GPU";
  bool gpm = false;
  bool lost = false;
  std::map<std::string, double> values;        // util, mem_used, ...
  std::map<std::string, nv::Return> failures;  // field -> error
  std::vector<std::pair<unsigned int, unsigned long long>> procs;
};

struct State {
  std::mutex mu;
  bool scenario_set = false;
  nv::Return init_result = nv::kSuccess;
  std::vector<FakeDevice> devices;
  std::map<std::string, long> calls;
  bool initialised = false;
};

State& S() {
  static State* s = new State();
  return *s;
}

// Handles are addresses in this array; index = handle - slots.
constexpr int kMaxSlots = 64;
char g_slots[kMaxSlots];

nv::Return ErrorByName(const std::string& name) {
  if (name == "NOT_SUPPORTED") return nv::kErrorNotSupported;
  if (name == "GPU_IS_LOST") return nv::kErrorGpuIsLost;
  if (name == "NO_PERMISSION") return nv::kErrorNoPermission;
  return nv::kErrorUnknown;
}

bool ParseScenario(const std::string& text, State* s) {
  s->devices.clear();
  s->init_result = nv::kSuccess;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string word;
    if (!(words >> word)) continue;
    if (word.rfind("init=", 0) == 0) {
      s->init_result = word == "init=ok" ? nv::kSuccess : nv::kErrorDriverNotLoaded;
      continue;
    }
    if (word != "device") return false;
    FakeDevice d;
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq == std::string::npos) return false;
      std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "uuid") {
        d.uuid = value;
      } else if (key == "name") {
        d.name = value;
      } else if (key == "gpm") {
        d.gpm = value == "1";
      } else if (key == "lost") {
        d.lost = value == "1";
      } else if (key == "procs") {
        std::istringstream list(value);
        std::string item;
        while (std::getline(list, item, ',')) {
          size_t colon = item.find(':');
          if (colon == std::string::npos) return false;
          d.procs.emplace_back(std::stoul(item.substr(0, colon)),
                               std::stoull(item.substr(colon + 1)));
        }
      } else if (key == "fail") {
        std::istringstream list(value);
        std::string item;
        while (std::getline(list, item, ',')) {
          size_t colon = item.find(':');
          if (colon == std::string::npos) return false;
          d.failures[item.substr(0, colon)] = ErrorByName(item.substr(colon + 1));
        }
      } else {
        d.values[key] = std::stod(value);
      }
    }
    s->devices.push_back(d);
  }
  return true;
}

void Count(const char* fn) { ++S().calls[fn]; }

// Resolves a handle to its device; *r is the error to return when null.
FakeDevice* Lookup(nv::Device handle, const char* field, nv::Return* r) {
  State& s = S();
  const char* p = reinterpret_cast<const char*>(handle);
  if (p < g_slots || p >= g_slots + kMaxSlots) {
    *r = nv::kErrorInvalidArgument;
    return nullptr;
  }
  size_t index = static_cast<size_t>(p - g_slots);
  if (index >= s.devices.size() || s.devices[index].lost) {
    *r = nv::kErrorGpuIsLost;
    return nullptr;
  }
  FakeDevice* d = &s.devices[index];
  auto f = d->failures.find(field);
  if (f != d->failures.end()) {
    *r = f->second;
    return nullptr;
  }
  *r = nv::kSuccess;
  return d;
}

double Value(const FakeDevice& d, const char* key, double fallback = 0) {
  auto it = d.values.find(key);
  return it == d.values.end() ? fallback : it->second;
}

struct FakeGpmSample {
  long device = -1;
  long seq = 0;
};

}  // namespace

extern "C" {

// ---- test hooks ----

int fake_nvml_set_scenario(const char* text) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.scenario_set = true;
  return ParseScenario(text, &s) ? 0 : -1;
}

long fake_nvml_calls(const char* fn) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.calls.find(fn);
  return it == s.calls.end() ? 0 : it->second;
}

void fake_nvml_reset_calls() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.calls.clear();
}

// ---- NVML ----

nv::Return nvmlInit_v2() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Count("nvmlInit_v2");
  if (!s.scenario_set) {
    const char* path = std::getenv("TRAINWATCH_FAKE_NVML_SCENARIO");
    if (path != nullptr) {
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      if (!in || !ParseScenario(text.str(), &s)) return nv::kErrorUnknown;
    }
  }
  if (s.init_result == nv::kSuccess) s.initialised = true;
  return s.init_result;
}

nv::Return nvmlShutdown() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Count("nvmlShutdown");
  s.initialised = false;
  return nv::kSuccess;
}

const char* nvmlErrorString(nv::Return r) {
  switch (r) {
    case nv::kSuccess:
      return "Success";
    case nv::kErrorNotSupported:
      return "Not Supported";
    case nv::kErrorNoPermission:
      return "Insufficient Permissions";
    case nv::kErrorInsufficientSize:
      return "Insufficient Size";
    case nv::kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    case nv::kErrorGpuIsLost:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

nv::Return nvmlDeviceGetCount_v2(unsigned int* count) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Count("nvmlDeviceGetCount_v2");
  if (!s.initialised) return nv::kErrorUninitialized;
  *count = static_cast<unsigned int>(s.devices.size());
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetHandleByIndex_v2(unsigned int index, nv::Device* device) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Count("nvmlDeviceGetHandleByIndex_v2");
  if (index >= s.devices.size() || index >= kMaxSlots) return nv::kErrorInvalidArgument;
  *device = reinterpret_cast<nv::Device>(&g_slots[index]);
  return nv::kSuccess;
}

#define FAKE_LOOKUP(fn, field)               \
  State& s = S();                            \
  std::lock_guard<std::mutex> lock(s.mu);    \
  Count(fn);                                 \
  nv::Return r;                              \
  FakeDevice* d = Lookup(device, field, &r); \
  if (d == nullptr) return r

static nv::Return CopyString(const std::string& v, char* out, unsigned int length) {
  if (v.size() + 1 > length) return nv::kErrorInsufficientSize;
  std::memcpy(out, v.c_str(), v.size() + 1);
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetUUID(nv::Device device, char* uuid, unsigned int length) {
  FAKE_LOOKUP("nvmlDeviceGetUUID", "uuid");
  return CopyString(d->uuid, uuid, length);
}

nv::Return nvmlDeviceGetName(nv::Device device, char* name, unsigned int length) {
  FAKE_LOOKUP("nvmlDeviceGetName", "name");
  return CopyString(d->name, name, length);
}

nv::Return nvmlDeviceGetUtilizationRates(nv::Device device, nv::Utilization* u) {
  FAKE_LOOKUP("nvmlDeviceGetUtilizationRates", "util");
  u->gpu = static_cast<unsigned int>(Value(*d, "util"));
  u->memory = static_cast<unsigned int>(Value(*d, "mem_util"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetMemoryInfo(nv::Device device, nv::Memory* m) {
  FAKE_LOOKUP("nvmlDeviceGetMemoryInfo", "memory");
  m->total = static_cast<unsigned long long>(Value(*d, "mem_total", 16.0 * (1ULL << 30)));
  m->used = static_cast<unsigned long long>(Value(*d, "mem_used"));
  m->free = m->total - m->used;
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetPowerUsage(nv::Device device, unsigned int* mw) {
  FAKE_LOOKUP("nvmlDeviceGetPowerUsage", "power");
  *mw = static_cast<unsigned int>(Value(*d, "power_mw"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetTemperature(nv::Device device, unsigned int sensor, unsigned int* c) {
  FAKE_LOOKUP("nvmlDeviceGetTemperature", "temp");
  if (sensor != nv::kTemperatureGpu) return nv::kErrorInvalidArgument;
  *c = static_cast<unsigned int>(Value(*d, "temp"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetClockInfo(nv::Device device, unsigned int type, unsigned int* mhz) {
  FAKE_LOOKUP("nvmlDeviceGetClockInfo", "clock");
  if (type != nv::kClockSm) return nv::kErrorInvalidArgument;
  *mhz = static_cast<unsigned int>(Value(*d, "sm_clock"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetCurrentClocksThrottleReasons(nv::Device device,
                                                     unsigned long long* reasons) {
  FAKE_LOOKUP("nvmlDeviceGetCurrentClocksThrottleReasons", "throttle");
  *reasons = static_cast<unsigned long long>(Value(*d, "throttle"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetPcieThroughput(nv::Device device, unsigned int counter,
                                       unsigned int* kb_per_s) {
  FAKE_LOOKUP("nvmlDeviceGetPcieThroughput", "pcie");
  *kb_per_s = static_cast<unsigned int>(
      Value(*d, counter == nv::kPcieUtilTxBytes ? "pcie_tx_kb" : "pcie_rx_kb"));
  return nv::kSuccess;
}

nv::Return nvmlDeviceGetComputeRunningProcesses_v2(nv::Device device, unsigned int* count,
                                                   void* infos) {
  FAKE_LOOKUP("nvmlDeviceGetComputeRunningProcesses_v2", "procs");
  if (*count < d->procs.size()) {
    *count = static_cast<unsigned int>(d->procs.size());
    return nv::kErrorInsufficientSize;
  }
  auto* out = static_cast<nv::ProcessInfoV2*>(infos);
  for (size_t i = 0; i < d->procs.size(); ++i) {
    out[i] = nv::ProcessInfoV2{d->procs[i].first, d->procs[i].second, 0xFFFFFFFFu, 0xFFFFFFFFu};
  }
  *count = static_cast<unsigned int>(d->procs.size());
  return nv::kSuccess;
}

nv::Return nvmlGpmQueryDeviceSupport(nv::Device device, nv::GpmSupport* support) {
  FAKE_LOOKUP("nvmlGpmQueryDeviceSupport", "gpm_support");
  if (support->version != nv::kGpmSupportVersion) return nv::kErrorInvalidArgument;
  support->is_supported_device = d->gpm ? 1 : 0;
  return nv::kSuccess;
}

nv::Return nvmlGpmSampleAlloc(nv::GpmSample* sample) {
  std::lock_guard<std::mutex> lock(S().mu);
  Count("nvmlGpmSampleAlloc");
  sample->handle = reinterpret_cast<nv::GpmSampleSt*>(new FakeGpmSample());
  return nv::kSuccess;
}

nv::Return nvmlGpmSampleFree(nv::GpmSample sample) {
  std::lock_guard<std::mutex> lock(S().mu);
  Count("nvmlGpmSampleFree");
  delete reinterpret_cast<FakeGpmSample*>(sample.handle);
  return nv::kSuccess;
}

nv::Return nvmlGpmSampleGet(nv::Device device, nv::GpmSample sample) {
  FAKE_LOOKUP("nvmlGpmSampleGet", "gpm");
  if (!d->gpm) return nv::kErrorNotSupported;
  static long seq = 0;
  auto* fs = reinterpret_cast<FakeGpmSample*>(sample.handle);
  fs->device = d - s.devices.data();
  fs->seq = ++seq;
  return nv::kSuccess;
}

nv::Return nvmlGpmMetricsGet(nv::GpmMetricsGet* request) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Count("nvmlGpmMetricsGet");
  if (request->version != nv::kGpmMetricsGetVersion) return nv::kErrorInvalidArgument;
  auto* a = reinterpret_cast<FakeGpmSample*>(request->sample1.handle);
  auto* b = reinterpret_cast<FakeGpmSample*>(request->sample2.handle);
  if (a == nullptr || b == nullptr || a->device < 0 || a->device != b->device || a->seq >= b->seq ||
      static_cast<size_t>(a->device) >= s.devices.size()) {
    return nv::kErrorInvalidArgument;  // NVML wants two samples of one GPU, oldest first
  }
  const FakeDevice& d = s.devices[a->device];
  for (unsigned int i = 0; i < request->num_metrics; ++i) {
    nv::GpmMetric& m = request->metrics[i];
    const char* key = nullptr;
    switch (m.metric_id) {
      case nv::kGpmSmUtil:
        key = "sm_util";
        break;
      case nv::kGpmSmOccupancy:
        key = "sm_occupancy";
        break;
      case nv::kGpmAnyTensorUtil:
        key = "tensor_util";
        break;
      case nv::kGpmDramBwUtil:
        key = "dram_util";
        break;
      case nv::kGpmPcieTxPerSec:
        key = "gpm_pcie_tx_mib";
        break;
      case nv::kGpmPcieRxPerSec:
        key = "gpm_pcie_rx_mib";
        break;
    }
    if (key == nullptr || d.values.find(key) == d.values.end()) {
      m.nvml_return = nv::kErrorNotSupported;
      continue;
    }
    m.nvml_return = nv::kSuccess;
    m.value = d.values.at(key);
  }
  return nv::kSuccess;
}

}  // extern "C"
