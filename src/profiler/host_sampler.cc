#include "profiler/host_sampler.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "profiler/metric_names.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

namespace m = metric;

// Counter increase, 0 when the counter went backwards (a reset, or iowait,
// which the kernel does not keep monotonic on tickless CPUs).
uint64_t Delta(uint64_t now, uint64_t prev) { return now >= prev ? now - prev : 0; }

double Clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

HostSampler::HostSampler(const ProfilerOptions& options, std::string host, std::string disk_path,
                         SeriesTable* table, DegradedCounters* degraded)
    : options_(options),
      host_(std::move(host)),
      disk_path_(std::move(disk_path)),
      table_(table),
      degraded_(degraded) {}

Slot HostSampler::AddHost(std::string_view metric, std::string_view unit) {
  return table_->Add(kProfilerNamespace, metric, {{std::string(kHostDim), host_}}, unit);
}

Slot HostSampler::AddWith(std::string_view metric, std::string_view dim, const std::string& value,
                          std::string_view unit) {
  return table_->Add(kProfilerNamespace, metric,
                     {{std::string(kHostDim), host_}, {std::string(dim), value}}, unit);
}

HostSampler::CpuSlots HostSampler::MakeCpuSlots(int id) {
  CpuSlots s;
  s.id = id;
  if (id < 0) {
    s.busy = AddHost(m::kHostCPUUtilization, kPercent);
    s.user = AddHost(m::kCPUUser, kPercent);
    s.system = AddHost(m::kCPUSystem, kPercent);
    s.iowait = AddHost(m::kCPUIOWait, kPercent);
    s.steal = AddHost(m::kCPUSteal, kPercent);
  } else {
    std::string core = absl::StrFormat("%d", id);
    s.busy = AddWith(m::kHostCPUUtilization, kCoreDim, core, kPercent);
    s.user = AddWith(m::kCPUUser, kCoreDim, core, kPercent);
    s.system = AddWith(m::kCPUSystem, kCoreDim, core, kPercent);
    s.iowait = AddWith(m::kCPUIOWait, kCoreDim, core, kPercent);
    s.steal = AddWith(m::kCPUSteal, kCoreDim, core, kPercent);
  }
  return s;
}

