#pragma once
// Timestamps as the wire shows them.

#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"

namespace trainwatch::api {

// "2025-01-15T12:00:00.000Z": ISO 8601 UTC, always with milliseconds (query XML).
std::string FormatIsoMillis(int64_t t_ms);

// Epoch seconds as a JSON number, fraction kept (1736942400.25) (AWS JSON timestamps).
inline nlohmann::ordered_json EpochSeconds(int64_t t_ms) {
  return static_cast<double>(t_ms) / 1000.0;
}

// JSON dump that never throws: invalid UTF-8 becomes U+FFFD.
inline std::string DumpJson(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace trainwatch::api
