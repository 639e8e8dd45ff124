// SigV4 verification: the Authorization header and the checks of Verify,
// in spec/aws-api.md §3.4's order. Signing and credentials: sigv4.cc.
#include "api/sigv4.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "api/sigv4_internal.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

namespace trainwatch::api::sigv4 {
namespace {

using internal::IsSpace;
using internal::kAlgorithm;
using internal::Trim;

constexpr std::string_view kSignatureMismatch =
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.";
constexpr std::string_view kInvalidToken = "The security token included in the request is invalid.";

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool IsLowerHex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "Mon, 30 Nov 2026 09:55:31 GMT" (RFC 1123, the Date header) -> Unix ms, or -1.
int64_t ParseHttpDate(std::string_view s) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  size_t comma = s.find(", ");
  if (comma == std::string_view::npos) return -1;
  s.remove_prefix(comma + 2);
  if (s.size() != 24 || s.substr(20) != " GMT") return -1;
  int day = 0, year = 0, h = 0, m = 0, sec = 0;
  auto num = [&](size_t pos, size_t n, int* out) {
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  if (!num(0, 2, &day) || s[2] != ' ' || s[6] != ' ' || !num(7, 4, &year) || s[11] != ' ' ||
      !num(12, 2, &h) || s[14] != ':' || !num(15, 2, &m) || s[17] != ':' || !num(18, 2, &sec)) {
    return -1;
  }
  unsigned month = 0;
  for (unsigned i = 0; i < 12; ++i) {
    if (s.substr(3, 3) == kMonths[i]) month = i + 1;
  }
  if (month == 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60) return -1;
  return (util::DaysFromCivil(year, month, static_cast<unsigned>(day)) * 86400 + h * 3600 +
          m * 60 + sec) *
         1000;
}

absl::Status Incomplete(std::string_view message) {
  return AwsStatus("IncompleteSignature", message);
}

}  // namespace

std::string Authorization::Scope() const {
  return absl::StrFormat("%s/%s/%s/aws4_request", date, region, service);
}

absl::StatusOr<Authorization> ParseAuthorization(std::string_view header) {
  header = Trim(header);
  size_t space = header.find(' ');
  std::string_view algorithm = header.substr(0, space);
  if (algorithm != kAlgorithm) {
    return Incomplete(absl::StrFormat(
        "Authorization header: unsupported algorithm %s; trainwatch verifies AWS4-HMAC-SHA256 "
        "signatures.",
        std::string(algorithm.substr(0, 64))));
  }
  std::string_view rest = space == std::string_view::npos ? "" : header.substr(space + 1);
  std::string credential, signed_headers, signature;
  bool seen_credential = false, seen_signed = false, seen_signature = false;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string_view::npos) comma = rest.size();
    std::string_view part = Trim(rest.substr(start, comma - start));
    start = comma + 1;
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return Incomplete(absl::StrFormat(
          "Authorization header: \"%s\" is not a key=value pair.",
          std::string(part.substr(0, 64))));
    }
    std::string_view key = part.substr(0, eq);
    std::string value(part.substr(eq + 1));
    if (key == "Credential" && !seen_credential) {
      credential = std::move(value);
      seen_credential = true;
    } else if (key == "SignedHeaders" && !seen_signed) {
      signed_headers = std::move(value);
      seen_signed = true;
    } else if (key == "Signature" && !seen_signature) {
      signature = std::move(value);
      seen_signature = true;
    } else {
      return Incomplete(absl::StrFormat("Authorization header: unexpected or repeated part \"%s\".",
                                        std::string(key.substr(0, 64))));
    }
  }
  std::string missing;
  if (!seen_credential) missing += " Authorization header requires 'Credential' parameter.";
  if (!seen_signed) missing += " Authorization header requires 'SignedHeaders' parameter.";
  if (!seen_signature) missing += " Authorization header requires 'Signature' parameter.";
  if (!missing.empty()) return Incomplete(missing.substr(1));

  Authorization auth;
  std::vector<std::string> scope;
  size_t s = 0;
  while (true) {
    size_t slash = credential.find('/', s);
    scope.push_back(credential.substr(s, slash == std::string::npos ? std::string::npos : slash - s));
    if (slash == std::string::npos) break;
    s = slash + 1;
  }
  if (scope.size() != 5 || scope[4] != "aws4_request" || scope[0].empty() ||
      scope[1].size() != 8 || scope[2].empty() || scope[3].empty() ||
      !std::all_of(scope[1].begin(), scope[1].end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Incomplete(absl::StrFormat(
        "Authorization header: Credential \"%s\" is not "
        "<access-key-id>/<yyyymmdd>/<region>/<service>/aws4_request.",
        credential.substr(0, 200)));
  }
  auth.access_key_id = scope[0];
  auth.date = scope[1];
  auth.region = scope[2];
  auth.service = scope[3];
  auth.signed_headers = signed_headers;
  size_t h = 0;
  while (h <= signed_headers.size()) {
    size_t semi = signed_headers.find(';', h);
    if (semi == std::string::npos) semi = signed_headers.size();
    std::string name = signed_headers.substr(h, semi - h);
    h = semi + 1;
    if (name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
          return (c >= 'A' && c <= 'Z') || IsSpace(c) || c == ':';
        })) {
      return Incomplete(absl::StrFormat(
          "Authorization header: SignedHeaders \"%s\" must be lower-case header names "
          "separated by ';'.",
          signed_headers.substr(0, 200)));
    }
    auth.signed_header_names.push_back(std::move(name));
  }
  if (!IsLowerHex(signature, 64)) {
    return Incomplete("Authorization header: Signature must be 64 lower-case hex digits.");
  }
  auth.signature = signature;
  return auth;
}

