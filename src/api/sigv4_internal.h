#pragma once
// What sigv4.cc (signing, credentials) and sigv4_verify.cc share; not part
// of the API.

#include <string_view>

namespace trainwatch::api::sigv4::internal {

inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace trainwatch::api::sigv4::internal
