// Api-level behaviour: routing (spec §1.3), limits, decoders, errors.
#include "api/api.h"

#include "api/cbor.h"

#include "absl/strings/str_format.h"
#include "api/form.h"
#include "api/input.h"
#include "api/testing/api_client.h"
#include "api/testing/fake_backend.h"
#include "api/testing/golden.h"
#include "api/testing/http_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using testing::CloudWatchJson;
using testing::QueryRequest;

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() : fake_(clock_), api_(Options(), fake_.backends(), clock_) {}
  static ApiOptions Options() {
    ApiOptions o;
    o.request_id = [] { return std::string("c0ffee00-0000-4000-8000-000000000001"); };
    return o;
  }
  util::FakeClock clock_;
  testing::FakeBackend fake_;
  Api api_;
};

TEST_F(ApiTest, RoutesEveryProtocolAndAnswersUnknownsInKind) {
  HttpRequest r = QueryRequest("Frobnicate", "");
  HttpResponse out = api_.Handle(r);
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("<Code>InvalidAction</Code>"));
  EXPECT_EQ(*out.headers.Find("x-amzn-RequestId"), "c0ffee00-0000-4000-8000-000000000001");

  r.body = "Version=2010-08-01";
  EXPECT_THAT(api_.Handle(r).body, HasSubstr("<Code>MissingAction</Code>"));

  out = api_.Handle(QueryRequest("PutDashboard", "DashboardName=x"));
  EXPECT_THAT(out.body, HasSubstr("not implemented by trainwatch"));
  // The alarm operations need the server's alarm service.
  out = api_.Handle(QueryRequest("DescribeAlarms", ""));
  EXPECT_THAT(out.body, HasSubstr("alarm service"));

  out = api_.Handle(CloudWatchJson("Frobnicate", "{}"));
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("\"__type\":\"UnknownOperationException\""));
  EXPECT_EQ(*out.headers.Find("x-amzn-query-error"), "InvalidAction;Sender");

  HttpRequest unknown = testing::LogsJson("Op", "{}");
  unknown.headers.Set("X-Amz-Target", "DynamoDB_20120810.GetItem");
  out = api_.Handle(unknown);
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("UnknownOperationException"));

  HttpRequest plain;
  plain.method = "POST";
  plain.headers.Add("Content-Type", "text/plain");
  out = api_.Handle(plain);
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("<ErrorResponse"));

  HttpRequest cbor;
  cbor.target = "/service/GraniteServiceVersion20100801/operation/ListMetrics";
  cbor.headers.Add("smithy-protocol", "rpc-v2-cbor");
  cbor.headers.Add("Content-Type", "application/cbor");
  out = api_.Handle(cbor);
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(*out.headers.Find("smithy-protocol"), "rpc-v2-cbor");
  EXPECT_EQ(*out.headers.Find("Content-Type"), "application/cbor");
  EXPECT_EQ(static_cast<unsigned char>(out.body[0]), 0xA1);  // {"Metrics": [...]}

  HttpRequest cbor_without_operation;
  cbor_without_operation.target = "/";
  cbor_without_operation.headers.Add("smithy-protocol", "rpc-v2-cbor");
  out = api_.Handle(cbor_without_operation);
  EXPECT_EQ(out.status, 400);
  EXPECT_EQ(*out.headers.Find("Content-Type"), "application/cbor");
  EXPECT_EQ(static_cast<unsigned char>(out.body[0]), 0xA2);  // {"__type", "message"}
  EXPECT_THAT(out.body, HasSubstr("names its operation in the path"));

  HttpRequest bad_cbor = cbor;
  bad_cbor.body = std::string("\xa1\x61", 2);
  out = api_.Handle(bad_cbor);
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("InvalidParameterValue"));
  EXPECT_THAT(out.body, HasSubstr("The CBOR body ends inside an item at byte 1"));

  // Any path is accepted (botocore appends the endpoint URL's path).
  HttpRequest with_path = CloudWatchJson("ListMetrics", "{}");
  with_path.target = "/some/prefix";
  EXPECT_EQ(api_.Handle(with_path).status, 200);
}

