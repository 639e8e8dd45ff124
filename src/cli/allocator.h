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
// ingest of the benchmark's `big` set on the 2-core reference machine, five
// alternating pairs: 6,500-11,500 page faults instead of 85,000-96,000,
// 1.35-2.10 M samples/s instead of 1.15-1.70 M, peak RSS 222-240 MiB instead
// of 168-187 (BENCHMARKS.md, "HTTP ingest"). Nothing with the system allocator.
void PrepareAllocatorForServing();

}  // namespace trainwatch::cli
