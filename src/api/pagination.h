#pragma once
// Pagination tokens (spec/aws-api.md §2.5): opaque to clients, base64url of a
// small versioned JSON cursor chosen by each operation. Stateless, so they
// stay valid across restarts.

#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace trainwatch::api {

// base64url(JSON of `cursor` plus {"v": 1}).
std::string EncodeToken(nlohmann::json cursor);
// The cursor, or nullopt when `token` was not made by EncodeToken (or is
// longer than `max_chars`).
std::optional<nlohmann::json> DecodeToken(std::string_view token, size_t max_chars = 8192);

}  // namespace trainwatch::api
