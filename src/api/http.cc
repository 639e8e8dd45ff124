#include "api/http.h"

#include <random>

#include "absl/strings/str_format.h"

namespace trainwatch::api {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

void Headers::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void Headers::Set(std::string_view name, std::string value) {
  Remove(name);
  entries_.emplace_back(std::string(name), std::move(value));
}

void Headers::Remove(std::string_view name) {
  std::erase_if(entries_, [&](const auto& e) { return EqualsIgnoreCase(e.first, name); });
}

const std::string* Headers::Find(std::string_view name) const {
  for (const auto& [n, v] : entries_) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

std::vector<std::string_view> Headers::FindAll(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : entries_) {
    if (EqualsIgnoreCase(n, name)) out.push_back(v);
  }
  return out;
}

bool FromAnotherSite(const HttpRequest& request) {
  if (const std::string* site = request.headers.Find("Sec-Fetch-Site")) {
    return *site != "same-origin" && *site != "none";  // none: the user's own navigation
  }
  const std::string* origin = request.headers.Find("Origin");
  if (origin == nullptr) return false;
  const std::string* host = request.headers.Find("Host");
  return host == nullptr || (*origin != "http://" + *host && *origin != "https://" + *host);
}

std::string_view HttpRequest::Path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view HttpRequest::Query() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  uint64_t hi = rng();
  uint64_t lo = rng();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", static_cast<uint32_t>(hi >> 32),
                         static_cast<uint32_t>((hi >> 16) & 0xffff),
                         static_cast<uint32_t>(hi & 0xffff), static_cast<uint32_t>(lo >> 48),
                         lo & 0xffffffffffffULL);
}

}  // namespace trainwatch::api
