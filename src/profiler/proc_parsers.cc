#include "profiler/proc_parsers.h"

#include <limits>

#include "absl/strings/str_format.h"
#include "profiler/text_scan.h"

namespace trainwatch::profiler {
namespace {

// Quotes at most 80 bytes of a line for an error message.
std::string Quote(std::string_view line) {
  if (line.size() > 80) return std::string(line.substr(0, 80)) + "...";
  return std::string(line);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Parses the numeric columns of a "cpu" line; returns how many of the 8 were present.
int ParseCpuColumns(const std::string_view* f, int n, CpuTimes* t) {
  uint64_t* dst[8] = {&t->user,   &t->nice, &t->system,  &t->idle,
                      &t->iowait, &t->irq,  &t->softirq, &t->steal};
  int got = 0;
  for (int i = 0; i < 8; ++i) {
    *dst[i] = 0;
    if (i + 1 < n && ParseU64(f[i + 1], dst[i])) ++got;
  }
  return got;
}

}  // namespace

absl::Status ParseProcStat(std::string_view text, ProcStat* out) {
  out->core_ids.clear();
  out->cores.clear();
  out->missing_fields = 0;
  bool have_total = false;
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[12];
  while (lines.Next(&line)) {
    if (!StartsWith(line, "cpu")) {
      // The cpu lines come first; nothing after them is ours.
      if (have_total) break;
      continue;
    }
    int n = SplitFields(line, f, 12);
    if (n == 0) continue;
    CpuTimes t;
    int got = ParseCpuColumns(f, n, &t);
    if (got < 4) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "/proc/stat line \"%s\": want \"cpuN user nice system idle ...\" with numbers",
          Quote(line)));
    }
    if (got < 8) ++out->missing_fields;
    if (f[0] == "cpu") {
      out->total = t;
      have_total = true;
    } else {
      uint64_t id = 0;
      if (!ParseU64(f[0].substr(3), &id)) continue;
      out->core_ids.push_back(static_cast<int>(id));
      out->cores.push_back(t);
    }
  }
  if (!have_total) {
    return absl::InvalidArgumentError(
        "/proc/stat has no \"cpu \" line; is the proc root a Linux /proc?");
  }
  return absl::OkStatus();
}

absl::Status ParseMeminfo(std::string_view text, MemInfo* out) {
  *out = MemInfo();
  bool seen[5] = {false, false, false, false, false};
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[3];
  while (lines.Next(&line)) {
    if (SplitFields(line, f, 3) < 2) continue;
    uint64_t v = 0;
    if (!ParseU64(f[1], &v)) continue;
    uint64_t bytes = v * 1024;  // the kernel writes kB (KiB) for every field we read
    std::string_view key = f[0];
    if (key == "MemTotal:") {
      out->total_bytes = bytes;
      seen[0] = true;
    } else if (key == "MemFree:") {
      out->free_bytes = bytes;
      seen[1] = true;
    } else if (key == "MemAvailable:") {
      out->available_bytes = bytes;
      seen[2] = true;
    } else if (key == "Buffers:") {
      out->buffers_bytes = bytes;
      seen[3] = true;
    } else if (key == "Cached:") {
      out->cached_bytes = bytes;
      seen[4] = true;
    } else if (key == "SwapTotal:") {
      out->swap_total_bytes = bytes;
    } else if (key == "SwapFree:") {
      out->swap_free_bytes = bytes;
    }
  }
  for (bool s : seen) out->missing_fields += s ? 0 : 1;
  if (!seen[0] || out->total_bytes == 0) {
    return absl::InvalidArgumentError(
        "/proc/meminfo has no \"MemTotal: N kB\" line; is the proc root a Linux /proc?");
  }
  out->has_available = seen[2];
  if (!out->has_available) {
    out->available_bytes = out->free_bytes + out->buffers_bytes + out->cached_bytes;
    if (out->available_bytes > out->total_bytes) out->available_bytes = out->total_bytes;
  }
  return absl::OkStatus();
}

