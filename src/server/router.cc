#include "server/router.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "server/web_assets.h"

namespace trainwatch::server {
namespace {

api::HttpResponse NotFound(const api::HttpRequest& request) {
  api::HttpResponse r;
  r.status = 404;
  r.headers.Add("x-amzn-RequestId", api::NewRequestId());
  r.headers.Add("Content-Type", "application/json");
  std::string path(request.Path().substr(0, 200));
  // Paths are echoed inside a JSON string: keep only safe characters.
  for (char& c : path) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7F) {
      c = '?';
    }
  }
  r.body = absl::StrFormat(
      "{\"error\":{\"code\":\"NotFound\",\"message\":\"no resource %s %s; trainwatch serves the "
      "AWS APIs (POST), /api/v1/ and /metrics (see docs/api.md)\"}}\n",
      request.method == "GET" || request.method == "HEAD" || request.method == "POST"
          ? request.method
          : "?",
      path);
  return r;
}

// GET|HEAD / (the dashboard's index.html) and /ui/<path> (its assets), with an
// ETag so a browser revalidates instead of downloading again; nullopt when
// the request is not for the dashboard.
std::optional<api::HttpResponse> ServeDashboard(const api::HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return std::nullopt;
  std::string_view path = request.Path();
  std::string_view asset_path;
  if (path == "/" || path == "/ui" || path == "/ui/") {
    asset_path = "index.html";
  } else if (path.substr(0, 4) == "/ui/") {
    asset_path = path.substr(4);
  } else {
    return std::nullopt;
  }
  const WebAsset* asset = FindWebAsset(asset_path);
  if (asset == nullptr) return NotFound(request);
  api::HttpResponse r;
  r.headers.Add("x-amzn-RequestId", api::NewRequestId());
  r.headers.Add("Content-Type", std::string(asset->content_type));
  r.headers.Add("ETag", std::string(asset->etag));
  r.headers.Add("Cache-Control", "no-cache");
  r.headers.Add("X-Content-Type-Options", "nosniff");
  const std::string* match = request.headers.Find("If-None-Match");
  if (match != nullptr && match->find(asset->etag) != std::string::npos) {
    r.status = 304;
    return r;
  }
  if (request.method == "GET") r.body = std::string(asset->bytes());
  return r;
}

}  // namespace

bool Router::IsNative(const api::HttpRequest& request) const {
  return native_ != nullptr && request.Path().substr(0, 8) == "/api/v1/";
}

std::optional<api::HttpResponse> Router::Refused(const api::HttpRequest& request) const {
  // Under --auth everything but the AWS endpoints (which check SigV4
  // themselves) and the health check (for probes and load balancers) wants
  // credentials too.
  const bool to_aws = request.method == "POST" && aws_ != nullptr && !IsNative(request);
  if (to_aws || aws_ == nullptr || request.Path() == "/api/v1/health") return std::nullopt;
  return aws_->RefuseOwnRoute(request);
}

bool Router::RefusedAtHead(const api::HttpRequest& head) const {
  // Only a signature needs the body; no credentials, or Basic ones, are
  // judged on the headers, before a body is read.
  const std::string* authorization = head.headers.Find("Authorization");
  const bool judged_on_headers =
      authorization == nullptr ||
      absl::StartsWithIgnoreCase(absl::string_view(authorization->data(), authorization->size()),
                                 "basic ");
  return judged_on_headers && Refused(head).has_value();
}

size_t Router::BodyLimit(const api::HttpRequest& head) const {
  if (RefusedAtHead(head)) return 0;  // TooLarge answers it
  if (IsNative(head)) return native_->BodyLimit();
  if (head.method == "POST" && aws_ != nullptr) return aws_->options().max_body_bytes;
  return 64 * 1024;
}

api::HttpResponse Router::TooLarge(const api::HttpRequest& head, size_t limit) const {
  if (std::optional<api::HttpResponse> refused = Refused(head)) return *std::move(refused);
  if (IsNative(head)) return native_->TooLarge(limit);
  if (head.method == "POST" && aws_ != nullptr) return aws_->TooLarge(head, limit);
  api::HttpResponse r = NotFound(head);
  r.status = 413;
  return r;
}

api::HttpResponse Router::Handle(const api::HttpRequest& request) const {
  // Nothing changes for another site's page, with or without --auth: the
  // browser of a user of a server on loopback would post its forms there.
  if (request.method != "GET" && request.method != "HEAD" && api::FromAnotherSite(request)) {
    api::HttpResponse r;
    r.status = 403;
    r.headers.Add("x-amzn-RequestId", api::NewRequestId());
    r.headers.Add("Content-Type", "application/json");
    r.body =
        "{\"error\":{\"code\":\"Forbidden\",\"message\":\"a request from another site's page "
        "(Origin or Sec-Fetch-Site) changes nothing here; send it from this server's own "
        "pages or from a client that is no browser\"}}\n";
    return r;
  }
  if (std::optional<api::HttpResponse> refused = Refused(request)) return *std::move(refused);
  if (live_ != nullptr && api::live::LiveApi::Serves(request)) return live_->Handle(request);
  if (IsNative(request)) return native_->Handle(request);
  if (api::MetricsPage::Serves(request)) {
    const api::MetricsPage::Writer server_part = [this](util::PromText* text) {
      if (metrics_ != nullptr) metrics_->Write(text);
    };
    static const api::MetricsPage kServerOnly(api::Backends{}, {});
    api::HttpResponse r = (page_ != nullptr ? page_ : &kServerOnly)->Handle(request, server_part);
    r.headers.Add("x-amzn-RequestId", api::NewRequestId());
    return r;
  }
  if (request.method == "POST" && aws_ != nullptr) return aws_->Handle(request);
  if (std::optional<api::HttpResponse> page = ServeDashboard(request)) return *std::move(page);
  return NotFound(request);
}

}  // namespace trainwatch::server
