#include "agent/s3_store.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "agent/signing.h"
#include "util/status_macros.h"

namespace trainwatch::agent {
namespace {

constexpr int64_t kMinPartBytes = 5LL << 20;  // S3's least part but the last
constexpr int kMaxParts = 10000;               // S3's most parts of an upload
constexpr char kContentType[] = "application/octet-stream";
// Connections kept open between requests; one beyond is closed after its
// request (a burst of readers does not hold sockets for the process's life).
constexpr size_t kMaxIdleConnections = 4;

// The text of the first <tag>...</tag> in an S3 XML answer, unescaped; empty
// when absent.
std::string XmlText(std::string_view xml, std::string_view tag, size_t* from = nullptr) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  size_t start = xml.find(open, from == nullptr ? 0 : *from);
  if (start == std::string_view::npos) {
    if (from != nullptr) *from = std::string_view::npos;
    return "";
  }
  start += open.size();
  const size_t end = xml.find(close, start);
  if (end == std::string_view::npos) {
    if (from != nullptr) *from = std::string_view::npos;
    return "";
  }
  if (from != nullptr) *from = end + close.size();
  return absl::StrReplaceAll(std::string(xml.substr(start, end - start)), {{"&lt;", "<"},
                                                               {"&gt;", ">"},
                                                               {"&quot;", "\""},
                                                               {"&apos;", "'"},
                                                               {"&amp;", "&"}});
}

// Query-string encoding (RFC 3986 unreserved characters kept).
std::string Encode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

bool Retryable(const HttpResult& r) {
  return r.status == 0 || r.status >= 500 || r.status == 408 || r.status == 429 ||
         (r.status == 400 && XmlText(r.body, "Code") == "RequestTimeout");
}

}  // namespace

absl::Status ParseS3Url(std::string_view url, S3StoreOptions* options) {
  if (!url.starts_with("s3://")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("\"%s\" is not an S3 address; write s3://BUCKET or s3://BUCKET/PREFIX", url));
  }
  url.remove_prefix(5);
  const size_t slash = url.find('/');
  options->bucket = std::string(url.substr(0, slash));
  std::string_view prefix = slash == std::string_view::npos ? "" : url.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  options->prefix = std::string(prefix);
  if (options->bucket.empty()) {
    return absl::InvalidArgumentError("the S3 address names no bucket; write s3://BUCKET[/PREFIX]");
  }
  if (!options->prefix.empty()) {
    if (absl::Status s = model::CheckObjectKey(options->prefix); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the prefix of s3://%s/%s: %s", options->bucket, prefix, s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<S3Store>> S3Store::Create(S3StoreOptions options) {
  const std::string& b = options.bucket;
  const bool name_ok =
      b.size() >= 3 && b.size() <= 63 &&
      std::all_of(b.begin(), b.end(),
                  [](char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c) ||
                                      c == '-' || c == '.'; }) &&
      absl::ascii_isalnum(b.front()) && absl::ascii_isalnum(b.back());
  if (!name_ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "\"%s\" is not an S3 bucket name: 3 to 63 lower-case letters, digits, '-' and '.', "
        "starting and ending with a letter or digit",
        b));
  }
  if (options.part_bytes < kMinPartBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a multipart upload's parts must be at least 5 MiB (%d bytes given)", options.part_bytes));
  }
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  if (options.attempts < 1) options.attempts = 1;
  return std::unique_ptr<S3Store>(new S3Store(std::move(options)));
}

std::string S3Store::Describe() const {
  return options_.prefix.empty() ? absl::StrCat("s3://", options_.bucket)
                                 : absl::StrCat("s3://", options_.bucket, "/", options_.prefix);
}

S3Store::Counts S3Store::counts() const {
  util::MutexLock lock(mu_);
  return counts_;
}

std::string S3Store::FullKey(std::string_view key) const {
  return options_.prefix.empty() ? std::string(key) : options_.prefix + "/" + std::string(key);
}

