#include "util/gzip.h"

#include <zlib.h>

#include "absl/strings/str_format.h"

namespace trainwatch::util {

absl::StatusOr<std::string> Gunzip(std::string_view compressed, size_t max_output_bytes) {
  std::string out;
  size_t consumed = 0;
  // Each iteration decodes one gzip member; clients send one, RFC 1952 allows several.
  do {
    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
      return absl::InternalError("zlib: inflateInit2 failed");
    }
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
    zs.avail_in = static_cast<uInt>(compressed.size() - consumed);
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (out.size() >= max_output_bytes) {
        inflateEnd(&zs);
        return absl::ResourceExhaustedError(absl::StrFormat(
            "The decompressed request body exceeds the limit of %d bytes.", max_output_bytes));
      }
      size_t chunk = std::min<size_t>(64 * 1024, max_output_bytes - out.size());
      size_t old = out.size();
      out.resize(old + chunk);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
      zs.avail_out = static_cast<uInt>(chunk);
      rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(old + (chunk - zs.avail_out));
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
        inflateEnd(&zs);
        return absl::InvalidArgumentError(
            "The request body is a truncated gzip stream (Content-Encoding: gzip).");
      }
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        std::string msg = zs.msg ? zs.msg : "corrupt data";
        inflateEnd(&zs);
        return absl::InvalidArgumentError(absl::StrFormat(
            "The request body is not valid gzip (Content-Encoding: gzip): %s.", msg));
      }
    }
    consumed = compressed.size() - zs.avail_in;
    inflateEnd(&zs);
  } while (consumed < compressed.size());
  return out;
}

std::string Gzip(std::string_view data) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace trainwatch::util
