#pragma once
// Which memory allocator the binary runs with (see TW_ALLOCATOR in the top
// CMakeLists.txt): "jemalloc 5.3.0-...", or "system" for the C library's.
#include <string>

namespace trainwatch::cli {

std::string AllocatorName();

// For `trainwatch server`: jemalloc's new memory advised for transparent huge
// pages (every other command keeps small pages and its small footprint) and
// freed memory kept about 10 s instead of 1 s, so that the buffers of a stream
// of requests are not handed back to the system and faulted in again. HTTP
// ingest of the benchmark's `big` set on the 2-core reference machine, three
// alternating pairs: 7,300-11,500 page faults instead of 89,600-94,200,
// 1.35-1.68 M samples/s instead of 1.15-1.34 M, peak RSS 227-246 MiB instead
// of 186-191 (BENCHMARKS.md, "HTTP ingest"). Nothing with the system allocator.
void PrepareAllocatorForServing();

}  // namespace trainwatch::cli