absl::StatusOr<std::unique_ptr<HostSampler>> HostSampler::Create(const ProfilerOptions& options,
                                                                 std::string host,
                                                                 std::string disk_path,
                                                                 SeriesTable* table,
                                                                 DegradedCounters* degraded) {
  std::unique_ptr<HostSampler> h(
      new HostSampler(options, std::move(host), std::move(disk_path), table, degraded));
  const std::string& proc = options.proc_root;
  for (auto [file, name] : {std::pair{&h->stat_, "stat"}, std::pair{&h->meminfo_, "meminfo"}}) {
    absl::Status s = file->Open(proc + "/" + name, 16384);
    if (!s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("profiler: %s; the profiler needs a Linux /proc (proc root \"%s\")",
                          std::string(s.message()), proc));
    }
  }
  // Optional files: their series are left out when absent.
  for (auto [file, name] :
       {std::pair{&h->diskstats_, "diskstats"}, std::pair{&h->netdev_, "net/dev"},
        std::pair{&h->loadavg_, "loadavg"}}) {
    absl::Status s = file->Open(proc + "/" + name, 8192);
    if (!s.ok()) {
      ++degraded->proc_read_errors;
      util::LogOnce(absl::StrFormat("profiler.missing.%s", name),
                    absl::StrFormat("profiler: %s; its series are left out", s.message()));
    }
  }
  h->cpu_total_ = h->MakeCpuSlots(-1);
  h->cores_count_ = h->AddHost(m::kCPUCores, kCount);
  h->mem_total_ = h->AddHost(m::kMemoryTotal, kBytes);
  h->mem_used_ = h->AddHost(m::kMemoryUsed, kBytes);
  h->mem_available_ = h->AddHost(m::kMemoryAvailable, kBytes);
  h->mem_cache_ = h->AddHost(m::kMemoryPageCache, kBytes);
  h->mem_used_pct_ = h->AddHost(m::kMemoryUsedPercent, kPercent);
  h->swap_used_ = h->AddHost(m::kSwapUsed, kBytes);
  h->disk_read_bytes_ = h->AddHost(m::kDiskReadBytes, kBytesPerSecond);
  h->disk_write_bytes_ = h->AddHost(m::kDiskWriteBytes, kBytesPerSecond);
  h->disk_read_ops_ = h->AddHost(m::kDiskReadOps, kCountPerSecond);
  h->disk_write_ops_ = h->AddHost(m::kDiskWriteOps, kCountPerSecond);
  h->net_rx_bytes_ = h->AddHost(m::kNetRxBytes, kBytesPerSecond);
  h->net_tx_bytes_ = h->AddHost(m::kNetTxBytes, kBytesPerSecond);
  h->net_rx_packets_ = h->AddHost(m::kNetRxPackets, kCountPerSecond);
  h->net_tx_packets_ = h->AddHost(m::kNetTxPackets, kCountPerSecond);
  h->net_rx_errors_ = h->AddHost(m::kNetRxErrors, kCount);
  h->net_tx_errors_ = h->AddHost(m::kNetTxErrors, kCount);
  h->load1_ = h->AddHost(m::kLoad1, kNone);
  h->load5_ = h->AddHost(m::kLoad5, kNone);
  h->load15_ = h->AddHost(m::kLoad15, kNone);
  h->runnable_ = h->AddHost(m::kRunnableTasks, kCount);
  h->fs_used_ = h->AddHost(m::kFilesystemUsed, kBytes);
  h->fs_available_ = h->AddHost(m::kFilesystemAvailable, kBytes);

  const char* resources[3] = {"cpu", "memory", "io"};
  for (int i = 0; i < 3; ++i) {
    PsiState& p = h->psi_[i];
    p.resource = resources[i];
    absl::Status s = p.file.Open(absl::StrFormat("%s/pressure/%s", proc, p.resource), 256);
    if (!s.ok()) {
      ++degraded->psi_unavailable;
      util::LogOnce("profiler.no-psi",
                    absl::StrFormat("profiler: %s (kernel without pressure stall information, "
                                    "before 4.20 or booted with psi=0); pressure series are off",
                                    s.message()));
      continue;
    }
    if (i == 0) {
      p.some = h->AddHost(m::kPressureCPUSome, kPercent);
    } else if (i == 1) {
      p.some = h->AddHost(m::kPressureMemorySome, kPercent);
      p.full = h->AddHost(m::kPressureMemoryFull, kPercent);
    } else {
      p.some = h->AddHost(m::kPressureIOSome, kPercent);
      p.full = h->AddHost(m::kPressureIOFull, kPercent);
    }
  }
  if (h->disk_path_.empty()) {
    ++degraded->disk_path_unavailable;
    util::LogOnce("profiler.no-disk-path",
                  "profiler: the job's working directory is unknown; DiskUtilization and the "
                  "filesystem series are off");
  }
  return h;
}

void HostSampler::MissingFields(const char* file, int count) {
  if (count <= 0) return;
  degraded_->proc_fields_missing += count;
  util::LogOnce(absl::StrFormat("profiler.fields-missing.%s", file),
                absl::StrFormat("profiler: %s/%s lacks fields this kernel does not provide; "
                                "the affected values are left out or zero",
                                options_.proc_root, file));
}

bool HostSampler::ReadHostFile(ProcFile* f, std::string_view* text) {
  if (!f->is_open()) return false;
  absl::StatusOr<std::string_view> t = f->Read();
  if (!t.ok()) {
    ++degraded_->proc_read_errors;
    util::LogOnce(absl::StrFormat("profiler.read.%s", f->path()),
                  absl::StrFormat("profiler: %s", t.status().message()));
    return false;
  }
  *text = *t;
  return true;
}

