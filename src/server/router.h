#pragma once
// Router: what the server serves on its one port.
//   GET /api/v1/live   the dashboard's live updates (Server-Sent Events, api::live::LiveApi)
//   /api/v1/...        trainwatch's native JSON API (api::NativeApi)
//   GET /metrics       health for Prometheus: the server's counters, then the
//                      process's (api::MetricsPage); ?job=NAME a job's metrics
//   GET / and /ui/...  the dashboard (web/, built into the binary: web_assets.h)
//   POST (any path)    the AWS endpoints (api::Api): query, JSON 1.0/1.1, CBOR
//   anything else      404 with a JSON error
// Every answer carries x-amzn-RequestId. Under --auth (credentials in the
// AWS api's options) every route but the AWS endpoints, which verify SigV4
// themselves, and GET /api/v1/health answers 401 to a request without
// valid credentials (api::Api::RefuseOwnRoute). A request other than GET or
// HEAD that another site's page made (api::FromAnotherSite) is answered 403,
// with or without --auth.

#include <optional>

#include "api/api.h"
#include "api/live/live_stream.h"
#include "api/native/native_api.h"
#include "api/prometheus/metrics_page.h"
#include "server/metrics.h"
#include "server/server.h"

namespace trainwatch::server {

class Router final : public RequestHandler {
 public:
  // Pointers must outlive the Router; `native` may be null (then /api/v1 is
  // 404), `live` too (then /api/v1/live is the native API's 404), `page`
  // too (then /metrics is the server's counters alone).
  Router(const api::Api* aws, const api::NativeApi* native, const ServerMetrics* metrics,
         const api::live::LiveApi* live = nullptr, const api::MetricsPage* page = nullptr)
      : aws_(aws), native_(native), metrics_(metrics), live_(live), page_(page) {}

  size_t BodyLimit(const api::HttpRequest& head) const override;
  api::HttpResponse TooLarge(const api::HttpRequest& head, size_t limit) const override;
  api::HttpResponse Handle(const api::HttpRequest& request) const override;

 private:
  bool IsNative(const api::HttpRequest& request) const;
  // The 401 (or 403) of a request without valid credentials under --auth,
  // for every route but the AWS endpoints and the health check.
  std::optional<api::HttpResponse> Refused(const api::HttpRequest& request) const;
  // Refused on its headers alone (no credentials, or Basic ones that fail):
  // its body is not read (BodyLimit 0, answered by TooLarge).
  bool RefusedAtHead(const api::HttpRequest& head) const;

  const api::Api* aws_;
  const api::NativeApi* native_;
  const ServerMetrics* metrics_;
  const api::live::LiveApi* live_;
  const api::MetricsPage* page_;
};

}  // namespace trainwatch::server