absl::Status ParseDiskstats(std::string_view text, std::vector<DiskStat>* out,
                            int* missing_fields) {
  out->clear();
  *missing_fields = 0;
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[14];
  while (lines.Next(&line)) {
    int n = SplitFields(line, f, 14);
    if (n == 0) continue;
    if (n < 14) {
      ++*missing_fields;
      continue;
    }
    // major minor name | reads merged sectors ms | writes merged sectors ms | in_flight io_ticks
    // ...
    DiskStat d;
    d.name = f[2];
    uint64_t ignored = 0;
    if (!ParseU64(f[0], &ignored) || !ParseU64(f[3], &d.reads) ||
        !ParseU64(f[5], &d.read_sectors) || !ParseU64(f[7], &d.writes) ||
        !ParseU64(f[9], &d.write_sectors) || !ParseU64(f[12], &d.io_ticks_ms)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "/proc/diskstats line \"%s\": want \"major minor name\" and 11+ counters", Quote(line)));
    }
    out->push_back(d);
  }
  return absl::OkStatus();
}

absl::Status ParseNetDev(std::string_view text, std::vector<NetDevStat>* out, int* missing_fields) {
  out->clear();
  *missing_fields = 0;
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[16];
  while (lines.Next(&line)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = TrimBlanks(line.substr(0, colon));
    if (name.empty() || name.find('|') != std::string_view::npos) continue;  // header
    // Large counters may follow the colon without a blank ("eth0:1234567890 ...").
    int n = SplitFields(line.substr(colon + 1), f, 16);
    if (n < 16) {
      ++*missing_fields;
      continue;
    }
    NetDevStat s;
    s.name = name;
    uint64_t* dst[16] = {
        &s.rx_bytes, &s.rx_packets, &s.rx_errors, &s.rx_drops, nullptr, nullptr, nullptr, nullptr,
        &s.tx_bytes, &s.tx_packets, &s.tx_errors, &s.tx_drops, nullptr, nullptr, nullptr, nullptr};
    for (int i = 0; i < 16; ++i) {
      uint64_t v = 0;
      if (!ParseU64(f[i], &v)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "/proc/net/dev line \"%s\": want \"iface: \" and 16 counters", Quote(line)));
      }
      if (dst[i] != nullptr) *dst[i] = v;
    }
    out->push_back(s);
  }
  return absl::OkStatus();
}

absl::Status ParseLoadavg(std::string_view text, LoadAvg* out) {
  std::string_view f[4];
  LineIterator lines(text);
  std::string_view line;
  if (!lines.Next(&line) || SplitFields(line, f, 4) < 4 || !ParseDouble(f[0], &out->load1) ||
      !ParseDouble(f[1], &out->load5) || !ParseDouble(f[2], &out->load15)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("/proc/loadavg \"%s\": want \"1.00 0.50 0.25 2/300 1234\"", Quote(line)));
  }
  size_t slash = f[3].find('/');
  out->runnable = out->total_tasks = 0;
  if (slash != std::string_view::npos) {
    ParseU64(f[3].substr(0, slash), &out->runnable);
    ParseU64(f[3].substr(slash + 1), &out->total_tasks);
  }
  return absl::OkStatus();
}

absl::Status ParsePressure(std::string_view text, Pressure* out) {
  *out = Pressure();
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[6];
  while (lines.Next(&line)) {
    int n = SplitFields(line, f, 6);
    if (n == 0) continue;
    bool some = f[0] == "some";
    if (!some && f[0] != "full") continue;
    bool found = false;
    for (int i = 1; i < n; ++i) {
      if (StartsWith(f[i], "total=")) {
        uint64_t v = 0;
        if (!ParseU64(f[i].substr(6), &v)) break;
        (some ? out->some_total_us : out->full_total_us) = v;
        (some ? out->has_some : out->has_full) = true;
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "pressure line \"%s\": want \"some avg10=0.00 avg60=0.00 avg300=0.00 total=N\"",
          Quote(line)));
    }
  }
  if (!out->has_some) {
    return absl::InvalidArgumentError("pressure file has no \"some ... total=N\" line");
  }
  return absl::OkStatus();
}

absl::Status ParsePidStat(std::string_view text, PidStat* out) {
  // "pid (comm) S ppid ..." where comm may hold blanks and parentheses: the
  // fields resume after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos || text.find('(') == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("/proc/<pid>/stat \"%s\": want \"pid (comm) state ...\"", Quote(text)));
  }
  std::string_view f[22];
  int n = SplitFields(text.substr(close + 1), f, 22);
  // f[0] is field 3 (state); field k of proc(5) is f[k - 3].
  if (n < 22) {
    return absl::InvalidArgumentError(
        absl::StrFormat("/proc/<pid>/stat \"%s\": want at least 24 fields", Quote(text)));
  }
  out->state = f[0].empty() ? '?' : f[0][0];
  bool ok = ParseI64(f[1], &out->ppid) && ParseU64(f[11], &out->utime) &&
            ParseU64(f[12], &out->stime) && ParseU64(f[13], &out->cutime) &&
            ParseU64(f[14], &out->cstime) && ParseI64(f[17], &out->num_threads) &&
            ParseU64(f[19], &out->start_time) && ParseI64(f[21], &out->rss_pages);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrFormat("/proc/<pid>/stat \"%s\": a numeric field is not a number", Quote(text)));
  }
  return absl::OkStatus();
}