absl::Status Verify(const HttpRequest& request, Service service, Protocol protocol,
                    const CredentialStore& credentials, int64_t now_ms,
                    const VerifyOptions& options) {
  // 1. Present and well formed.
  const std::string* header = request.headers.Find("Authorization");
  if (header == nullptr) {
    return AwsStatus("MissingAuthenticationToken", protocol == Protocol::kQuery
                                                       ? "Request is missing Authentication Token"
                                                       : "Missing Authentication Token");
  }
  TW_ASSIGN_OR_RETURN(Authorization auth, ParseAuthorization(*header));

  // 2. Known access key.
  const Credential* credential = credentials.Find(auth.access_key_id);
  if (credential == nullptr) return AwsStatus("InvalidClientTokenId", kInvalidToken);

  // 3. Session token.
  const std::string* token = request.headers.Find("X-Amz-Security-Token");
  if (!credential->session_token.empty()) {
    bool signed_token = std::find(auth.signed_header_names.begin(), auth.signed_header_names.end(),
                                  "x-amz-security-token") != auth.signed_header_names.end();
    if (token == nullptr || !signed_token ||
        !ConstantTimeEquals(*token, credential->session_token)) {
      return AwsStatus("InvalidClientTokenId", kInvalidToken);
    }
  }

  // 4. Request time: within the skew window, and on the credential's date.
  const std::string* amz_date = request.headers.Find("X-Amz-Date");
  std::string request_time;
  int64_t request_ms;
  if (amz_date != nullptr) {
    request_time = *amz_date;
    request_ms = ParseAmzDate(request_time);
    if (request_ms < 0) {
      return Incomplete(absl::StrFormat(
          "X-Amz-Date \"%s\" must be in ISO-8601 basic format, e.g. 20261130T095531Z.",
          request_time.substr(0, 64)));
    }
  } else if (const std::string* date = request.headers.Find("Date")) {
    request_ms = ParseHttpDate(*date);
    if (request_ms < 0) {
      return Incomplete(absl::StrFormat(
          "Date header \"%s\" is not an RFC 1123 date; send X-Amz-Date instead.",
          date->substr(0, 64)));
    }
    request_time = FormatAmzDate(request_ms);
  } else {
    return Incomplete(
        "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
  }
  if (options.max_skew_ms > 0) {
    if (request_ms < now_ms - options.max_skew_ms) {
      return AwsStatus("SignatureDoesNotMatch",
                       absl::StrFormat("Signature expired: %s is now earlier than %s (%s - 15 min.)",
                                       request_time, FormatAmzDate(now_ms - options.max_skew_ms),
                                       FormatAmzDate(now_ms)));
    }
    if (request_ms > now_ms + options.max_skew_ms) {
      return AwsStatus(
          "SignatureDoesNotMatch",
          absl::StrFormat("Signature not yet current: %s is still later than %s (%s + 15 min.)",
                          request_time, FormatAmzDate(now_ms + options.max_skew_ms),
                          FormatAmzDate(now_ms)));
    }
  }
  if (request_time.substr(0, 8) != auth.date) {
    return AwsStatus("SignatureDoesNotMatch",
                     "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of "
                     "date from HTTP");
  }

  // 5. Scope: the routed service (and the configured region, if any).
  if (auth.service != SigningName(service)) {
    return AwsStatus("SignatureDoesNotMatch",
                     absl::StrFormat("Credential should be scoped to correct service: '%s'.",
                                     SigningName(service)));
  }
  if (!options.region.empty() && auth.region != options.region) {
    return AwsStatus("SignatureDoesNotMatch",
                     absl::StrFormat("Credential should be scoped to a valid region, not '%s'; "
                                     "this server serves '%s'.",
                                     auth.region.substr(0, 64), options.region));
  }

  // 6. Headers that must be signed.
  auto is_signed = [&](std::string_view name) {
    return std::find(auth.signed_header_names.begin(), auth.signed_header_names.end(), name) !=
           auth.signed_header_names.end();
  };
  if (!is_signed("host")) {
    return Incomplete("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  }
  if (amz_date != nullptr && !is_signed("x-amz-date")) {
    return Incomplete("'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.");
  }
  if (token != nullptr && !is_signed("x-amz-security-token")) {
    return Incomplete(
        "'X-Amz-Security-Token' must be a 'SignedHeader' in the AWS Authorization.");
  }

  // 7. The signature.
  std::string payload_hash = HexSha256(request.body);
  if (const std::string* declared = request.headers.Find("X-Amz-Content-SHA256")) {
    if (!IsLowerHex(*declared, 64)) {
      return Incomplete(absl::StrFormat(
          "X-Amz-Content-SHA256 \"%s\" is not supported; send the hex SHA-256 of the body or "
          "leave the header out.",
          declared->substr(0, 64)));
    }
    if (*declared != payload_hash) {
      return AwsStatus("SignatureDoesNotMatch",
                       "The provided 'x-amz-content-sha256' header does not match what was "
                       "computed.");
    }
  }
  std::string canonical =
      CanonicalRequest(request, auth.signed_header_names, auth.signed_headers, payload_hash);
  std::string expected = Sign(credential->secret_access_key, auth.date, auth.region, auth.service,
                              StringToSign(request_time, auth.Scope(), canonical));
  if (!ConstantTimeEquals(expected, auth.signature)) {
    return AwsStatus("SignatureDoesNotMatch", kSignatureMismatch);
  }
  return absl::OkStatus();
}

absl::Status VerifyOwnRoute(const HttpRequest& request, const CredentialStore& credentials,
                            int64_t now_ms, const VerifyOptions& options) {
  constexpr std::string_view kHow =
      "send HTTP Basic credentials (an access key id and its secret from the server's --auth "
      "file, e.g. curl -u KEY:SECRET) or sign the request with SigV4 for service \"monitoring\" "
      "(trainwatch's agent and Python client do, given AWS_ACCESS_KEY_ID and "
      "AWS_SECRET_ACCESS_KEY)";
  const std::string* header = request.headers.Find("Authorization");
  if (header == nullptr) {
    return absl::UnauthenticatedError(
        absl::StrFormat("this server requires authentication (--auth): %s", kHow));
  }
  std::string_view value = Trim(*header);
  // (This absl's string_view is not std's.)
  auto absl_view = [](std::string_view v) { return absl::string_view(v.data(), v.size()); };
  if (value.size() > 6 && absl::EqualsIgnoreCase(absl_view(value.substr(0, 6)), "basic ")) {
    std::string decoded;
    const size_t colon = absl::Base64Unescape(absl_view(Trim(value.substr(6))), &decoded)
                             ? decoded.find(':')
                             : std::string::npos;
    if (colon == std::string::npos) {
      return absl::UnauthenticatedError(absl::StrFormat(
          "the Basic credentials are not base64 of KEY:SECRET; %s", kHow));
    }
    const std::string_view key = std::string_view(decoded).substr(0, colon);
    const Credential* credential = credentials.Find(key);
    // The same answer, and about the same time, for an unknown key and a
    // wrong secret; digests compared, so that the time does not tell the
    // secret's length either.
    const bool secret_matches = ConstantTimeEquals(
        HexSha256(std::string_view(decoded).substr(colon + 1)),
        HexSha256(credential != nullptr ? credential->secret_access_key : std::string_view()));
    if (credential == nullptr || !secret_matches) {
      return absl::UnauthenticatedError(absl::StrFormat(
          "access key id \"%s\" and that secret are not a pair of the server's --auth file",
          key.substr(0, 128)));
    }
    if (!credential->session_token.empty()) {
      return absl::UnauthenticatedError(absl::StrFormat(
          "access key id \"%s\" has a session token, which Basic credentials cannot carry: sign "
          "the request with SigV4 (with X-Amz-Security-Token), or use a key without one",
          key.substr(0, 128)));
    }
    // A browser sends the Basic credentials it keeps with requests that other
    // sites' pages make (a form posted to /api/v1/jobs/NAME/stop): a request
    // that changes something is taken only from the server's own pages, or
    // from a client that is no browser (no Origin, no Sec-Fetch-Site).
    if (request.method != "GET" && request.method != "HEAD" && FromAnotherSite(request)) {
      const std::string* origin = request.headers.Find("Origin");
      return absl::PermissionDeniedError(absl::StrFormat(
          "a %s from another site's page (Origin %s) is refused with Basic credentials: send "
          "it from this server's dashboard, or sign it with SigV4",
          request.method, origin != nullptr ? origin->substr(0, 200) : "unknown"));
    }
    return absl::OkStatus();
  }
  absl::Status verified =
      Verify(request, Service::kCloudWatch, Protocol::kJson10, credentials, now_ms, options);
  if (verified.ok()) return verified;
  return absl::UnauthenticatedError(
      absl::StrFormat("the request's signature was refused (%s); %s", MessageOf(verified), kHow));
}

}  // namespace trainwatch::api::sigv4
