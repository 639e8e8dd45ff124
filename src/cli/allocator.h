#pragma once
// Which memory allocator the binary runs with (see TW_ALLOCATOR in the top
// CMakeLists.txt): "jemalloc 5.3.0-...", or "system" for the C library's.
#include <string>

namespace trainwatch::cli {

std::string AllocatorName();

// From now on, memory freed goes back to the system at once instead of about
// a second later (jemalloc's dirty_decay_ms 0; the system allocator's own
// policy stays). For batch commands, whose peak resident memory matters more
// than the few percent of speed that keeping freed pages buys.
void ReleaseFreedMemoryAtOnce();

}  // namespace trainwatch::cli