TEST_F(ApiTest, CborAnswersAStatisticAskedTwiceOnceAsJsonDoes) {
  const int64_t now = clock_.NowMs() / 60000 * 60000;
  ASSERT_TRUE(fake_.PutSeries("T", "m", {}, {{now - 120000, 2.0}, {now - 60000, 4.0}}).ok());
  CborWriter in;
  in.MapHeader(6);
  in.Text("Namespace");
  in.Text("T");
  in.Text("MetricName");
  in.Text("m");
  in.Text("StartTime");
  in.Timestamp(now - 600000);
  in.Text("EndTime");
  in.Timestamp(now);
  in.Text("Period");
  in.Double(60);
  in.Text("Statistics");
  in.ArrayHeader(2);
  in.Text("Average");
  in.Text("Average");
  HttpRequest r;
  r.target = "/service/GraniteServiceVersion20100801/operation/GetMetricStatistics";
  r.headers.Add("smithy-protocol", "rpc-v2-cbor");
  r.headers.Add("Content-Type", "application/cbor");
  r.body = in.Take();
  HttpResponse out = api_.Handle(r);
  ASSERT_EQ(out.status, 200) << out.body;
  // Each datapoint: a map of Timestamp, Unit and one Average (3 pairs).
  size_t averages = 0;
  for (size_t at = out.body.find("gAverage"); at != std::string::npos;
       at = out.body.find("gAverage", at + 1)) {
    ++averages;
    EXPECT_EQ(static_cast<unsigned char>(out.body[out.body.rfind("iTimestamp", at) - 1]), 0xA3);
  }
  EXPECT_EQ(averages, 2u) << "one Average a datapoint";
  absl::StatusOr<nlohmann::json> tree = DecodeCbor(out.body);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)["Datapoints"].size(), 2u);
}

TEST_F(ApiTest, BodyLimitsAndMalformedJson) {
  HttpRequest big = CloudWatchJson("PutMetricData", std::string(1048577, ' '));
  HttpResponse out = api_.Handle(big);
  EXPECT_EQ(out.status, 413);
  EXPECT_THAT(out.body, HasSubstr("RequestEntityTooLarge"));
  EXPECT_EQ(api_.Handle(CloudWatchJson("ListMetrics", std::string(1048576, ' '))).status, 200);

  for (std::string bad : std::vector<std::string>{"{", "[]", "\"x\"", "{\"a\":}", std::string(100000, '[')}) {
    out = api_.Handle(CloudWatchJson("ListMetrics", bad));
    EXPECT_EQ(out.status, 400) << bad.substr(0, 10);
    EXPECT_EQ(*out.headers.Find("x-amzn-query-error"), "InvalidParameterValue;Sender");
  }
  out = api_.Handle(testing::SageMakerJson("DescribeTrainingJob", "{\"TrainingJobName\": 5}"));
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("Member must be a string"));
  HttpRequest deflate = CloudWatchJson("ListMetrics", "{}");
  deflate.headers.Add("Content-Encoding", "br");
  EXPECT_THAT(api_.Handle(deflate).body, HasSubstr("Content-Encoding br is not supported"));
}

TEST(Form, DecodesStructuresListsMapsAndEmptyLists) {
  absl::StatusOr<nlohmann::json> tree = DecodeForm(
      "Action=PutMetricData&Namespace=%2Faws%2Fx+y&MetricData.member.2.MetricName=b"
      "&MetricData.member.1.MetricName=a&MetricData.member.1.Dimensions="
      "&MetricData.member.2.Values.member.1=1&Tags.entry.1.key=k&Tags.entry.1.value=v");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)["Namespace"], "/aws/x y");
  EXPECT_EQ((*tree)["MetricData"][0]["MetricName"], "a");
  EXPECT_EQ((*tree)["MetricData"][1]["MetricName"], "b");
  EXPECT_EQ((*tree)["MetricData"][0]["Dimensions"], "");
  EXPECT_EQ((*tree)["MetricData"][1]["Values"][0], "1");
  EXPECT_EQ((*tree)["Tags"]["k"], "v");

  for (const char* bad : {"a.member.1=x&a.member.3=y", "a.member.0=x", "a.member.01=x",
                          "a=1&a=2", "a=1&a.b=2", "a.member.1=x&a.other=y", "a..b=1", "a=%zz",
                          "a=%4"}) {
    EXPECT_FALSE(DecodeForm(bad).ok()) << bad;
  }
  std::string deep = "a";
  for (int i = 0; i < 40; ++i) deep += ".b";
  EXPECT_FALSE(DecodeForm(deep + "=1").ok());
}

