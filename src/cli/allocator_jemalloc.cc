// jemalloc's settings for the trainwatch binary. jemalloc reads them when the
// first allocation starts it; MALLOC_CONF in the environment overrides them
// (but `trainwatch import` sets its decay itself: ReturnFreedMemoryPromptly).
//
// - narenas:2: two arenas, as the runner had with glibc (M_ARENA_MAX 2 in
//   run_command.cc). jemalloc's default, four per CPU, left `trainwatch run`
//   under a log flood at 74-78 MiB against 56 with two (glibc: 54). Not
//   percpu_arena: jemalloc turns that off, with a warning on stderr, when a
//   process may not use every CPU (taskset, container cpusets).
// - dirty_decay_ms:1000, muzzy_decay_ms:0: freed pages go back to the system
//   after about a second, directly. jemalloc purges as it allocates (there is
//   no background thread), so an arena that goes quiet keeps its pages until
//   it is used again.
#include "cli/allocator.h"

#include <jemalloc/jemalloc.h>
#include <sys/types.h>

#include <string>

extern "C" {
// NOLINTNEXTLINE: the name is jemalloc's.
const char* malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
}

namespace trainwatch::cli {

std::string AllocatorName() {
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  return std::string("jemalloc ") + version;
}

void ReturnFreedMemoryPromptly() {
  // 50 ms: measured on `trainwatch import` of the benchmark sets, as fast as
  // with 1 s (0 was a fifth slower) and below glibc's peak.
  ssize_t decay_ms = 50;
  // Arenas made from now on, then those that exist (an index not in use yet
  // refuses, which is fine: it will start from the new default).
  mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &decay_ms, sizeof(decay_ms));
  unsigned arenas = 0;
  size_t size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return;
  for (unsigned i = 0; i < arenas; ++i) {
    const std::string name = "arena." + std::to_string(i) + ".dirty_decay_ms";
    mallctl(name.c_str(), nullptr, nullptr, &decay_ms, sizeof(decay_ms));
  }
}

}  // namespace trainwatch::cli
