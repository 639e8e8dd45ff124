#include "api/sigv4.h"

#include "absl/strings/escaping.h"
#include "api/api.h"
#include "api/testing/captures.h"
#include "api/testing/fake_backend.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api::sigv4 {
namespace {

using testing::Capture;
using testing::LoadCaptures;

constexpr char kKey[] = "AKIDEXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

CredentialStore Store(std::string token = "") {
  CredentialStore store;
  EXPECT_TRUE(store.Add({kKey, kSecret, token}).ok());
  return store;
}

Service ServiceOf(const HttpRequest& r) {
  const std::string* target = r.headers.Find("X-Amz-Target");
  if (target && target->rfind("Logs_", 0) == 0) return Service::kLogs;
  if (target && target->rfind("SageMaker", 0) == 0) return Service::kSageMaker;
  return Service::kCloudWatch;
}

int64_t SignedAt(const HttpRequest& r) { return ParseAmzDate(*r.headers.Find("X-Amz-Date")); }

std::string CodeOf(const absl::Status& s) { return AwsCodeOf(s).value_or("(none)"); }

TEST(SigV4, EveryCaptureVerifiesWithNowFromItsDate) {
  std::vector<Capture> captures = LoadCaptures();
  if (captures.empty()) GTEST_SKIP() << "no captures under tests/captures";
  EXPECT_EQ(captures.size(), 97u);
  CredentialStore store = Store();
  for (const Capture& c : captures) {
    SCOPED_TRACE(c.name);
    absl::Status s = Verify(c.request, ServiceOf(c.request), Protocol::kJson11, store,
                            SignedAt(c.request), VerifyOptions{});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(SigV4, CanonicalRequestAndStringToSignMatchTheCaptureServer) {
  std::vector<Capture> captures = LoadCaptures();
  if (captures.empty()) GTEST_SKIP() << "no captures under tests/captures";
  for (const Capture& c : captures) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::string> meta_text = testing::ReadFileBytes(c.meta.string());
    ASSERT_TRUE(meta_text.ok());
    nlohmann::json meta = nlohmann::json::parse(*meta_text);
    absl::StatusOr<Authorization> auth =
        ParseAuthorization(*c.request.headers.Find("Authorization"));
    ASSERT_TRUE(auth.ok()) << auth.status();
    std::string canonical = CanonicalRequest(c.request, auth->signed_header_names,
                                             auth->signed_headers, HexSha256(c.request.body));
    EXPECT_EQ(canonical, meta["sigv4"]["canonical_request"].get<std::string>());
    EXPECT_EQ(StringToSign(*c.request.headers.Find("X-Amz-Date"), auth->Scope(), canonical),
              meta["sigv4"]["string_to_sign"].get<std::string>());
  }
}

class OneCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    for (Capture& c : LoadCaptures()) {
      if (c.name == "debcli/001-cw-PutMetricData") capture_ = c.request;
    }
    if (capture_.body.empty()) GTEST_SKIP() << "capture debcli/001 missing";
    now_ = SignedAt(capture_);
  }
  absl::Status Check(const HttpRequest& r, Service service = Service::kCloudWatch,
                     const CredentialStore* store = nullptr) {
    CredentialStore fallback = Store();
    return Verify(r, service, Protocol::kQuery, store ? *store : fallback, now_, VerifyOptions{});
  }
  HttpRequest capture_;
  int64_t now_ = 0;
};

TEST_F(OneCapture, AnyOneByteChangeIsRejected) {
  ASSERT_TRUE(Check(capture_).ok());
  HttpRequest body = capture_;
  body.body[body.body.size() - 1] ^= 1;
  EXPECT_EQ(CodeOf(Check(body)), "SignatureDoesNotMatch");

  HttpRequest host = capture_;
  host.headers.Set("Host", "127.0.0.1:18778");
  EXPECT_EQ(CodeOf(Check(host)), "SignatureDoesNotMatch");

  HttpRequest date = capture_;
  std::string d = *date.headers.Find("X-Amz-Date");
  d[14] = d[14] == '0' ? '1' : '0';  // one second off
  date.headers.Set("X-Amz-Date", d);
  EXPECT_EQ(CodeOf(Check(date)), "SignatureDoesNotMatch");

  HttpRequest signature = capture_;
  std::string auth = *signature.headers.Find("Authorization");
  auth[auth.size() - 1] = auth.back() == 'a' ? 'b' : 'a';
  signature.headers.Set("Authorization", auth);
  absl::Status s = Check(signature);
  EXPECT_EQ(CodeOf(s), "SignatureDoesNotMatch");
  EXPECT_NE(s.message().find("does not match the signature you provided"), std::string::npos);
}