std::string S3Store::Url(std::string_view full_key, std::string_view query) const {
  // A bucket name with dots does not match AWS's certificate as a host
  // name: path style for it.
  std::string url =
      options_.endpoint.empty()
          ? (options_.bucket.find('.') == std::string::npos
                 ? absl::StrFormat("https://%s.s3.%s.amazonaws.com/%s", options_.bucket,
                                   EnvironmentSigning().region, full_key)
                 : absl::StrFormat("https://s3.%s.amazonaws.com/%s/%s",
                                   EnvironmentSigning().region, options_.bucket, full_key))
          : absl::StrFormat("%s/%s%s%s", options_.endpoint, options_.bucket,
                            full_key.empty() ? "" : "/", full_key);
  if (!query.empty()) url += "?" + std::string(query);
  return url;
}

void S3Store::Count(int64_t Counts::*counter) {
  util::MutexLock lock(mu_);
  ++(counts_.*counter);
}

HttpResult S3Store::Send(const std::string& method, const std::string& url,
                         std::string_view body) {
  std::unique_ptr<HttpClient> client;
  {
    util::MutexLock lock(mu_);
    if (!idle_.empty()) {
      client = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (client == nullptr) client = std::make_unique<HttpClient>();
  HttpResult r;
  int64_t backoff_ms = options_.first_backoff_ms;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    HttpClient::Headers headers;
    headers.content_type = kContentType;
    headers.sign = false;  // signed here, for "s3"
    headers.extra = SigningHeaderLines(EnvironmentSigning(), "s3", method, url, body, kContentType,
                                       /*content_sha256=*/true);
    headers.extra.push_back("Expect:");  // no 100-continue round trip before large bodies
    Count(&Counts::requests);
    r = client->Call(method, url, body, options_.connect_timeout_ms, options_.request_timeout_ms,
                     headers);
    if (!Retryable(r) || attempt == options_.attempts) break;
    Count(&Counts::retries);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
  }
  util::MutexLock lock(mu_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(client));
  return r;
}

namespace {

// The status of an S3 answer that failed, saying what was done and what to do.
absl::Status S3Error(const HttpResult& r, std::string_view what, std::string_view where,
                     int attempts) {
  if (r.status == 0) {
    return absl::UnavailableError(absl::StrFormat(
        "%s: cannot reach %s after %d attempts (%s); check the endpoint and that the service "
        "runs",
        what, where, attempts, r.error));
  }
  std::string code = XmlText(r.body, "Code");
  std::string message = XmlText(r.body, "Message");
  std::string said = code.empty() ? absl::StrFormat("HTTP %d", r.status)
                                  : absl::StrFormat("HTTP %d %s: %s", r.status, code, message);
  if (r.status == 403 || r.status == 401) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: %s refused the credentials (%s); check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY "
        "(and AWS_SESSION_TOKEN) and that they may write to the bucket",
        what, where, said));
  }
  if (r.status == 404) {
    return absl::NotFoundError(absl::StrFormat(
        "%s: %s (%s)%s", what, where, said,
        code == "NoSuchBucket" || code.empty() ? "; create the bucket first (aws s3 mb)" : ""));
  }
  if (Retryable(r)) {
    return absl::UnavailableError(
        absl::StrFormat("%s: %s still failing after %d attempts (%s)", what, where, attempts, said));
  }
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s refused it (%s)", what, where, said));
}

bool Ok(const HttpResult& r) { return r.status >= 200 && r.status < 300; }

}  // namespace

absl::Status S3Store::Put(std::string_view key, std::string_view data) {
  TW_RETURN_IF_ERROR(model::CheckObjectKey(key));
  if (static_cast<int64_t>(data.size()) > options_.part_bytes) return PutMultipart(key, data);
  HttpResult r = Send("PUT", Url(FullKey(key), ""), data);
  if (!Ok(r)) {
    return S3Error(r, absl::StrFormat("putting %s/%s", Describe(), key), Describe(),
                   options_.attempts);
  }
  return absl::OkStatus();
}

