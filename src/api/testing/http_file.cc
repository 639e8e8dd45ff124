#include "api/testing/http_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"

namespace trainwatch::api::testing {
namespace {

// Splits the head into lines and fills `headers`; returns the first line.
absl::StatusOr<std::string> ParseHead(std::string_view bytes, Headers* headers,
                                      std::string* body) {
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return absl::InvalidArgumentError("no blank line after head");
  std::string_view head = bytes.substr(0, end);
  *body = std::string(bytes.substr(end + 4));
  size_t line_end = head.find("\r\n");
  std::string first(head.substr(0, line_end));
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string_view line = head.substr(start, line_end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : line_end - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat("bad header line \"%s\"", std::string(line)));
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers->Add(std::string(line.substr(0, colon)), std::string(value));
  }
  return first;
}

}  // namespace

absl::StatusOr<HttpRequest> ParseRawRequest(std::string_view bytes) {
  HttpRequest request;
  absl::StatusOr<std::string> first = ParseHead(bytes, &request.headers, &request.body);
  if (!first.ok()) return first.status();
  size_t sp1 = first->find(' ');
  size_t sp2 = first->rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) {
    return absl::InvalidArgumentError(absl::StrFormat("bad request line \"%s\"", *first));
  }
  request.method = first->substr(0, sp1);
  request.target = first->substr(sp1 + 1, sp2 - sp1 - 1);
  return request;
}

absl::StatusOr<HttpResponse> ParseRawResponse(std::string_view bytes) {
  HttpResponse response;
  absl::StatusOr<std::string> first = ParseHead(bytes, &response.headers, &response.body);
  if (!first.ok()) return first.status();
  if (first->size() < 12 || first->substr(0, 9) != "HTTP/1.1 ") {
    return absl::InvalidArgumentError(absl::StrFormat("bad status line \"%s\"", *first));
  }
  response.status = std::stoi(first->substr(9, 3));
  return response;
}

std::string FormatResponse(const HttpResponse& response) {
  std::string out = absl::StrFormat("HTTP/1.1 %d %s\r\n", response.status,
                                    StatusReason(response.status));
  for (const auto& [name, value] : response.headers.entries()) {
    out += absl::StrFormat("%s: %s\r\n", name, value);
  }
  out += absl::StrFormat("Content-Length: %d\r\n\r\n", response.body.size());
  out += response.body;
  return out;
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot read %s", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace trainwatch::api::testing
