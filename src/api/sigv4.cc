// SigV4 signing (the canonical request, the string to sign, the signing key),
// X-Amz-Date, credentials and the auth file. Verification: sigv4_verify.cc.
#include "api/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "api/sigv4_internal.h"
#include "util/time_parse.h"

namespace trainwatch::api::sigv4 {
namespace {

using internal::IsSpace;
using internal::kAlgorithm;
using internal::Trim;

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

void SignRequest(HttpRequest* request, const Credential& credential, std::string_view region,
                 std::string_view service, int64_t now_ms) {
  std::string amz_date = FormatAmzDate(now_ms);
  request->headers.Set("X-Amz-Date", amz_date);
  if (!credential.session_token.empty()) {
    request->headers.Set("X-Amz-Security-Token", credential.session_token);
  }
  std::vector<std::string> names;
  for (std::string_view name : {"content-encoding", "content-type", "host", "x-amz-content-sha256",
                                "x-amz-date", "x-amz-security-token", "x-amz-target"}) {
    if (request->headers.Has(name)) names.emplace_back(name);
  }
  std::string signed_headers;
  for (const std::string& n : names) {
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += n;
  }
  std::string date = amz_date.substr(0, 8);
  std::string scope = absl::StrFormat("%s/%s/%s/aws4_request", date, region, service);
  const std::string* content_sha256 = request->headers.Find("X-Amz-Content-SHA256");
  std::string canonical =
      CanonicalRequest(*request, names, signed_headers,
                       content_sha256 != nullptr ? *content_sha256 : HexSha256(request->body));
  std::string signature = Sign(credential.secret_access_key, date, region, service,
                               StringToSign(amz_date, scope, canonical));
  request->headers.Set("Authorization",
                       absl::StrFormat("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                                       kAlgorithm, credential.access_key_id, scope, signed_headers,
                                       signature));
}

}  // namespace trainwatch::api::sigv4
