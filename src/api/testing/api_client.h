#pragma once
// Builds AWS requests for tests, the way botocore does (query form bodies or
// AWS JSON with X-Amz-Target).

#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "api/http.h"

namespace trainwatch::api::testing {

inline HttpRequest QueryRequest(std::string_view action, std::string_view params) {
  HttpRequest r;
  r.headers.Add("Host", "127.0.0.1:9400");
  r.headers.Add("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
  r.body = absl::StrFormat("Action=%s&Version=2010-08-01%s%s", action, params.empty() ? "" : "&",
                           params);
  return r;
}

// CloudWatch over AWS JSON 1.0.
inline HttpRequest CloudWatchJson(std::string_view operation, std::string_view body) {
  HttpRequest r;
  r.headers.Add("Host", "127.0.0.1:9400");
  r.headers.Add("X-Amz-Target", absl::StrFormat("GraniteServiceVersion20100801.%s", operation));
  r.headers.Add("Content-Type", "application/x-amz-json-1.0");
  r.headers.Add("x-amzn-query-mode", "true");
  r.body = std::string(body);
  return r;
}

inline HttpRequest LogsJson(std::string_view operation, std::string_view body) {
  HttpRequest r;
  r.headers.Add("Host", "127.0.0.1:9400");
  r.headers.Add("X-Amz-Target", absl::StrFormat("Logs_20140328.%s", operation));
  r.headers.Add("Content-Type", "application/x-amz-json-1.1");
  r.body = std::string(body);
  return r;
}

inline HttpRequest SageMakerJson(std::string_view operation, std::string_view body) {
  HttpRequest r;
  r.headers.Add("Host", "127.0.0.1:9400");
  r.headers.Add("X-Amz-Target", absl::StrFormat("SageMaker.%s", operation));
  r.headers.Add("Content-Type", "application/x-amz-json-1.1");
  r.body = std::string(body);
  return r;
}

}  // namespace trainwatch::api::testing
