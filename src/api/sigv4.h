#pragma once
// AWS Signature Version 4 verification (spec/aws-api.md §3): the canonical
// request, the string to sign, the signing key, and the checks in the
// spec's order, with AWS's error codes and texts. Presigned URLs and
// STREAMING-* payloads are not supported (no client of these services sends them).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/errors.h"
#include "api/http.h"

namespace trainwatch::api::sigv4 {

struct Credential {
  std::string access_key_id;
  std::string secret_access_key;
  // When set, requests must carry this X-Amz-Security-Token, signed.
  std::string session_token;
};

// access key id -> credential. Immutable once built; shareable.
class CredentialStore {
 public:
  // InvalidArgument if the key id is already present or a field is empty.
  absl::Status Add(Credential credential);
  const Credential* Find(std::string_view access_key_id) const;
  size_t size() const { return by_key_.size(); }

 private:
  std::map<std::string, Credential, std::less<>> by_key_;
};

// The auth file (docs/api.md, "Authentication"): one credential per line,
//   <access-key-id> <secret-access-key> [<session-token>]
// separated by spaces or tabs; blank lines and lines starting with '#' are
// ignored. InvalidArgument naming `source` and the line for anything else.
absl::StatusOr<CredentialStore> ParseAuthFile(std::string_view text, std::string_view source);
// Reads and parses the file at `path`; NotFound / PermissionDenied if unreadable.
absl::StatusOr<CredentialStore> LoadAuthFile(const std::string& path);

// The parts of "Authorization: AWS4-HMAC-SHA256 Credential=AKID/20261130/
// us-east-1/monitoring/aws4_request, SignedHeaders=a;b, Signature=<64 hex>".
struct Authorization {
  std::string access_key_id;
  std::string date;     // yyyymmdd
  std::string region;
  std::string service;  // signing name
  std::string signed_headers;  // as received: "content-type;host;x-amz-date"
  std::vector<std::string> signed_header_names;
  std::string signature;  // 64 lower-case hex digits

  std::string Scope() const;  // date/region/service/aws4_request
};

// IncompleteSignature (AwsStatus) describing what is missing or malformed.
absl::StatusOr<Authorization> ParseAuthorization(std::string_view header);

// The canonical request of §3.2 for `request`, signing `signed_header_names`.
// `payload_hash` is the hex SHA-256 of the body as received (or the value of
// X-Amz-Content-SHA256).
std::string CanonicalRequest(const HttpRequest& request,
                             const std::vector<std::string>& signed_header_names,
                             std::string_view signed_headers, std::string_view payload_hash);
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
// hex(HMAC(kSigning, string_to_sign)) with kSigning derived from the secret.
std::string Sign(std::string_view secret, std::string_view date, std::string_view region,
                 std::string_view service, std::string_view string_to_sign);

std::string HexSha256(std::string_view data);

struct VerifyOptions {
  // Allowed difference between X-Amz-Date and now; <= 0 turns the check off
  // (replaying recorded requests).
  int64_t max_skew_ms = 15 * 60 * 1000;
  // When not empty, the credential scope's region must equal it.
  std::string region;
};

// Checks `request` in the order of §3.4 and returns OK or an AwsStatus with
// the query-protocol auth code (MissingAuthenticationToken,
// IncompleteSignature, InvalidClientTokenId, SignatureDoesNotMatch) and AWS's
// text; `protocol` picks the wording where the protocols differ.
absl::Status Verify(const HttpRequest& request, Service service, Protocol protocol,
                    const CredentialStore& credentials, int64_t now_ms,
                    const VerifyOptions& options);

// trainwatch's own routes under --auth (/api/v1/, /metrics, the dashboard;
// docs/api.md, "Authentication"): OK for a SigV4 signature checked as Verify
// does, scoped to CloudWatch's signing name "monitoring" (as trainwatch's
// agent and Python client sign), or for HTTP Basic credentials made of an
// access key id and its secret (browsers, Prometheus's basic_auth, curl -u);
// a key with a session token must sign. Otherwise Unauthenticated, saying
// what was wrong and how to authenticate; PermissionDenied for a request
// other than GET or HEAD with Basic credentials that a page of another site
// made (Sec-Fetch-Site, else Origin against Host).
absl::Status VerifyOwnRoute(const HttpRequest& request, const CredentialStore& credentials,
                            int64_t now_ms, const VerifyOptions& options);

// Signs `request` in place (adds X-Amz-Date, Authorization and, with a
// session token, X-Amz-Security-Token) as botocore would, signing
// content-type, host, x-amz-date, x-amz-target (when present) and the token;
// with an X-Amz-Content-SHA256 header (S3's), that header too, and its value
// as the payload hash. For tests and trainwatch's own HTTP clients.
void SignRequest(HttpRequest* request, const Credential& credential, std::string_view region,
                 std::string_view service, int64_t now_ms);

// 20261130T095531Z
std::string FormatAmzDate(int64_t t_ms);
// Unix ms of "20261130T095531Z", or -1 if malformed.
int64_t ParseAmzDate(std::string_view text);

}  // namespace trainwatch::api::sigv4