TEST_F(OneCapture, ClockSkewBeyondFifteenMinutes) {
  CredentialStore store = Store();
  absl::Status late = Verify(capture_, Service::kCloudWatch, Protocol::kQuery, store,
                             now_ + 16 * 60 * 1000, VerifyOptions{});
  EXPECT_EQ(CodeOf(late), "SignatureDoesNotMatch");
  EXPECT_NE(late.message().find("Signature expired: 20261130T095902Z is now earlier than"),
            std::string::npos)
      << late;
  absl::Status early = Verify(capture_, Service::kCloudWatch, Protocol::kQuery, store,
                              now_ - 16 * 60 * 1000, VerifyOptions{});
  EXPECT_NE(early.message().find("Signature not yet current"), std::string::npos) << early;
  EXPECT_TRUE(Verify(capture_, Service::kCloudWatch, Protocol::kQuery, store,
                     now_ + 14 * 60 * 1000, VerifyOptions{})
                  .ok());
}

TEST_F(OneCapture, ScopeMustNameTheRoutedService) {
  absl::Status s = Check(capture_, Service::kLogs);
  EXPECT_EQ(CodeOf(s), "SignatureDoesNotMatch");
  EXPECT_EQ(s.message(), "Credential should be scoped to correct service: 'logs'.");
}

TEST_F(OneCapture, UnknownKeyMissingAndMalformedHeaders) {
  CredentialStore other;
  ASSERT_TRUE(other.Add({"AKIDOTHER", kSecret, ""}).ok());
  EXPECT_EQ(CodeOf(Check(capture_, Service::kCloudWatch, &other)), "InvalidClientTokenId");

  HttpRequest missing = capture_;
  missing.headers.Remove("Authorization");
  absl::Status s = Check(missing);
  EXPECT_EQ(CodeOf(s), "MissingAuthenticationToken");
  EXPECT_EQ(s.message(), "Request is missing Authentication Token");

  for (const char* bad : {"AWS4-HMAC-SHA1 Credential=a/b/c/d/aws4_request",
                          "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/us-east-1/monitoring/"
                          "aws4_request, SignedHeaders=host",
                          "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE, SignedHeaders=host, "
                          "Signature=0000000000000000000000000000000000000000000000000000000000000000",
                          ""}) {
    HttpRequest malformed = capture_;
    malformed.headers.Set("Authorization", bad);
    EXPECT_EQ(CodeOf(Check(malformed)), "IncompleteSignature") << bad;
  }
}

TEST(SigV4, SessionTokenMustBePresentSignedAndEqual) {
  HttpRequest request;
  for (Capture& c : LoadCaptures()) {
    if (c.name == "debboto3/096-sessiontoken-logs-DescribeLogStreams") request = c.request;
  }
  if (request.body.empty()) GTEST_SKIP() << "session-token capture missing";
  int64_t now = SignedAt(request);
  CredentialStore with_token = Store("DUMMY-SESSION-TOKEN-FOR-TESTS");
  EXPECT_TRUE(
      Verify(request, Service::kLogs, Protocol::kJson11, with_token, now, VerifyOptions{}).ok());
  CredentialStore other_token = Store("ANOTHER-TOKEN");
  EXPECT_EQ(CodeOf(Verify(request, Service::kLogs, Protocol::kJson11, other_token, now,
                          VerifyOptions{})),
            "InvalidClientTokenId");
  HttpRequest unsigned_token = request;
  unsigned_token.headers.Remove("X-Amz-Security-Token");
  EXPECT_EQ(CodeOf(Verify(unsigned_token, Service::kLogs, Protocol::kJson11, with_token, now,
                          VerifyOptions{})),
            "InvalidClientTokenId");
}

TEST(SigV4, SignRequestRoundTripsAndCoversGzipBodiesAsSent) {
  HttpRequest r;
  r.headers.Add("Host", "127.0.0.1:9400");
  r.headers.Add("Content-Type", "application/x-amz-json-1.0");
  r.headers.Add("Content-Encoding", "gzip");
  r.headers.Add("X-Amz-Target", "GraniteServiceVersion20100801.ListMetrics");
  r.body = std::string("\x1f\x8b\x08\x00compressed", 14);
  Credential c{kKey, kSecret, ""};
  int64_t now = 1764496531000;
  SignRequest(&r, c, "eu-west-1", "monitoring", now);
  CredentialStore store = Store();
  EXPECT_TRUE(Verify(r, Service::kCloudWatch, Protocol::kJson10, store, now, VerifyOptions{}).ok());
  VerifyOptions us_only;
  us_only.region = "us-east-1";
  EXPECT_EQ(CodeOf(Verify(r, Service::kCloudWatch, Protocol::kJson10, store, now, us_only)),
            "SignatureDoesNotMatch");
  r.body[5] ^= 1;
  EXPECT_EQ(CodeOf(Verify(r, Service::kCloudWatch, Protocol::kJson10, store, now, VerifyOptions{})),
            "SignatureDoesNotMatch");
}