void HostSampler::Sample(const TickContext& ctx, HostResult* out) {
  *out = HostResult();
  SampleCpu(ctx, out);
  SampleMemory(ctx, out);
  SampleDisks(ctx);
  SampleNetwork(ctx);
  SampleLoadAndPressure(ctx);
  SampleFilesystem(ctx, out);
}

void HostSampler::EmitCpu(const TickContext& ctx, CpuSlots* s, const CpuTimes& now) {
  if (s->have_prev && ctx.has_rates()) {
    const CpuTimes& p = s->prev;
    uint64_t user = Delta(now.user, p.user) + Delta(now.nice, p.nice);
    uint64_t system =
        Delta(now.system, p.system) + Delta(now.irq, p.irq) + Delta(now.softirq, p.softirq);
    uint64_t idle = Delta(now.idle, p.idle);
    uint64_t iowait = Delta(now.iowait, p.iowait);
    uint64_t steal = Delta(now.steal, p.steal);
    uint64_t total = user + system + idle + iowait + steal;
    if (total > 0) {
      double k = 100.0 / static_cast<double>(total);
      table_->Emit(s->busy, ctx.t_ms, static_cast<double>(user + system + steal) * k);
      table_->Emit(s->user, ctx.t_ms, static_cast<double>(user) * k);
      table_->Emit(s->system, ctx.t_ms, static_cast<double>(system) * k);
      table_->Emit(s->iowait, ctx.t_ms, static_cast<double>(iowait) * k);
      table_->Emit(s->steal, ctx.t_ms, static_cast<double>(steal) * k);
    }
  }
  s->prev = now;
  s->have_prev = true;
}

void HostSampler::SampleCpu(const TickContext& ctx, HostResult* out) {
  std::string_view text;
  if (!ReadHostFile(&stat_, &text)) return;
  absl::Status st = ParseProcStat(text, &proc_stat_);
  if (!st.ok()) {
    ++degraded_->proc_read_errors;
    util::LogOnce("profiler.parse.stat", absl::StrFormat("profiler: %s", st.message()));
    return;
  }
  MissingFields("stat", proc_stat_.missing_fields);
  EmitCpu(ctx, &cpu_total_, proc_stat_.total);
  for (size_t i = 0; i < proc_stat_.core_ids.size(); ++i) {
    int id = proc_stat_.core_ids[i];
    auto it = std::lower_bound(cores_.begin(), cores_.end(), id,
                               [](const CpuSlots& s, int v) { return s.id < v; });
    if (it == cores_.end() || it->id != id) it = cores_.insert(it, MakeCpuSlots(id));
    EmitCpu(ctx, &*it, proc_stat_.cores[i]);
  }
  out->cores = static_cast<int>(proc_stat_.core_ids.size());
  table_->Emit(cores_count_, ctx.t_ms, out->cores);
}

void HostSampler::SampleMemory(const TickContext& ctx, HostResult* out) {
  std::string_view text;
  if (!ReadHostFile(&meminfo_, &text)) return;
  MemInfo mem;
  absl::Status st = ParseMeminfo(text, &mem);
  if (!st.ok()) {
    ++degraded_->proc_read_errors;
    util::LogOnce("profiler.parse.meminfo", absl::StrFormat("profiler: %s", st.message()));
    return;
  }
  MissingFields("meminfo", mem.missing_fields);
  const double total = static_cast<double>(mem.total_bytes);
  const double used = static_cast<double>(Delta(mem.total_bytes, mem.available_bytes));
  table_->Emit(mem_total_, ctx.t_ms, total);
  table_->Emit(mem_used_, ctx.t_ms, used);
  table_->Emit(mem_available_, ctx.t_ms, static_cast<double>(mem.available_bytes));
  table_->Emit(mem_cache_, ctx.t_ms, static_cast<double>(mem.cached_bytes + mem.buffers_bytes));
  out->memory_used_percent = 100.0 * used / total;
  out->has_memory = true;
  table_->Emit(mem_used_pct_, ctx.t_ms, out->memory_used_percent);
  table_->Emit(swap_used_, ctx.t_ms,
               static_cast<double>(Delta(mem.swap_total_bytes, mem.swap_free_bytes)));
}

