#pragma once
// The query protocol's request body (application/x-www-form-urlencoded) and
// its structure (spec/aws-api.md §2.2): "Parent.Member=v", lists as
// "Name.member.N", maps as "Name.entry.N.key/value", "Name=" an empty list.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {

// Splits on '&' and the first '=', decoding "+" and "%XX" in names and values.
// InvalidArgument for a malformed escape.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeFormPairs(
    std::string_view body);

// The members as a tree: objects for structures and maps, arrays for
// "member.N" lists, strings at the leaves (query leaves are untyped; a key
// with an empty value stays "", which readers take as an empty list where a
// list is expected). InvalidArgument (naming the parameter) for a repeated
// parameter, list indices that are not 1, 2, 3... without gaps, a parameter
// that is both a value and a structure, or names nested deeper than 32 levels.
absl::StatusOr<nlohmann::json> DecodeForm(std::string_view body);

}  // namespace trainwatch::api
