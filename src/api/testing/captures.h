#pragma once
// The captured client requests copied into tests/captures (from
// spec/captures): names and parsed requests, for tests.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "api/http.h"
#include "api/testing/http_file.h"

namespace trainwatch::api::testing {

struct Capture {
  std::string name;  // "debcli/001-cw-PutMetricData"
  HttpRequest request;
  std::filesystem::path meta;  // its .meta.json
};

inline std::filesystem::path CapturesDir() {
  return std::filesystem::path(TW_SOURCE_DIR) / "tests" / "captures";
}

// Every *.request.http under tests/captures, sorted by name.
inline std::vector<Capture> LoadCaptures() {
  std::vector<Capture> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CapturesDir())) {
    std::string file = entry.path().filename().string();
    const std::string suffix = ".request.http";
    if (file.size() <= suffix.size() || file.substr(file.size() - suffix.size()) != suffix) continue;
    std::string stem = file.substr(0, file.size() - suffix.size());
    absl::StatusOr<std::string> bytes = ReadFileBytes(entry.path().string());
    if (!bytes.ok()) continue;
    absl::StatusOr<HttpRequest> request = ParseRawRequest(*bytes);
    if (!request.ok()) continue;
    out.push_back({entry.path().parent_path().filename().string() + "/" + stem, *request,
                   entry.path().parent_path() / (stem + ".meta.json")});
  }
  std::sort(out.begin(), out.end(), [](const Capture& a, const Capture& b) { return a.name < b.name; });
  return out;
}

}  // namespace trainwatch::api::testing
