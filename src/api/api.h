#pragma once
// Api: the AWS-compatible endpoint as one pure function, HttpRequest ->
// HttpResponse (start here). It routes (spec/aws-api.md §1.3), enforces the
// size limits, verifies SigV4 when credentials are configured, decompresses
// gzip bodies, decodes the query or JSON body, runs the CloudWatch, Logs or
// SageMaker operation against the Backends and encodes the answer or the
// error in the request's protocol. Every response carries x-amzn-RequestId.
//
// Thread-safe: Handle may run concurrently (the backends must be thread-safe).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "api/backend.h"
#include "api/errors.h"
#include "api/http.h"
#include "api/sigv4.h"
#include "util/clock.h"

namespace trainwatch::api {

struct ApiOptions {
  std::string region = "us-east-1";
  std::string account_id = "000000000000";
  // When set, every request must carry a valid Signature V4 of one of these
  // credentials (spec §3); when null, any Authorization header is accepted.
  // Must outlive the Api.
  const sigv4::CredentialStore* credentials = nullptr;
  sigv4::VerifyOptions verify;
  // Request bodies as received (spec §2.1) and after gunzip.
  size_t max_body_bytes = 1048576;
  size_t max_decompressed_bytes = 8 * 1048576;
  // Makes the x-amzn-RequestId of each response (tests fix it).
  std::function<std::string()> request_id = NewRequestId;
};

class Api {
 public:
  // `clock` must outlive the Api.
  Api(ApiOptions options, Backends backends, const util::Clock& clock);

  // Always a complete response (success or the protocol's error shape).
  HttpResponse Handle(const HttpRequest& request) const;

  // The 413 RequestEntityTooLarge answer for a request whose body the server
  // refused to read (only method, target and headers are looked at).
  HttpResponse TooLarge(const HttpRequest& headers_only, size_t limit_bytes) const;

  // For trainwatch's own routes (server::Router: /api/v1/, /metrics, the
  // dashboard): nullopt when the server has no credentials (--auth) or the
  // request authenticates (sigv4::VerifyOwnRoute); otherwise the 401 to
  // send, in the native API's error shape, with a Basic challenge so that a
  // browser asks for a key and its secret.
  std::optional<HttpResponse> RefuseOwnRoute(const HttpRequest& request) const;

  const ApiOptions& options() const { return options_; }

 private:
  HttpResponse Dispatch(const HttpRequest& request, Service service, Protocol protocol,
                        std::string operation, const std::string& request_id) const;

  ApiOptions options_;
  Backends backends_;
  const util::Clock& clock_;
};

// Deepest nesting of JSON arrays/objects in `text` (strings skipped), or
// `limit + 1` as soon as it exceeds `limit`. Bounds recursion before parsing.
size_t JsonNestingDepth(std::string_view text, size_t limit);

}  // namespace trainwatch::api
