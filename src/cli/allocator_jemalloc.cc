// jemalloc's settings for the trainwatch binary. jemalloc reads them when the
// first allocation starts it; MALLOC_CONF in the environment overrides them
// (but `trainwatch server` sets its decay time itself: PrepareAllocatorForServing).
//
// - narenas:2: two arenas, as the runner had with glibc (M_ARENA_MAX 2 in
//   run_command.cc). jemalloc's default, four per CPU, left `trainwatch run`
//   under a log flood at 74-78 MiB against 56 with two (glibc: 54). Not
//   percpu_arena: jemalloc turns that off, with a warning on stderr, when a
//   process may not use every CPU (taskset, container cpusets).
// - dirty_decay_ms:1000, muzzy_decay_ms:0: freed pages go back to the system
//   after about a second, directly. jemalloc purges as it allocates (there is
//   no background thread), so an arena that goes quiet keeps its pages until
//   it is used again. `import` used 50 ms until 2026-12-02: on the 2-core
//   reference machine, where a page fault is dear, a second made it 15-20 %
//   faster (three alternating pairs: `small` 0.35-0.36 s against 0.42-0.44 s,
//   `big` 0.84-0.85 s against 0.98-1.06 s) for about 5 MiB more at its peak
//   (62-64 and 72-73 MiB).
// - No thp:always: with it every command, `import` and the runner too, took
//   huge pages from its first allocations on (`import` of the benchmark's
//   `small` set peaked at 82 MiB instead of 60, and turning them off from
//   main() came too late for 4-5 MiB). The server asks for them itself
//   (PrepareAllocatorForServing).
#include "cli/allocator.h"

#include <jemalloc/jemalloc.h>
#include <sys/mman.h>
#include <sys/types.h>

#include <string>
#include <string_view>

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

namespace {

void SetDirtyDecay(ssize_t decay_ms) {
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

// jemalloc's own extent hooks, and ours: the same but for alloc, which also
// advises the new memory for transparent huge pages (the system's THP mode
// "madvise" then backs it with them; "always" does so anyway, "never" never).
// jemalloc maps memory in growing steps and carves its extents out of them,
// so this runs rarely. Static: arenas use the hooks until the process ends.
extent_hooks_t* system_hooks = nullptr;
extent_hooks_t huge_page_hooks;

void* AllocAdvisingHugePages(extent_hooks_t* /*hooks*/, void* new_addr, size_t size,
                             size_t alignment, bool* zero, bool* commit, unsigned arena_ind) {
  void* memory = system_hooks->alloc(system_hooks, new_addr, size, alignment, zero, commit,
                                     arena_ind);
  if (memory != nullptr) madvise(memory, size, MADV_HUGEPAGE);  // advice: failure is harmless
  return memory;
}

// Gives the hooks above to every arena: the automatic ones (setting an
// arena's hooks creates it if it is not in use yet) and the one jemalloc keeps
// for allocations of opt.oversize_threshold (8 MiB) and more, made here by
// such an allocation first. Not when MALLOC_CONF says thp:never. An arena
// whose hooks differ from the first one's keeps them.
void AdviseHugePages() {
  const char* thp = nullptr;
  size_t size = sizeof(thp);
  if (mallctl("opt.thp", &thp, &size, nullptr, 0) == 0 && thp != nullptr &&
      std::string_view(thp) == "never") {
    return;
  }
  size_t oversize = 0;
  size = sizeof(oversize);
  if (mallctl("opt.oversize_threshold", &oversize, &size, nullptr, 0) == 0 && oversize > 0) {
    if (void* p = mallocx(oversize, 0); p != nullptr) dallocx(p, 0);
  }
  unsigned arenas = 0;
  size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return;
  for (unsigned i = 0; i < arenas; ++i) {
    const std::string name = "arena." + std::to_string(i) + ".extent_hooks";
    extent_hooks_t* hooks = nullptr;
    size = sizeof(hooks);
    if (mallctl(name.c_str(), &hooks, &size, nullptr, 0) != 0) continue;
    if (system_hooks == nullptr) {
      system_hooks = hooks;
      huge_page_hooks = *hooks;
      huge_page_hooks.alloc = AllocAdvisingHugePages;
    }
    if (hooks != system_hooks) continue;
    extent_hooks_t* ours = &huge_page_hooks;
    mallctl(name.c_str(), nullptr, nullptr, &ours, sizeof(ours));
  }
}

}  // namespace

void PrepareAllocatorForServing() {
  AdviseHugePages();         // first: it may make the oversize arena,
  SetDirtyDecay(10'000);     // whose decay is then set too
}

}  // namespace trainwatch::cli
