// The HTTP server over real loopback sockets (port 0): keep-alive, limits,
// deadlines against slow and idle clients, malformed input, graceful stop.
#include "server/server.h"

#include <future>
#include <thread>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/native/native_api.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/listen_address.h"
#include "server/router.h"
#include "server/web_assets.h"
#include "server/testing/raw_client.h"

namespace trainwatch::server {
namespace {

using ::testing::HasSubstr;
using testing::RawClient;
using testing::RawRequest;

// Polls `condition` for up to 5 s.
template <typename F>
bool Eventually(F condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Echoes the request; /block waits until released.
class EchoHandler : public RequestHandler {
 public:
  size_t BodyLimit(const api::HttpRequest&) const override { return 1024; }
  api::HttpResponse TooLarge(const api::HttpRequest&, size_t limit) const override {
    api::HttpResponse r;
    r.status = 413;
    r.body = absl::StrFormat("limit %d", limit);
    return r;
  }
  api::HttpResponse Handle(const api::HttpRequest& request) const override {
    if (request.target == "/block") {
      entered_.set_value();
      release_.wait();
    }
    api::HttpResponse r;
    r.body = absl::StrFormat("%s %s %s", request.method, request.target, request.body);
    return r;
  }
  mutable std::promise<void> entered_;
  std::shared_future<void> release_;
};

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    options.port = 0;
    absl::StatusOr<std::unique_ptr<Server>> s = Server::Start(options, handler_, metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  EchoHandler handler_;
  ServerMetrics metrics_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartServer();
  RawClient c(server_->port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(RawRequest("POST", "/x", absl::StrFormat("n=%d", i))));
    std::optional<api::HttpResponse> r = c.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, absl::StrFormat("POST /x n=%d", i));
    EXPECT_TRUE(r->headers.Has("x-amzn-RequestId"));
    EXPECT_TRUE(r->headers.Has("Date"));
  }
  // Two pipelined requests in one write.
  ASSERT_TRUE(c.Send(RawRequest("POST", "/a", "1") + RawRequest("POST", "/b", "2")));
  EXPECT_EQ(c.ReadResponse()->body, "POST /a 1");
  EXPECT_EQ(c.ReadResponse()->body, "POST /b 2");
  EXPECT_TRUE(Eventually([&] { return metrics_.requests() == 5; }));
}

// --poll-us: off (0), and long enough that every request of the test comes
// while the thread is still polling after the one before. Either way each
// request is answered, and Stop returns (a thread stuck polling would hang it).
TEST_F(ServerTest, RequestThreadsServeAndStopWhateverTheirPolling) {
  for (int64_t poll_us : {int64_t{0}, int64_t{100'000}}) {
    SCOPED_TRACE(absl::StrFormat("poll_us=%d", poll_us));
    ServerOptions options;
    options.poll_us = poll_us;
    StartServer(options);
    {
      RawClient c(server_->port());
      ASSERT_TRUE(c.connected());
      for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(c.Send(RawRequest("POST", "/p", absl::StrFormat("%d", i))));
        std::optional<api::HttpResponse> r = c.ReadResponse();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->body, absl::StrFormat("POST /p %d", i));
      }
    }
    server_->Stop();
    server_.reset();
  }
}

TEST_F(ServerTest, OversizedBodyIsRefusedFromItsHeaders) {
  StartServer();
  RawClient c(server_->port());
  // Declares 1 MB but sends none of it: the answer comes from the headers.
  ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n"));
  std::optional<api::HttpResponse> r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body, "limit 1024");
  EXPECT_TRUE(c.WaitForClose());

  RawClient chunked(server_->port());
  std::string body = "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) body += "200\r\n" + std::string(512, 'a') + "\r\n";
  body += "0\r\n\r\n";
  ASSERT_TRUE(chunked.Send(body));
  r = chunked.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
}