absl::Status ParsePidIo(std::string_view text, PidIo* out) {
  *out = PidIo();
  int seen = 0;
  LineIterator lines(text);
  std::string_view line;
  std::string_view f[2];
  while (lines.Next(&line)) {
    if (SplitFields(line, f, 2) != 2) continue;
    uint64_t v = 0;
    if (!ParseU64(f[1], &v)) continue;
    if (f[0] == "rchar:") {
      out->rchar = v;
      ++seen;
    } else if (f[0] == "wchar:") {
      out->wchar = v;
      ++seen;
    } else if (f[0] == "read_bytes:") {
      out->read_bytes = v;
      ++seen;
    } else if (f[0] == "write_bytes:") {
      out->write_bytes = v;
      ++seen;
    }
  }
  if (seen == 0) {
    return absl::InvalidArgumentError(
        "/proc/<pid>/io has none of rchar, wchar, read_bytes, write_bytes");
  }
  return absl::OkStatus();
}

absl::Status ParseProcCgroup(std::string_view text, ProcCgroup* out) {
  *out = ProcCgroup();
  LineIterator lines(text);
  std::string_view line;
  bool any = false;
  while (lines.Next(&line)) {
    if (line.empty()) continue;
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "/proc/<pid>/cgroup line \"%s\": want \"hierarchy-id:controllers:path\"", Quote(line)));
    }
    any = true;
    std::string_view id = line.substr(0, c1);
    std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view path = line.substr(c2 + 1);
    if (id == "0" && controllers.empty()) {
      out->has_unified = true;
      out->unified_path.assign(path.data(), path.size());
      continue;
    }
    if (controllers.empty() || StartsWith(controllers, "name=")) continue;
    out->has_v1 = true;
    // Controllers are comma-separated, e.g. "cpu,cpuacct".
    size_t start = 0;
    while (start <= controllers.size()) {
      size_t comma = controllers.find(',', start);
      std::string_view c = controllers.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (c == "cpu" || c == "memory") out->v1_cpu_or_memory = true;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  if (!any) return absl::InvalidArgumentError("/proc/<pid>/cgroup is empty");
  return absl::OkStatus();
}

absl::Status ParseCgroupCpuStat(std::string_view text, CgroupCpuStat* out) {
  *out = CgroupCpuStat();
  bool usage = false;
  ForEachFlatKeyed(text, [&](std::string_view key, uint64_t v) {
    if (key == "usage_usec") {
      out->usage_usec = v;
      usage = true;
    } else if (key == "user_usec") {
      out->user_usec = v;
    } else if (key == "system_usec") {
      out->system_usec = v;
    } else if (key == "nr_periods") {
      out->nr_periods = v;
      out->has_throttling = true;
    } else if (key == "nr_throttled") {
      out->nr_throttled = v;
    } else if (key == "throttled_usec") {
      out->throttled_usec = v;
    }
  });
  if (!usage) return absl::InvalidArgumentError("cgroup cpu.stat has no \"usage_usec N\" line");
  return absl::OkStatus();
}

absl::Status ParseCgroupMemoryEvents(std::string_view text, CgroupMemoryEvents* out) {
  *out = CgroupMemoryEvents();
  bool any = false;
  ForEachFlatKeyed(text, [&](std::string_view key, uint64_t v) {
    any = true;
    if (key == "low")
      out->low = v;
    else if (key == "high")
      out->high = v;
    else if (key == "max")
      out->max = v;
    else if (key == "oom")
      out->oom = v;
    else if (key == "oom_kill")
      out->oom_kill = v;
  });
  if (!any) return absl::InvalidArgumentError("cgroup memory.events has no \"key N\" lines");
  return absl::OkStatus();
}

absl::Status ParseCgroupLimit(std::string_view text, uint64_t* out) {
  std::string_view t = TrimBlanks(text);
  if (t == "max") {
    *out = std::numeric_limits<uint64_t>::max();
    return absl::OkStatus();
  }
  if (!ParseU64(t, out)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cgroup limit \"%s\": want a number of bytes or \"max\"", Quote(t)));
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::profiler
