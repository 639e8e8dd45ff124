#pragma once
// SigV4 signatures on the agent's requests (api/sigv4.h signs; this finds
// the credentials and the host the request goes to).
//
// Requests to a trainwatch server are signed for CloudWatch's signing name
// ("monitoring"), as the server's verifier and the Python client expect;
// requests to an S3-compatible archive (agent/s3_store.h) for "s3".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/sigv4.h"

namespace trainwatch::agent {

struct Signing {
  std::optional<api::sigv4::Credential> credential;  // unsigned requests without one
  std::string region;
};

// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) of the
// environment, in AWS_REGION or AWS_DEFAULT_REGION (us-east-1 without
// either), read once.
const Signing& EnvironmentSigning();

// The header lines ("Name: value") that sign a request to `url` (X-Amz-Date,
// Authorization and the session token; X-Amz-Content-SHA256 too when
// `content_sha256` is set: S3 wants it, signed); none without a credential.
// The request is signed with the Host curl sends (HOST[:PORT], without the
// scheme's default port) and the given Content-Type.
std::vector<std::string> SigningHeaderLines(const Signing& signing, std::string_view service,
                                            const std::string& method, const std::string& url,
                                            std::string_view body, std::string_view content_type,
                                            bool content_sha256 = false);

}  // namespace trainwatch::agent