absl::Status S3Store::PutMultipart(std::string_view key, std::string_view data) {
  const std::string what = absl::StrFormat("putting %s/%s", Describe(), key);
  int64_t part_bytes = options_.part_bytes;
  // S3 takes at most 10,000 parts: larger parts for a huge object.
  while (static_cast<int64_t>(data.size()) > part_bytes * kMaxParts) part_bytes *= 2;
  const std::string url = Url(FullKey(key), "");
  HttpResult r = Send("POST", url + "?uploads=", "");
  if (!Ok(r)) return S3Error(r, what + " (starting a multipart upload)", Describe(), options_.attempts);
  const std::string upload_id = XmlText(r.body, "UploadId");
  if (upload_id.empty()) {
    return absl::InternalError(
        absl::StrFormat("%s: %s answered CreateMultipartUpload without an UploadId", what,
                        Describe()));
  }
  const std::string upload = absl::StrCat("uploadId=", Encode(upload_id));
  std::string complete = "<CompleteMultipartUpload>";
  absl::Status failed;
  int part = 0;
  for (size_t at = 0; at < data.size(); at += static_cast<size_t>(part_bytes)) {
    ++part;
    std::string_view bytes = data.substr(at, static_cast<size_t>(part_bytes));
    r = Send("PUT", absl::StrFormat("%s?partNumber=%d&%s", url, part, upload), bytes);
    const std::string* etag = r.Header("etag");
    if (!Ok(r) || etag == nullptr) {
      failed = Ok(r) ? absl::InternalError(absl::StrFormat(
                           "%s: %s answered part %d without an ETag", what, Describe(), part))
                     : S3Error(r, absl::StrFormat("%s (part %d)", what, part), Describe(),
                               options_.attempts);
      break;
    }
    Count(&Counts::parts);
    absl::StrAppend(&complete, "<Part><PartNumber>", part, "</PartNumber><ETag>",
                    absl::StrReplaceAll(*etag, {{"&", "&amp;"}, {"\"", "&quot;"}}),
                    "</ETag></Part>");
  }
  if (failed.ok()) {
    complete += "</CompleteMultipartUpload>";
    r = Send("POST", absl::StrCat(url, "?", upload), complete);
    // S3 may answer 200 with an <Error> body when completing fails late.
    if (Ok(r) && r.body.find("<Error>") == std::string::npos) return absl::OkStatus();
    failed = r.status == 200
                 ? absl::UnavailableError(absl::StrFormat(
                       "%s: %s could not complete the multipart upload (%s: %s)", what,
                       Describe(), XmlText(r.body, "Code"), XmlText(r.body, "Message")))
                 : S3Error(r, what + " (completing the multipart upload)", Describe(),
                           options_.attempts);
  }
  // No partial upload left behind: its parts cost storage until aborted.
  HttpResult aborted = Send("DELETE", absl::StrCat(url, "?", upload), "");
  if (Ok(aborted) || aborted.status == 404) Count(&Counts::aborted_uploads);
  return failed;
}

absl::StatusOr<std::optional<std::string>> S3Store::Get(std::string_view key) {
  TW_RETURN_IF_ERROR(model::CheckObjectKey(key));
  HttpResult r = Send("GET", Url(FullKey(key), ""), "");
  if (r.status == 404 && XmlText(r.body, "Code") != "NoSuchBucket") return std::nullopt;
  if (!Ok(r)) {
    return S3Error(r, absl::StrFormat("getting %s/%s", Describe(), key), Describe(),
                   options_.attempts);
  }
  return std::move(r.body);
}

absl::StatusOr<std::vector<std::string>> S3Store::List(std::string_view prefix) {
  std::vector<std::string> keys;
  const std::string full_prefix = FullKey(prefix);
  std::string token;
  while (true) {
    std::string query = absl::StrCat("list-type=2&prefix=", Encode(full_prefix));
    if (!token.empty()) absl::StrAppend(&query, "&continuation-token=", Encode(token));
    HttpResult r = Send("GET", Url("", query), "");
    if (!Ok(r)) {
      return S3Error(r, absl::StrFormat("listing %s/%s", Describe(), prefix), Describe(),
                     options_.attempts);
    }
    size_t at = 0;
    while (at != std::string::npos) {
      std::string contents = XmlText(r.body, "Contents", &at);
      if (at == std::string::npos) break;
      std::string key = XmlText(contents, "Key");
      if (!options_.prefix.empty()) key.erase(0, options_.prefix.size() + 1);
      keys.push_back(std::move(key));
    }
    token = XmlText(r.body, "NextContinuationToken");
    if (XmlText(r.body, "IsTruncated") != "true" || token.empty()) break;
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace trainwatch::agent
