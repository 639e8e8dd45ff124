// Fuzz target: every parser of kernel text gets every input. They must never
// crash, read out of bounds or loop, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "profiler/proc_parsers.h"

using namespace trainwatch::profiler;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ProcStat stat;
  ParseProcStat(text, &stat).IgnoreError();
  MemInfo mem;
  ParseMeminfo(text, &mem).IgnoreError();
  std::vector<DiskStat> disks;
  int missing = 0;
  ParseDiskstats(text, &disks, &missing).IgnoreError();
  std::vector<NetDevStat> nets;
  ParseNetDev(text, &nets, &missing).IgnoreError();
  LoadAvg load;
  ParseLoadavg(text, &load).IgnoreError();
  Pressure psi;
  ParsePressure(text, &psi).IgnoreError();
  PidStat pid;
  ParsePidStat(text, &pid).IgnoreError();
  PidIo io;
  ParsePidIo(text, &io).IgnoreError();
  ProcCgroup cg;
  ParseProcCgroup(text, &cg).IgnoreError();
  CgroupCpuStat cpu;
  ParseCgroupCpuStat(text, &cpu).IgnoreError();
  CgroupMemoryEvents ev;
  ParseCgroupMemoryEvents(text, &ev).IgnoreError();
  uint64_t limit = 0;
  ParseCgroupLimit(text, &limit).IgnoreError();
  return 0;
}