HostSampler::DiskState* HostSampler::FindDisk(std::string_view name, size_t hint) {
  if (hint < disks_.size() && disks_[hint].name == name) return &disks_[hint];
  for (auto& d : disks_) {
    if (d.name == name) return &d;
  }
  DiskState d;
  d.name = std::string(name);
  // Whole disks are listed in /sys/block, partitions are not; virtual RAM,
  // loop and floppy devices are left out (node_exporter does the same).
  std::string sys = absl::StrFormat("%s/block/%s", options_.sys_root, d.name);
  d.ignored = StartsWith(name, "loop") || StartsWith(name, "ram") || StartsWith(name, "zram") ||
              StartsWith(name, "fd") || !Exists(sys);
  // dm-*, md* have no "device": they stack on disks already counted.
  d.physical = !d.ignored && Exists(sys + "/device");
  if (!d.ignored) {
    if (per_device_disks_ >= options_.max_devices) {
      d.capped = true;
      ++degraded_->series_capped;
      util::LogOnce("profiler.disks-capped",
                    absl::StrFormat("profiler: more than %d block devices; per-device series "
                                    "only for the first %d (host totals cover all)",
                                    options_.max_devices, options_.max_devices));
    } else {
      ++per_device_disks_;
      d.read_bytes = AddWith(m::kDiskReadBytes, kDeviceDim, d.name, kBytesPerSecond);
      d.write_bytes = AddWith(m::kDiskWriteBytes, kDeviceDim, d.name, kBytesPerSecond);
      d.read_ops = AddWith(m::kDiskReadOps, kDeviceDim, d.name, kCountPerSecond);
      d.write_ops = AddWith(m::kDiskWriteOps, kDeviceDim, d.name, kCountPerSecond);
      d.busy = AddWith(m::kDiskBusy, kDeviceDim, d.name, kPercent);
    }
  }
  disks_.push_back(std::move(d));
  return &disks_.back();
}

void HostSampler::SampleDisks(const TickContext& ctx) {
  std::string_view text;
  if (!ReadHostFile(&diskstats_, &text)) return;
  int missing = 0;
  absl::Status st = ParseDiskstats(text, &disk_stats_, &missing);
  if (!st.ok()) {
    ++degraded_->proc_read_errors;
    util::LogOnce("profiler.parse.diskstats", absl::StrFormat("profiler: %s", st.message()));
    return;
  }
  MissingFields("diskstats", missing);
  double tot_rb = 0, tot_wb = 0, tot_ro = 0, tot_wo = 0;
  bool any_rate = false;
  for (size_t i = 0; i < disk_stats_.size(); ++i) {
    const DiskStat& now = disk_stats_[i];
    DiskState* d = FindDisk(now.name, i);
    if (d->ignored) continue;
    if (d->have_prev && ctx.has_rates()) {
      const DiskStat& p = d->prev;
      double rb = Delta(now.read_sectors, p.read_sectors) * 512.0 / ctx.dt_s;
      double wb = Delta(now.write_sectors, p.write_sectors) * 512.0 / ctx.dt_s;
      double ro = Delta(now.reads, p.reads) / ctx.dt_s;
      double wo = Delta(now.writes, p.writes) / ctx.dt_s;
      double busy = Clamp(Delta(now.io_ticks_ms, p.io_ticks_ms) / (ctx.dt_s * 10.0), 0, 100);
      if (!d->capped) {
        table_->Emit(d->read_bytes, ctx.t_ms, rb);
        table_->Emit(d->write_bytes, ctx.t_ms, wb);
        table_->Emit(d->read_ops, ctx.t_ms, ro);
        table_->Emit(d->write_ops, ctx.t_ms, wo);
        table_->Emit(d->busy, ctx.t_ms, busy);
      }
      if (d->physical) {
        tot_rb += rb;
        tot_wb += wb;
        tot_ro += ro;
        tot_wo += wo;
        any_rate = true;
      }
    }
    d->prev = now;
    d->prev.name = {};  // points into the read buffer
    d->have_prev = true;
  }
  if (any_rate) {
    table_->Emit(disk_read_bytes_, ctx.t_ms, tot_rb);
    table_->Emit(disk_write_bytes_, ctx.t_ms, tot_wb);
    table_->Emit(disk_read_ops_, ctx.t_ms, tot_ro);
    table_->Emit(disk_write_ops_, ctx.t_ms, tot_wo);
  }
}