TEST(SigV4, AuthErrorsUseEachProtocolsShape) {
  util::FakeClock clock;
  testing::FakeBackend fake(clock);
  CredentialStore store = Store();
  ApiOptions options;
  options.credentials = &store;
  Api api(options, fake.backends(), clock);

  HttpRequest query;
  query.headers.Add("Content-Type", "application/x-www-form-urlencoded");
  query.body = "Action=ListMetrics&Version=2010-08-01";
  HttpResponse r = api.Handle(query);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("<Code>MissingAuthenticationToken</Code>"), std::string::npos) << r.body;

  HttpRequest json = query;
  json.headers.Set("Content-Type", "application/x-amz-json-1.0");
  json.headers.Add("X-Amz-Target", "GraniteServiceVersion20100801.ListMetrics");
  json.headers.Add("Host", "localhost");
  json.body = "{}";
  SignRequest(&json, {kKey, "wrong-secret", ""}, "us-east-1", "monitoring", clock.NowMs());
  r = api.Handle(json);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(*r.headers.Find("x-amzn-query-error"), "SignatureDoesNotMatch;Sender");
  EXPECT_NE(r.body.find("\"__type\":\"InvalidSignatureException\""), std::string::npos) << r.body;

  HttpRequest logs;
  logs.headers.Add("Content-Type", "application/x-amz-json-1.1");
  logs.headers.Add("X-Amz-Target", "Logs_20140328.DescribeLogGroups");
  logs.headers.Add("Host", "localhost");
  logs.body = "{}";
  SignRequest(&logs, {"AKIDUNKNOWN", kSecret, ""}, "us-east-1", "logs", clock.NowMs());
  r = api.Handle(logs);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.headers.Find("x-amzn-query-error"), nullptr);
  EXPECT_NE(r.body.find("\"__type\":\"UnrecognizedClientException\""), std::string::npos);

  SignRequest(&logs, {kKey, kSecret, ""}, "us-east-1", "logs", clock.NowMs());
  EXPECT_EQ(api.Handle(logs).status, 200);
}

HttpRequest OwnRoute(std::string_view authorization) {
  HttpRequest r;
  r.method = "GET";
  r.target = "/api/v1/jobs";
  r.headers.Add("Host", "127.0.0.1:9400");
  if (!authorization.empty()) r.headers.Add("Authorization", std::string(authorization));
  return r;
}

std::string Basic(std::string_view key_and_secret) {
  std::string encoded;
  absl::Base64Escape(absl::string_view(key_and_secret.data(), key_and_secret.size()), &encoded);
  return "Basic " + encoded;
}

TEST(SigV4, OwnRoutesTakeBasicCredentialsOrASignature) {
  CredentialStore store = Store();
  ASSERT_TRUE(store.Add({"AKIDTEMPORARY", "secret2", "SESSION"}).ok());
  const int64_t now = 1764496531000;
  auto verify = [&](const HttpRequest& r) {
    return VerifyOwnRoute(r, store, now, VerifyOptions{});
  };
  EXPECT_TRUE(verify(OwnRoute(Basic(std::string(kKey) + ":" + kSecret))).ok());
  // The scheme's name in any case, as RFC 7617 allows.
  std::string lower = Basic(std::string(kKey) + ":" + kSecret);
  lower.replace(0, 5, "bASIC");
  EXPECT_TRUE(verify(OwnRoute(lower)).ok());

  auto refused = [&](const HttpRequest& r, std::string_view says) {
    absl::Status s = verify(r);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
    EXPECT_NE(std::string(s.message()).find(says), std::string::npos) << s.message();
  };
  refused(OwnRoute(""), "requires authentication (--auth)");
  refused(OwnRoute(""), "curl -u KEY:SECRET");
  refused(OwnRoute(Basic(std::string(kKey) + ":wrong")), "are not a pair");
  refused(OwnRoute(Basic(std::string("AKIDUNKNOWN:") + kSecret)), "are not a pair");
  refused(OwnRoute(Basic("no colon")), "not base64 of KEY:SECRET");
  refused(OwnRoute("Basic !!!"), "not base64 of KEY:SECRET");
  refused(OwnRoute(Basic("AKIDTEMPORARY:secret2")), "has a session token");
  refused(OwnRoute("Bearer abc"), "signature was refused");

  // SigV4 for CloudWatch's signing name, as the agent and the Python client sign.
  HttpRequest signed_request = OwnRoute("");
  SignRequest(&signed_request, {kKey, kSecret, ""}, "us-east-1", "monitoring", now);
  EXPECT_TRUE(verify(signed_request).ok());
  HttpRequest other_service = OwnRoute("");
  SignRequest(&other_service, {kKey, kSecret, ""}, "us-east-1", "logs", now);
  refused(other_service, "scoped to correct service");
  HttpRequest tampered = signed_request;
  tampered.target = "/api/v1/jobs/other/stop";
  refused(tampered, "signature was refused");
  HttpRequest temporary = OwnRoute("");
  SignRequest(&temporary, {"AKIDTEMPORARY", "secret2", "SESSION"}, "us-east-1", "monitoring", now);
  EXPECT_TRUE(verify(temporary).ok());
}