TEST(Input, TimestampsNumbersAndBooleansInBothSyntaxes) {
  EXPECT_EQ(*ParseIso8601Ms("2025-01-15T12:00:01Z"), 1736942401000);
  EXPECT_EQ(*ParseIso8601Ms("2025-01-15T12:00:01.250000Z"), 1736942401250);
  EXPECT_EQ(*ParseIso8601Ms("2025-01-15T12:00:01.123456789Z"), 1736942401123);
  EXPECT_EQ(*ParseIso8601Ms("2025-01-15T13:00:01+01:00"), 1736942401000);
  EXPECT_EQ(*ParseIso8601Ms("2025-01-15T11:00:01-0100"), 1736942401000);
  for (const char* bad : {"2025-01-15T12:00:01", "2025-01-15 12:00:01Z", "2025-02-30T00:00:00Z",
                          "2025-01-15T12:00:01.Z", "2025-01-15T12:00:01.1234567890Z",
                          "2025-01-15T24:00:00Z", "1736942401"}) {
    EXPECT_FALSE(ParseIso8601Ms(bad).has_value()) << bad;
  }
  nlohmann::json query = {{"i", "60"}, {"d", "1e-05"}, {"n", "nan"}, {"b", "true"},
                          {"t", "2025-01-15T12:00:01Z"}, {"hex", "0x10"}, {"sp", " 1"}};
  Node q(query, Syntax::kQuery, PathStyle::kQuery);
  EXPECT_EQ(*q["i"].Int(), 60);
  EXPECT_EQ(*q["d"].Double(), 1e-05);
  EXPECT_TRUE(std::isnan(*q["n"].Double()));
  EXPECT_TRUE(*q["b"].Bool());
  EXPECT_EQ(*q["t"].TimestampMs(), 1736942401000);
  EXPECT_FALSE(q["hex"].Double().ok());
  EXPECT_FALSE(q["sp"].Int().ok());
  nlohmann::json json = {{"t", 1736942401}, {"f", 1736942401.25}, {"inf", "Infinity"},
                         {"i", 60.0}, {"s", "60"}};
  Node j(json, Syntax::kJson, PathStyle::kQuery);
  EXPECT_EQ(*j["t"].TimestampMs(), 1736942401000);
  EXPECT_EQ(*j["f"].TimestampMs(), 1736942401250);
  EXPECT_TRUE(std::isinf(*j["inf"].Double()));
  EXPECT_EQ(*j["i"].Int(), 60);
  EXPECT_FALSE(j["s"].Int().ok());  // JSON integers are numbers
  absl::Status type_error = j["s"].Int().status();
  EXPECT_THAT(std::string(type_error.message()), HasSubstr("for parameter s"));
}

// errors.cc's mapping, one line per (service, protocol, status): golden.
TEST(Errors, MappingGolden) {
  std::vector<absl::Status> statuses = {
      InvalidParameterValue("bad value"),
      MissingParameter("missing"),
      InvalidParameterCombination("both"),
      ValidationError("bad id"),
      AwsStatus("InvalidNextToken", "token"),
      NotImplemented("PutMetricAlarm"),
      RequestEntityTooLarge("too big"),
      AwsStatus("MissingAuthenticationToken", "Missing Authentication Token"),
      AwsStatus("IncompleteSignature", "incomplete"),
      AwsStatus("InvalidClientTokenId", "The security token included in the request is invalid."),
      AwsStatus("SignatureDoesNotMatch", "mismatch"),
      ResourceNotFoundException("The specified log group does not exist."),
      ValidationException("Requested resource not found."),
      AwsStatus("ResourceInUse", "exists"),
      absl::InvalidArgumentError("plain invalid argument"),
      absl::NotFoundError("plain not found"),
      absl::AlreadyExistsError("plain already exists"),
      absl::FailedPreconditionError("plain failed precondition"),
      absl::ResourceExhaustedError("plain resource exhausted"),
      absl::UnavailableError("plain unavailable"),
      absl::InternalError("plain internal"),
      absl::UnimplementedError("plain unimplemented"),
  };
  std::string out;
  for (auto [service, protocol] :
       {std::pair{Service::kCloudWatch, Protocol::kQuery}, {Service::kCloudWatch, Protocol::kJson10},
        {Service::kLogs, Protocol::kJson11}, {Service::kSageMaker, Protocol::kJson11}}) {
    for (const absl::Status& s : statuses) {
      AwsError e = ToAwsError(service, protocol, s);
      out += absl::StrFormat("%s %s | %s %s | %d %s %s query-error=%s %s | %s\n",
                             ServiceName(service), ProtocolName(protocol),
                             absl::StatusCodeToString(s.code()), AwsCodeOf(s).value_or("-"),
                             e.http_status, e.code, e.json_type,
                             e.query_error.empty() ? "-" : e.query_error,
                             e.sender ? "Sender" : "Receiver", e.message);
    }
  }
  testing::ExpectGolden("errors.txt", out);
  // And the wire form of one error per protocol.
  absl::Status s = InvalidParameterValue("The parameter MetricData.member.1.Value must be a finite number.");
  for (Protocol p : {Protocol::kQuery, Protocol::kJson10, Protocol::kCbor}) {
    testing::ExpectGolden(absl::StrFormat("error_%s.http", ProtocolName(p)),
                          testing::FormatResponse(ErrorResponse(Service::kCloudWatch, p, s,
                                                                "c0ffee00-0000-4000-8000-000000000001")));
  }
}

}  // namespace
}  // namespace trainwatch::api