HostSampler::NetState* HostSampler::FindNet(std::string_view name, size_t hint) {
  if (hint < nets_.size() && nets_[hint].name == name) return &nets_[hint];
  for (auto& n : nets_) {
    if (n.name == name) return &n;
  }
  NetState n;
  n.name = std::string(name);
  if (static_cast<int>(nets_.size()) >= options_.max_devices) {
    n.capped = true;
    ++degraded_->series_capped;
    util::LogOnce("profiler.interfaces-capped",
                  absl::StrFormat("profiler: more than %d network interfaces; per-interface "
                                  "series only for the first %d (host totals cover all)",
                                  options_.max_devices, options_.max_devices));
  } else {
    n.rx_bytes = AddWith(m::kNetRxBytes, kInterfaceDim, n.name, kBytesPerSecond);
    n.tx_bytes = AddWith(m::kNetTxBytes, kInterfaceDim, n.name, kBytesPerSecond);
    n.rx_packets = AddWith(m::kNetRxPackets, kInterfaceDim, n.name, kCountPerSecond);
    n.tx_packets = AddWith(m::kNetTxPackets, kInterfaceDim, n.name, kCountPerSecond);
    n.rx_errors = AddWith(m::kNetRxErrors, kInterfaceDim, n.name, kCount);
    n.tx_errors = AddWith(m::kNetTxErrors, kInterfaceDim, n.name, kCount);
  }
  nets_.push_back(std::move(n));
  return &nets_.back();
}

void HostSampler::SampleNetwork(const TickContext& ctx) {
  std::string_view text;
  if (!ReadHostFile(&netdev_, &text)) return;
  int missing = 0;
  absl::Status st = ParseNetDev(text, &net_stats_, &missing);
  if (!st.ok()) {
    ++degraded_->proc_read_errors;
    util::LogOnce("profiler.parse.netdev", absl::StrFormat("profiler: %s", st.message()));
    return;
  }
  MissingFields("net/dev", missing);
  double rxb = 0, txb = 0, rxp = 0, txp = 0, rxe = 0, txe = 0;
  bool any_rate = false;
  for (size_t i = 0; i < net_stats_.size(); ++i) {
    const NetDevStat& now = net_stats_[i];
    NetState* n = FindNet(now.name, i);
    if (n->have_prev && ctx.has_rates()) {
      const NetDevStat& p = n->prev;
      double v[6] = {Delta(now.rx_bytes, p.rx_bytes) / ctx.dt_s,
                     Delta(now.tx_bytes, p.tx_bytes) / ctx.dt_s,
                     Delta(now.rx_packets, p.rx_packets) / ctx.dt_s,
                     Delta(now.tx_packets, p.tx_packets) / ctx.dt_s,
                     static_cast<double>(Delta(now.rx_errors, p.rx_errors)),
                     static_cast<double>(Delta(now.tx_errors, p.tx_errors))};
      if (!n->capped) {
        table_->Emit(n->rx_bytes, ctx.t_ms, v[0]);
        table_->Emit(n->tx_bytes, ctx.t_ms, v[1]);
        table_->Emit(n->rx_packets, ctx.t_ms, v[2]);
        table_->Emit(n->tx_packets, ctx.t_ms, v[3]);
        table_->Emit(n->rx_errors, ctx.t_ms, v[4]);
        table_->Emit(n->tx_errors, ctx.t_ms, v[5]);
      }
      if (n->name != "lo") {  // loopback traffic never leaves the host
        rxb += v[0];
        txb += v[1];
        rxp += v[2];
        txp += v[3];
        rxe += v[4];
        txe += v[5];
        any_rate = true;
      }
    }
    n->prev = now;
    n->prev.name = {};
    n->have_prev = true;
  }
  if (any_rate) {
    table_->Emit(net_rx_bytes_, ctx.t_ms, rxb);
    table_->Emit(net_tx_bytes_, ctx.t_ms, txb);
    table_->Emit(net_rx_packets_, ctx.t_ms, rxp);
    table_->Emit(net_tx_packets_, ctx.t_ms, txp);
    table_->Emit(net_rx_errors_, ctx.t_ms, rxe);
    table_->Emit(net_tx_errors_, ctx.t_ms, txe);
  }
}

