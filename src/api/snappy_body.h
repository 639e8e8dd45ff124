#pragma once
// snappy request bodies (Content-Encoding: snappy): the block format, one
// block per body, as Prometheus remote write sends it. Batches of series
// shrink to about a seventh, and decode about 2.5 times faster than gzip
// (BENCHMARKS.md, "HTTP ingest").

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::api {

// Decompresses one snappy block. ResourceExhausted (the caller answers 413)
// when the length the block declares exceeds `max_output_bytes`, checked
// before anything is allocated; InvalidArgument for data that is not one
// valid block.
absl::StatusOr<std::string> SnappyUncompress(std::string_view compressed, size_t max_output_bytes);

// Compresses `data` as one snappy block (tests, clients).
std::string SnappyCompress(std::string_view data);

}  // namespace trainwatch::api
