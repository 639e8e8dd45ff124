#include "api/pagination.h"

#include "absl/strings/escaping.h"

namespace trainwatch::api {

std::string EncodeToken(nlohmann::json cursor) {
  cursor["v"] = 1;
  std::string text = cursor.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return absl::WebSafeBase64Escape(text);
}

std::optional<nlohmann::json> DecodeToken(std::string_view token, size_t max_chars) {
  if (token.empty() || token.size() > max_chars) return std::nullopt;
  std::string text;
  if (!absl::WebSafeBase64Unescape(absl::string_view(token.data(), token.size()), &text)) {
    return std::nullopt;
  }
  nlohmann::json cursor = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (cursor.is_discarded() || !cursor.is_object()) return std::nullopt;
  auto v = cursor.find("v");
  if (v == cursor.end() || !v->is_number_integer() || v->get<int64_t>() != 1) return std::nullopt;
  return cursor;
}

}  // namespace trainwatch::api
