#include "api/snappy_body.h"

#include <snappy.h>

#include "absl/strings/str_format.h"

namespace trainwatch::api {

absl::StatusOr<std::string> SnappyUncompress(std::string_view compressed, size_t max_output_bytes) {
  size_t length = 0;
  if (!snappy::GetUncompressedLength(compressed.data(), compressed.size(), &length)) {
    return absl::InvalidArgumentError(
        "The request body is not valid snappy (Content-Encoding: snappy, one block of the raw "
        "format): its length header is damaged.");
  }
  if (length > max_output_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "The decompressed request body (%d bytes, as its snappy header says) exceeds the limit "
        "of %d bytes.",
        length, max_output_bytes));
  }
  std::string out;
  // Uncompress checks the block as it goes and never writes past `length`.
  if (!snappy::Uncompress(compressed.data(), compressed.size(), &out)) {
    return absl::InvalidArgumentError(
        "The request body is not valid snappy (Content-Encoding: snappy, one block of the raw "
        "format): it is damaged or truncated.");
  }
  return out;
}

std::string SnappyCompress(std::string_view data) {
  std::string out;
  snappy::Compress(data.data(), data.size(), &out);
  return out;
}

}  // namespace trainwatch::api