void HostSampler::SampleLoadAndPressure(const TickContext& ctx) {
  std::string_view text;
  if (ReadHostFile(&loadavg_, &text)) {
    LoadAvg load;
    if (ParseLoadavg(text, &load).ok()) {
      table_->Emit(load1_, ctx.t_ms, load.load1);
      table_->Emit(load5_, ctx.t_ms, load.load5);
      table_->Emit(load15_, ctx.t_ms, load.load15);
      table_->Emit(runnable_, ctx.t_ms, static_cast<double>(load.runnable));
    } else {
      ++degraded_->proc_read_errors;
    }
  }
  for (PsiState& p : psi_) {
    if (!p.file.is_open()) continue;
    absl::StatusOr<std::string_view> t = p.file.Read();
    Pressure now;
    if (!t.ok() || !ParsePressure(*t, &now).ok()) {
      // EOPNOTSUPP here means PSI compiled in but disabled (psi=0).
      ++degraded_->psi_unavailable;
      util::LogOnce("profiler.no-psi",
                    absl::StrFormat("profiler: %s/pressure/%s cannot be read (PSI disabled?); "
                                    "pressure series are off",
                                    options_.proc_root, p.resource));
      p.file.Close();
      continue;
    }
    if (p.have_prev && ctx.has_rates()) {
      double us = ctx.dt_s * 1e6;
      table_->Emit(p.some, ctx.t_ms,
                   Clamp(Delta(now.some_total_us, p.prev.some_total_us) * 100.0 / us, 0, 100));
      if (now.has_full && p.full != kNoSlot) {
        table_->Emit(p.full, ctx.t_ms,
                     Clamp(Delta(now.full_total_us, p.prev.full_total_us) * 100.0 / us, 0, 100));
      }
    }
    p.prev = now;
    p.have_prev = true;
  }
}

void HostSampler::SampleFilesystem(const TickContext& ctx, HostResult* out) {
  if (disk_path_.empty()) return;
  struct statvfs fs;
  if (::statvfs(disk_path_.c_str(), &fs) != 0 || fs.f_blocks == 0) {
    ++degraded_->disk_path_unavailable;
    util::LogOnce(
        "profiler.statvfs",
        absl::StrFormat("profiler: cannot statvfs \"%s\"; DiskUtilization is off", disk_path_));
    return;
  }
  // As df(1): used = blocks - free; percent of what users may fill (used + avail).
  double frsize = static_cast<double>(fs.f_frsize);
  double used = static_cast<double>(fs.f_blocks - fs.f_bfree) * frsize;
  double avail = static_cast<double>(fs.f_bavail) * frsize;
  table_->Emit(fs_used_, ctx.t_ms, used);
  table_->Emit(fs_available_, ctx.t_ms, avail);
  if (used + avail > 0) {
    out->has_filesystem = true;
    out->filesystem_used_percent = 100.0 * used / (used + avail);
  }
}

}  // namespace trainwatch::profiler
