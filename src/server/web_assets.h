#pragma once
// The dashboard's files (web/ and the pinned uPlot from npm), built into the
// binary by cmake/embed_web.cmake: `GET /` and `GET /ui/<path>` serve them
// (server/router.cc), so the dashboard works offline, with no other request.

#include <cstddef>
#include <span>
#include <string_view>

namespace trainwatch::server {

struct WebAsset {
  std::string_view path;          // under /ui/, e.g. "app.js", "vendor/uPlot.esm.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // quoted: a hash of the content
  const unsigned char* data;
  size_t size;

  std::string_view bytes() const { return {reinterpret_cast<const char*>(data), size}; }
};

// Every asset, ordered by path.
std::span<const WebAsset> WebAssets();

// The asset at `path` (relative to /ui/), or nullptr.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace trainwatch::server
