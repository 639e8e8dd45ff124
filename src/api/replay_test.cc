// Replays every request captured from the real AWS clients
// (tests/captures, copied from spec/captures) through the Api with SigV4
// enforced and the fake backend: each must verify, parse, and get an answer
// of the shape the capture server's answer had (which the real client
// parsed), or the same error code. Our answers are golden files under
// tests/golden/replay/.
#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/cbor.h"
#include "api/testing/fake_backend.h"
#include "api/testing/golden.h"
#include "api/testing/http_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "util/time_parse.h"

namespace trainwatch::api {
namespace {

namespace fs = std::filesystem;
using testing::FakeBackend;

constexpr char kRequestId[] = "c0ffee00-0000-4000-8000-000000000001";

fs::path CapturesDir() { return fs::path(TW_SOURCE_DIR) / "tests" / "captures"; }

std::string Between(const std::string& s, const std::string& open, const std::string& close) {
  size_t a = s.find(open);
  if (a == std::string::npos) return "";
  a += open.size();
  size_t b = s.find(close, a);
  return b == std::string::npos ? "" : s.substr(a, b - a);
}

bool IsCbor(const HttpResponse& r) {
  const std::string* type = r.headers.Find("smithy-protocol");
  return type != nullptr && *type == "rpc-v2-cbor";
}

// A JSON or CBOR body as a tree (discarded when it is neither).
nlohmann::json BodyTree(const HttpResponse& r) {
  if (IsCbor(r)) {
    absl::StatusOr<nlohmann::json> tree = DecodeCbor(r.body);
    return tree.ok() ? *tree : nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(r.body, nullptr, false);
}

// The error code a client reads from a response: XML Code, else the JSON or
// CBOR __type.
std::string ErrorCode(const HttpResponse& r) {
  std::string code = Between(r.body, "<Code>", "</Code>");
  if (!code.empty()) return code;
  nlohmann::json j = BodyTree(r);
  if (j.is_object() && j.contains("__type")) return j["__type"].get<std::string>();
  return "";
}

std::string XmlRoot(const std::string& body) {
  size_t a = body.find('<');
  if (a == std::string::npos) return "";
  size_t b = body.find_first_of(" >", a);
  return body.substr(a + 1, b - a - 1);
}

std::string HeaderOr(const HttpResponse& r, std::string_view name) {
  const std::string* v = r.headers.Find(name);
  return v ? *v : "";
}

// What we answer differently from the capture server, and why (all
// documented in spec/aws-api.md).
struct Expectation {
  int status;
  std::string code;  // empty: success
};
std::optional<Expectation> Deviation(const std::string& folder, const std::string& name,
                                     const HttpRequest& request) {
  // JSON and CBOR clients read the error's shape id; query clients its code.
  const bool shape_ids = request.headers.Has("X-Amz-Target") || folder == "cbor-botocore";
  if (name.find("GetMetricStatistics-ext") != std::string::npos) {
    // tm90 (trimmed mean) is LATER: InvalidParameterValue until implemented (§4.3).
    return Expectation{400, shape_ids
                                ? "com.amazonaws.cloudwatch#InvalidParameterValueException"
                                : "InvalidParameterValue"};
  }
  if (request.body.find("page-2") != std::string::npos) {
    // The capture server's made-up NextToken is not one of ours (§2.5).
    if (name.find("-sm-") != std::string::npos) return Expectation{400, "ValidationException"};
    return Expectation{400, shape_ids
                                ? "com.amazonaws.cloudwatch#InvalidParameterValueException"
                                : "InvalidParameterValue"};
  }
  if (name.find("nan-inf") != std::string::npos) {
    // Non-finite values are rejected (§4.4); the capture server accepted them.
    return Expectation{400, shape_ids
                                ? "com.amazonaws.cloudwatch#InvalidParameterValueException"
                                : "InvalidParameterValue"};
  }
  return std::nullopt;
}

// Members the capture server sent that we leave out on purpose: optional
// members absent for our (in-progress, single-page) data, and the deprecated
// uploadSequenceToken.
const std::set<std::string> kMayOmit = {
    "NextToken",         "uploadSequenceToken",    "DebugRuleEvaluationStatuses",
    "ProfilerRuleEvaluationStatuses", "FinalMetricDataList", "TrainingEndTime",
    "TrainingStartTime", "TrainingTimeInSeconds",  "BillableTimeInSeconds",
};

void ReplayFolder(const std::string& folder) {
  fs::path dir = CapturesDir() / folder;
  if (!fs::exists(dir)) GTEST_SKIP() << "no captures at " << dir;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    const std::string suffix = ".request.http";
    if (file.size() > suffix.size() && file.substr(file.size() - suffix.size()) == suffix) {
      names.push_back(file.substr(0, file.size() - suffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  ASSERT_FALSE(names.empty());

  // The captured data is dated 2025-01-15 12:00; the requests were signed on
  // 2026-11-30, so the clock skew check is off (spec captures/README.md).
  util::FakeClock clock(*util::ParseTimeMs("2025-01-15T12:05:00Z", 0));
  FakeBackend fake(clock);
  // The capture server answered a valid datum named "bad" with an error; the
  // fake store does the same, which replays the backend-error mapping.
  fake.RejectMetric("bad", absl::InvalidArgumentError(
                               "The parameter MetricData.member.1.Value must be a finite number."));
  bool creates_logs = std::any_of(names.begin(), names.end(), [](const std::string& n) {
    return n.find("CreateLogGroup") != std::string::npos;
  });
  if (!creates_logs) {
    ASSERT_TRUE(fake.CreateLogGroup("/aws/sagemaker/TrainingJobs", clock.NowMs()).ok());
    ASSERT_TRUE(
        fake.CreateLogStream({"/aws/sagemaker/TrainingJobs", "tw-demo-job-001/algo-1-1736942400"},
                             clock.NowMs())
            .ok());
  }
  sigv4::CredentialStore credentials;
  ASSERT_TRUE(credentials.Add({"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""}).ok());
  ApiOptions options;
  options.credentials = &credentials;
  options.verify.max_skew_ms = 0;
  options.request_id = [] { return std::string(kRequestId); };
  Api api(options, fake.backends(), clock);

  for (const std::string& name : names) {
    SCOPED_TRACE(folder + "/" + name);
    absl::StatusOr<std::string> raw =
        testing::ReadFileBytes((dir / (name + ".request.http")).string());
    ASSERT_TRUE(raw.ok());
    absl::StatusOr<HttpRequest> request = testing::ParseRawRequest(*raw);
    ASSERT_TRUE(request.ok()) << request.status();
    HttpResponse ours = api.Handle(*request);
    EXPECT_EQ(HeaderOr(ours, "x-amzn-RequestId"), kRequestId);
    testing::ExpectGolden(absl::StrFormat("replay/%s/%s.response.http", folder, name),
                          testing::FormatResponse(ours));

    std::optional<Expectation> deviation = Deviation(folder, name, *request);
    fs::path response_file = dir / (name + ".response.http");
    std::optional<HttpResponse> theirs;
    if (fs::exists(response_file)) {
      absl::StatusOr<std::string> bytes = testing::ReadFileBytes(response_file.string());
      ASSERT_TRUE(bytes.ok());
      absl::StatusOr<HttpResponse> parsed = testing::ParseRawResponse(*bytes);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      theirs = *parsed;
    }
    if (deviation) {
      EXPECT_EQ(ours.status, deviation->status) << ours.body;
      EXPECT_EQ(ErrorCode(ours), deviation->code) << ours.body;
      continue;
    }
    ASSERT_TRUE(theirs.has_value()) << "no response file and no documented deviation";
    EXPECT_EQ(ours.status, theirs->status) << ours.body;
    EXPECT_EQ(HeaderOr(ours, "Content-Type"), HeaderOr(*theirs, "Content-Type"));
    EXPECT_EQ(HeaderOr(ours, "smithy-protocol"), HeaderOr(*theirs, "smithy-protocol"));
    if (theirs->status != 200) {
      EXPECT_EQ(ErrorCode(ours), ErrorCode(*theirs)) << ours.body;
      std::string query_error = HeaderOr(*theirs, "x-amzn-query-error");
      if (!query_error.empty()) {
        EXPECT_EQ(HeaderOr(ours, "x-amzn-query-error"), query_error);
      }
      continue;
    }
    if (HeaderOr(*theirs, "Content-Type") == "text/xml") {
      EXPECT_EQ(XmlRoot(ours.body), XmlRoot(theirs->body));
      continue;
    }
    if (theirs->body.empty()) {
      EXPECT_EQ(ours.body, "") << "an operation without output";
      continue;
    }
    nlohmann::json expected = BodyTree(*theirs);
    nlohmann::json actual = BodyTree(ours);
    ASSERT_TRUE(actual.is_object()) << ours.body;
    for (const auto& [key, unused] : expected.items()) {
      if (kMayOmit.count(key)) continue;
      EXPECT_TRUE(actual.contains(key)) << "member " << key << " missing in " << ours.body;
    }
  }
}

TEST(CaptureReplay, DebianCliQuery) { ReplayFolder("debcli"); }
TEST(CaptureReplay, DebianBoto3Query) { ReplayFolder("debboto3"); }
TEST(CaptureReplay, PipCliJson) { ReplayFolder("pipcli"); }
TEST(CaptureReplay, PipBoto3Json) { ReplayFolder("pipboto3"); }
TEST(CaptureReplay, SmithyRpcV2Cbor) { ReplayFolder("cbor-botocore"); }

}  // namespace
}  // namespace trainwatch::api
