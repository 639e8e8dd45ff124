#include "api/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

namespace trainwatch::api::sigv4 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kSignatureMismatch =
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.";
constexpr std::string_view kInvalidToken = "The security token included in the request is invalid.";

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python's " ".join(value.split()): trims and collapses runs of whitespace.
std::string CollapseSpaces(std::string_view value) {
  std::string out;
  bool pending = false;
  for (char c : value) {
    if (IsSpace(c)) {
      pending = !out.empty();
    } else {
      if (pending) out.push_back(' ');
      pending = false;
      out.push_back(c);
    }
  }
  return out;
}

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == '.' || c == '~';
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's urllib.parse.unquote: %XX decoded, invalid escapes kept, '+' kept.
std::string Unquote(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string CanonicalUri(std::string_view path) {
  if (path.empty()) path = "/";
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view seg =
        path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (seg != ".") {
      segments.push_back(seg);
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  std::string normalized;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) normalized.push_back('/');
    normalized.append(segments[i]);
  }
  if (normalized.empty()) normalized = "/";
  if (normalized[0] != '/') normalized.insert(normalized.begin(), '/');
  return UriEncode(normalized, /*keep_slash=*/true);
}

std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view item = query.substr(start, amp - start);
    start = amp + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view k = item.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    pairs.emplace_back(UriEncode(Unquote(k), false), UriEncode(Unquote(v), false));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out.push_back('&');
    out += k + "=" + v;
  }
  return out;
}

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

std::string HexSha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return Hex(out, len);
}

std::string FormatAmzDate(int64_t t_ms) {
  std::string iso = util::FormatIso8601Ms(t_ms - (t_ms % 1000 + 1000) % 1000);
  // "2026-11-30T09:55:31Z" -> "20261130T095531Z"
  std::string out;
  for (char c : iso) {
    if (c != '-' && c != ':') out.push_back(c);
  }
  return out;
}

int64_t ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return -1;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (s[i] < '0' || s[i] > '9')) return -1;
  }
  auto n = [&](size_t pos, size_t len) {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  int year = n(0, 4), month = n(4, 2), day = n(6, 2), h = n(9, 2), m = n(11, 2), sec = n(13, 2);
  if (month < 1 || month > 12 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60) return -1;
  return (util::DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) *
              86400 +
          h * 3600 + m * 60 + sec) *
         1000;
}

absl::Status CredentialStore::Add(Credential credential) {
  if (credential.access_key_id.empty() || credential.secret_access_key.empty()) {
    return absl::InvalidArgumentError("a credential needs an access key id and a secret");
  }
  std::string key = credential.access_key_id;
  if (!by_key_.emplace(key, std::move(credential)).second) {
    return absl::InvalidArgumentError(
        absl::StrFormat("access key id \"%s\" is listed twice", key));
  }
  return absl::OkStatus();
}

const Credential* CredentialStore::Find(std::string_view access_key_id) const {
  auto it = by_key_.find(access_key_id);
  return it == by_key_.end() ? nullptr : &it->second;
}

absl::StatusOr<CredentialStore> ParseAuthFile(std::string_view text, std::string_view source) {
  CredentialStore store;
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (j > i) fields.emplace_back(line.substr(i, j - i));
      i = j;
    }
    if (fields.size() < 2 || fields.size() > 3) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: expected \"<access-key-id> <secret-access-key> [<session-token>]\", got %d "
          "field(s)",
          source, line_no, fields.size()));
    }
    Credential c{fields[0], fields[1], fields.size() == 3 ? fields[2] : ""};
    absl::Status added = store.Add(std::move(c));
    if (!added.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: %s", source, line_no, added.message()));
    }
  }
  if (store.size() == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: no credentials; add a line \"<access-key-id> <secret-access-key>\"", source));
  }
  return store;
}

absl::StatusOr<CredentialStore> LoadAuthFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrFormat("cannot read the auth file \"%s\": %s", path, std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseAuthFile(buffer.str(), path);
}

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

std::string CanonicalRequest(const HttpRequest& request,
                             const std::vector<std::string>& signed_header_names,
                             std::string_view signed_headers, std::string_view payload_hash) {
  std::string out;
  out.reserve(512);
  out.append(request.method);
  out.push_back('\n');
  out.append(CanonicalUri(request.Path()));
  out.push_back('\n');
  out.append(CanonicalQuery(request.Query()));
  out.push_back('\n');
  for (const std::string& name : signed_header_names) {
    out.append(name);
    out.push_back(':');
    bool first = true;
    for (std::string_view value : request.headers.FindAll(name)) {
      if (!first) out.push_back(',');
      first = false;
      out.append(CollapseSpaces(value));
    }
    out.push_back('\n');
  }
  out.push_back('\n');
  out.append(signed_headers);
  out.push_back('\n');
  out.append(payload_hash);
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return absl::StrFormat("%s\n%s\n%s\n%s", kAlgorithm, amz_date, scope,
                         HexSha256(canonical_request));
}

std::string Sign(std::string_view secret, std::string_view date, std::string_view region,
                 std::string_view service, std::string_view string_to_sign) {
  std::string key = Hmac(absl::StrFormat("AWS4%s", secret), date);
  key = Hmac(key, region);
  key = Hmac(key, service);
  key = Hmac(key, "aws4_request");
  std::string mac = Hmac(key, string_to_sign);
  return Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
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

void SignRequest(HttpRequest* request, const Credential& credential, std::string_view region,
                 std::string_view service, int64_t now_ms) {
  std::string amz_date = FormatAmzDate(now_ms);
  request->headers.Set("X-Amz-Date", amz_date);
  if (!credential.session_token.empty()) {
    request->headers.Set("X-Amz-Security-Token", credential.session_token);
  }
  std::vector<std::string> names;
  for (std::string_view name : {"content-encoding", "content-type", "host", "x-amz-date",
                                "x-amz-security-token", "x-amz-target"}) {
    if (request->headers.Has(name)) names.emplace_back(name);
  }
  std::string signed_headers;
  for (const std::string& n : names) {
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += n;
  }
  std::string date = amz_date.substr(0, 8);
  std::string scope = absl::StrFormat("%s/%s/%s/aws4_request", date, region, service);
  std::string canonical =
      CanonicalRequest(*request, names, signed_headers, HexSha256(request->body));
  std::string signature = Sign(credential.secret_access_key, date, region, service,
                               StringToSign(amz_date, scope, canonical));
  request->headers.Set("Authorization",
                       absl::StrFormat("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                                       kAlgorithm, credential.access_key_id, scope, signed_headers,
                                       signature));
}

}  // namespace trainwatch::api::sigv4
