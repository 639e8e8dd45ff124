#pragma once
// Which memory allocator the binary runs with (see TW_ALLOCATOR in the top
// CMakeLists.txt): "jemalloc 5.3.0-...", or "system" for the C library's.
#include <string>

namespace trainwatch::cli {

std::string AllocatorName();

// From now on, memory freed goes back to the system within about 50 ms
// instead of a second (jemalloc's dirty_decay_ms, whatever MALLOC_CONF
// says; the system allocator keeps its own policy). For batch commands,
// whose peak resident memory matters more than serving bursts of requests.
void ReturnFreedMemoryPromptly();

}  // namespace trainwatch::cli
