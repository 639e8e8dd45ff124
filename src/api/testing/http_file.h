#pragma once
// Raw HTTP/1.1 messages as files (spec/captures/*.request.http and
// *.response.http, golden files): parsing and printing for tests.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/http.h"

namespace trainwatch::api::testing {

// "POST / HTTP/1.1\r\nHeader: v\r\n\r\nbody" -> HttpRequest (the body is
// everything after the blank line, bytes as they are).
absl::StatusOr<HttpRequest> ParseRawRequest(std::string_view bytes);
// "HTTP/1.1 200 OK\r\n..." -> HttpResponse.
absl::StatusOr<HttpResponse> ParseRawResponse(std::string_view bytes);

// The response as an HTTP/1.1 message with Content-Length, "\r\n" line ends
// (the golden-file form).
std::string FormatResponse(const HttpResponse& response);

// Reads a whole file; NotFound if it cannot.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace trainwatch::api::testing