TEST_F(ServerTest, HugeHeadersAndMalformedRequestsAreAnsweredAndClosed) {
  StartServer();
  RawClient big(server_->port());
  ASSERT_TRUE(big.Send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(20000, 'a') +
                       "\r\n\r\n"));
  std::optional<api::HttpResponse> r = big.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(big.WaitForClose());

  for (std::string garbage : {std::string("NOT HTTP AT ALL\r\n\r\n"),
                              std::string("GET / HTTP/9.9\r\n\r\n"),
                              std::string("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
                              std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) +
                                  "\r\n\r\n"}) {
    RawClient c(server_->port());
    ASSERT_TRUE(c.Send(garbage));
    r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << garbage;
    EXPECT_EQ(r->status, 400) << garbage;
    EXPECT_TRUE(c.WaitForClose());
  }
  // The server still serves.
  RawClient ok(server_->port());
  ASSERT_TRUE(ok.Send(RawRequest("GET", "/fine")));
  EXPECT_EQ(ok.ReadResponse()->status, 200);
}

TEST_F(ServerTest, SlowAndIdleClientsAreCutOffWhileOthersAreServed) {
  ServerOptions options;
  options.header_timeout_ms = 1000;
  options.idle_timeout_ms = 1000;
  StartServer(options);
  // A slowloris client: starts a request and never finishes its headers.
  RawClient slow(server_->port());
  ASSERT_TRUE(slow.Send("POST /x HTTP/1.1\r\nHost: t\r\nX-Slow: "));
  // An idle client: connects and says nothing.
  RawClient idle(server_->port());
  // Meanwhile a normal client is answered at once.
  RawClient normal(server_->port());
  ASSERT_TRUE(normal.Send(RawRequest("GET", "/now")));
  EXPECT_EQ(normal.ReadResponse()->status, 200);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.WaitForClose());
  EXPECT_TRUE(idle.WaitForClose());
  // Cut off by the deadlines, well before the clients' own 10 s read timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The client may see the close a moment before the server thread counts it.
  EXPECT_TRUE(Eventually([&] { return metrics_.timeouts(ServerMetrics::kHeader) == 1; }));
  EXPECT_TRUE(Eventually([&] { return metrics_.timeouts(ServerMetrics::kIdle) >= 1; }));
}

TEST_F(ServerTest, ConnectionCapClosesExtraConnections) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  RawClient a(server_->port()), b(server_->port());
  ASSERT_TRUE(a.Send(RawRequest("GET", "/a")));
  ASSERT_TRUE(b.Send(RawRequest("GET", "/b")));
  ASSERT_TRUE(a.ReadResponse().has_value());
  ASSERT_TRUE(b.ReadResponse().has_value());
  RawClient c(server_->port());
  EXPECT_TRUE(c.WaitForClose());
  EXPECT_TRUE(Eventually([&] { return metrics_.rejected() == 1; }));
}

TEST_F(ServerTest, ExpectContinueIsHonoured) {
  StartServer();
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  std::optional<api::HttpResponse> cont = c.ReadResponse();
  ASSERT_TRUE(cont.has_value());
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.Send("body"));
  EXPECT_EQ(c.ReadResponse()->body, "POST /x body");
}

TEST_F(ServerTest, StopFinishesRequestsInFlightAndClosesIdleConnections) {
  std::promise<void> release;
  handler_.release_ = release.get_future().share();
  StartServer();
  RawClient busy(server_->port());
  RawClient idle(server_->port());
  ASSERT_TRUE(idle.Send(RawRequest("GET", "/warm")));
  ASSERT_TRUE(idle.ReadResponse().has_value());
  ASSERT_TRUE(busy.Send(RawRequest("GET", "/block")));
  handler_.entered_.get_future().wait();
  std::thread stopper([&] { server_->Stop(); });
  EXPECT_TRUE(idle.WaitForClose());
  release.set_value();
  std::optional<api::HttpResponse> r = busy.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(*r->headers.Find("Connection"), "close");
  stopper.join();
  RawClient after(server_->port());
  EXPECT_FALSE(after.connected());
}

// Connections are dealt to the request threads in turn; a request that takes
// long holds up neither the accepting of new connections nor the other thread.
TEST_F(ServerTest, ALongRequestHoldsUpNeitherNewConnectionsNorTheOtherThread) {
  std::promise<void> release;
  handler_.release_ = release.get_future().share();
  ServerOptions options;
  options.threads = 2;
  StartServer(options);
  RawClient busy(server_->port());
  ASSERT_TRUE(busy.Send(RawRequest("GET", "/block")));
  handler_.entered_.get_future().wait();
  RawClient next(server_->port(), /*timeout_ms=*/5000);
  ASSERT_TRUE(next.Send(RawRequest("GET", "/next")));
  std::optional<api::HttpResponse> answer = next.ReadResponse();
  release.set_value();
  ASSERT_TRUE(answer.has_value()) << "a new connection waited for the long request";
  EXPECT_EQ(answer->body, "GET /next ");
  std::optional<api::HttpResponse> r = busy.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "GET /block ");
}