TEST(SigV4, OwnRouteRefusalIsA401WithABasicChallenge) {
  util::FakeClock clock;
  testing::FakeBackend fake(clock);
  ApiOptions open_options;
  Api open(open_options, fake.backends(), clock);
  EXPECT_FALSE(open.RefuseOwnRoute(OwnRoute("")).has_value());  // no --auth: no check

  CredentialStore store = Store();
  ApiOptions options;
  options.credentials = &store;
  Api api(options, fake.backends(), clock);
  std::optional<HttpResponse> r = api.RefuseOwnRoute(OwnRoute(""));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(*r->headers.Find("WWW-Authenticate"), "Basic realm=\"trainwatch\", charset=\"UTF-8\"");
  nlohmann::json body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["error"]["code"], "Unauthenticated");
  EXPECT_FALSE(api.RefuseOwnRoute(OwnRoute(Basic(std::string(kKey) + ":" + kSecret))).has_value());

  // What the client sent is quoted back: bytes that are no UTF-8 must not
  // break the answer (nlohmann::json throws on them by default).
  r = api.RefuseOwnRoute(OwnRoute(Basic("\xff\xfe:x")));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(nlohmann::json::accept(r->body)) << r->body;

  // Right credentials on a request another site's page made: 403, no challenge.
  HttpRequest post = OwnRoute(Basic(std::string(kKey) + ":" + kSecret));
  post.method = "POST";
  post.target = "/api/v1/jobs/j/stop";
  post.headers.Add("Origin", "http://evil.example");
  r = api.RefuseOwnRoute(post);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(r->headers.Find("WWW-Authenticate"), nullptr);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "Forbidden");
}

TEST(SigV4, BasicCredentialsChangeNothingFromAnotherSite) {
  CredentialStore store = Store();
  const std::string basic = Basic(std::string(kKey) + ":" + kSecret);
  auto verify = [&](const std::string& method, std::vector<std::pair<std::string, std::string>> extra) {
    HttpRequest r = OwnRoute(basic);
    r.method = method;
    for (const auto& [k, v] : extra) r.headers.Add(k, v);
    return VerifyOwnRoute(r, store, 1764496531000, VerifyOptions{});
  };
  // Clients that are no browser (curl -u, Prometheus) send neither header.
  EXPECT_TRUE(verify("POST", {}).ok());
  // The dashboard's own requests.
  EXPECT_TRUE(verify("POST", {{"Origin", "http://127.0.0.1:9400"}}).ok());
  EXPECT_TRUE(verify("POST", {{"Sec-Fetch-Site", "same-origin"}, {"Origin", "http://127.0.0.1:9400"}}).ok());
  // Another site's page; another port of the same host is another site.
  EXPECT_EQ(verify("POST", {{"Origin", "http://evil.example"}}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(verify("POST", {{"Origin", "http://127.0.0.1:8080"}}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(verify("DELETE", {{"Sec-Fetch-Site", "cross-site"}}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(verify("POST", {{"Sec-Fetch-Site", "same-site"}}).code(),
            absl::StatusCode::kPermissionDenied);
  // Reads change nothing (and another site's page cannot read the answer).
  EXPECT_TRUE(verify("GET", {{"Origin", "http://evil.example"}}).ok());
}

TEST(AuthFile, ParsesCredentialsAndReportsBadLines) {
  absl::StatusOr<CredentialStore> store = ParseAuthFile(
      "# trainwatch auth file\n\nAKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n"
      "  AKIDTEMP\tsecret2   SESSION-TOKEN  \r\n",
      "auth.txt");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->size(), 2u);
  ASSERT_NE(store->Find("AKIDTEMP"), nullptr);
  EXPECT_EQ(store->Find("AKIDTEMP")->session_token, "SESSION-TOKEN");

  absl::StatusOr<CredentialStore> bad = ParseAuthFile("AKID1 s1\nonlyonefield\n", "auth.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("auth.txt:2:"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseAuthFile("A s\nA t\n", "f").ok());
  EXPECT_FALSE(ParseAuthFile("# nothing\n", "f").ok());
}

}  // namespace
}  // namespace trainwatch::api::sigv4
