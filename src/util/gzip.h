#pragma once
// gzip: request bodies (Content-Encoding: gzip, spec/aws-api.md §2.1) and the
// archive's objects (docs/format/archive.md).

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::util {

// Decompresses one or more concatenated gzip members. ResourceExhausted (the
// caller answers 413) once the output would exceed `max_output_bytes`, without
// producing more than that; InvalidArgument for data that is not gzip, is
// truncated, or fails its checksum.
absl::StatusOr<std::string> Gunzip(std::string_view compressed, size_t max_output_bytes);

// Compresses `data` as one gzip member (tests, clients).
std::string Gzip(std::string_view data);

}  // namespace trainwatch::util