TEST(ServerStart, RefusesNonLoopbackWithoutAuth) {
  EchoHandler handler;
  ServerMetrics metrics;
  ServerOptions options;
  options.host = "0.0.0.0";
  options.port = 0;
  absl::StatusOr<std::unique_ptr<Server>> s = Server::Start(options, handler, metrics);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(s.status()));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--auth"));
}

TEST(ListenAddress, Forms) {
  EXPECT_EQ(ParseListenAddress("127.0.0.1:9400")->port, 9400);
  EXPECT_EQ(ParseListenAddress(":9400")->host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("localhost:1")->host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("[::1]:9400")->host, "::1");
  for (const char* bad : {"9400", "127.0.0.1:", "127.0.0.1:70000", "host.example:80", "::1:80"}) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
  EXPECT_TRUE(IsLoopback("127.0.0.5"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0"));
}

// The router with the real api and native handlers over the fake backend.
TEST(Router, ServesAwsNativeMetricsAndNotFound) {
  util::FakeClock clock;
  api::testing::FakeBackend fake(clock);
  api::Api aws(api::ApiOptions{}, fake.backends(), clock);
  api::NativeApi native(api::NativeOptions{}, fake.backends(), clock);
  ServerMetrics metrics;
  Router router(&aws, &native, &metrics);
  absl::StatusOr<std::unique_ptr<Server>> s =
      Server::Start(ServerOptions{.port = 0}, router, metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  RawClient c((*s)->port());
  ASSERT_TRUE(c.Send(RawRequest("POST", "/",
                                "{\"Namespace\":\"T\",\"MetricData\":[{\"MetricName\":\"m\",\"Value\":1}]}",
                                "X-Amz-Target: GraniteServiceVersion20100801.PutMetricData\r\n"
                                "Content-Type: application/x-amz-json-1.0\r\n")));
  std::optional<api::HttpResponse> r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  ASSERT_TRUE(c.Send(RawRequest("GET", "/api/v1/health")));
  r = c.ReadResponse();
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("\"status\":\"ok\""));
  ASSERT_TRUE(c.Send(RawRequest("GET", "/metrics")));
  r = c.ReadResponse();
  EXPECT_THAT(r->body, HasSubstr("trainwatch_http_requests_total{code=\"2xx\"} 2"));
  EXPECT_THAT(r->body, HasSubstr("process_resident_memory_bytes"));
  ASSERT_TRUE(c.Send(RawRequest("GET", "/nothing-here")));
  r = c.ReadResponse();
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(r->headers.Has("x-amzn-RequestId"));
  EXPECT_THAT(r->body, HasSubstr("\"code\":\"NotFound\""));
  // A too-large AWS request gets the protocol's own 413.
  ASSERT_TRUE(c.Send("POST / HTTP/1.1\r\nHost: t\r\nX-Amz-Target: Logs_20140328.PutLogEvents\r\n"
                     "Content-Type: application/x-amz-json-1.1\r\nContent-Length: 2000000\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_THAT(r->body, HasSubstr("\"__type\":\"RequestEntityTooLarge\""));
}

// Under --auth a request without credentials is refused on its headers: the
// body it announces is never read.
TEST(Router, RefusesUnauthenticatedBodiesBeforeReadingThem) {
  util::FakeClock clock;
  api::testing::FakeBackend fake(clock);
  api::sigv4::CredentialStore credentials;
  ASSERT_TRUE(credentials.Add({"AKID", "secret", ""}).ok());
  api::ApiOptions options;
  options.credentials = &credentials;
  api::Api aws(options, fake.backends(), clock);
  api::NativeApi native(api::NativeOptions{}, fake.backends(), clock);
  ServerMetrics metrics;
  Router router(&aws, &native, &metrics);
  absl::StatusOr<std::unique_ptr<Server>> s =
      Server::Start(ServerOptions{.port = 0}, router, metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  RawClient c((*s)->port());
  ASSERT_TRUE(c.Send("POST /api/v1/samples HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2000000\r\n\r\n"));
  std::optional<api::HttpResponse> r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401) << r->body;
  EXPECT_TRUE(r->headers.Has("WWW-Authenticate"));
  // With a key (Basic: QUtJRDpzZWNyZXQ= is AKID:secret) the body is read and taken.
  RawClient signed_client((*s)->port());
  const std::string body =
      R"({"series":[{"namespace":"T","metric":"m","t_ms":[1000],"values":[1]}]})";
  ASSERT_TRUE(signed_client.Send(RawRequest("POST", "/api/v1/samples", body,
                                            "Authorization: Basic QUtJRDpzZWNyZXQ=\r\n"
                                            "Content-Type: application/json\r\n")));
  r = signed_client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
}

// A form another site's page posts, to a server on loopback without --auth:
// nothing changes (the AWS endpoints included); the dashboard's own requests
// and clients that are no browser go on.
TEST(Router, ChangesNothingForAnotherSitesPage) {
  util::FakeClock clock;
  api::testing::FakeBackend fake(clock);
  api::Api aws(api::ApiOptions{}, fake.backends(), clock);
  api::NativeApi native(api::NativeOptions{}, fake.backends(), clock);
  Router router(&aws, &native, nullptr);
  auto post = [&](std::string target, std::string body,
                  std::vector<std::pair<std::string, std::string>> headers) {
    api::HttpRequest r;
    r.method = "POST";
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers.Add("Host", "127.0.0.1:9400");
    for (const auto& [k, v] : headers) r.headers.Add(k, v);
    return router.Handle(r);
  };
  const std::string form = "Action=PutMetricData&Version=2010-08-01&Namespace=T&"
                           "MetricData.member.1.MetricName=m&MetricData.member.1.Value=1";
  api::HttpResponse r = post("/", form, {{"Content-Type", "application/x-www-form-urlencoded"},
                                         {"Origin", "http://evil.example"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, HasSubstr("another site's page"));
  r = post("/api/v1/jobs/j/stop", "", {{"Sec-Fetch-Site", "cross-site"}});
  EXPECT_EQ(r.status, 403);
  r = post("/", form, {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(r.status, 200) << r.body;  // awscli, boto3: no Origin
  r = post("/api/v1/metrics/data", "{}", {{"Origin", "http://127.0.0.1:9400"},
                                          {"Sec-Fetch-Site", "same-origin"}});
  EXPECT_NE(r.status, 403) << r.body;  // the dashboard's own
}

// The dashboard, built into the binary: index.html at /, every asset under /ui/
// with its type and an ETag that a revalidation answers with 304.
TEST(Router, ServesTheDashboard) {
  Router router(nullptr, nullptr, nullptr);
  auto get = [&](std::string target, std::string if_none_match = "") {
    api::HttpRequest request;
    request.method = "GET";
    request.target = std::move(target);
    if (!if_none_match.empty()) request.headers.Add("If-None-Match", if_none_match);
    return router.Handle(request);
  };
  api::HttpResponse index = get("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(*index.headers.Find("Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(index.body, HasSubstr("<!doctype html>"));
  EXPECT_EQ(get("/ui/index.html").body, index.body);
  ASSERT_NE(FindWebAsset("app.js"), nullptr);
  api::HttpResponse js = get("/ui/app.js?v=1");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(*js.headers.Find("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body, FindWebAsset("app.js")->bytes());
  api::HttpResponse uplot = get("/ui/vendor/uPlot.esm.js");
  EXPECT_EQ(uplot.status, 200);
  EXPECT_THAT(uplot.body, HasSubstr("export"));
  EXPECT_EQ(*get("/ui/vendor/uPlot.min.css").headers.Find("Content-Type"),
            "text/css; charset=utf-8");
  const std::string* etag = js.headers.Find("ETag");
  ASSERT_NE(etag, nullptr);
  api::HttpResponse again = get("/ui/app.js", *etag);
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(get("/ui/app.js", "\"other\"").status, 200);
  EXPECT_EQ(get("/ui/no-such-file.js").status, 404);
  EXPECT_EQ(get("/ui/../CMakeLists.txt").status, 404);
  api::HttpRequest post;
  post.method = "POST";
  post.target = "/ui/app.js";
  EXPECT_EQ(router.Handle(post).status, 404);
}

}  // namespace
}  // namespace trainwatch::server
