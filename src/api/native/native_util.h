#pragma once
// Helpers shared by the NativeApi's files (not part of its interface).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/backend.h"
#include "api/http.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api::native_internal {

using Json = nlohmann::ordered_json;
using Params = std::vector<std::pair<std::string, std::string>>;

HttpResponse Reply(int status, const Json& body);
// {"error": {"code": code, "message": message}}
HttpResponse Error(int status, std::string_view code, std::string_view message);
// Backend/validation status -> 400/404/409/413/501/503/500.
HttpResponse FromStatus(const absl::Status& s);
HttpResponse NoBackend(std::string_view what);
HttpResponse MethodNotAllowed(std::string_view allowed);
const std::string* Param(const Params& params, std::string_view name);
std::vector<std::string> ParamAll(const Params& params, std::string_view name);
// A time as users type it (now-1h, ISO 8601, epoch seconds); `fallback` when absent.
absl::StatusOr<int64_t> TimeParam(const Params& params, std::string_view name, int64_t now_ms,
                                  std::optional<int64_t> fallback);
absl::StatusOr<int64_t> IntParam(const Params& params, std::string_view name, int64_t fallback,
                                 int64_t min, int64_t max);
// "dimension=Name=Value" (exact) or "dimension=Name" (any value), repeatable.
std::vector<DimensionFilter> DimensionParams(const Params& params);
Json DimensionsJson(const std::vector<model::Dimension>& dims);
Json JobJson(const model::JobRecord& job);

}  // namespace trainwatch::api::native_internal
