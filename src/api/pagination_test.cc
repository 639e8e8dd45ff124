// Every paginated answer pages with the one cursor (query/cursor.h): for each
// kind, paging walks every item exactly once, and a token that was altered or
// is sent with another query is refused with the operation's own error code
// and a message that says why.
#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/native/native_api.h"
#include "api/testing/api_client.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr int64_t kNow = 1736942700000;  // 2025-01-15T12:05:00Z
constexpr char kAltered[] = "not a token this trainwatch issued";
constexpr char kOtherQuery[] = "issued for a request with other parameters";

std::string Altered(std::string token) {
  token[token.size() / 2] = token[token.size() / 2] == 'A' ? 'B' : 'A';
  return token;
}

class PaginationTest : public ::testing::Test {
 protected:
  PaginationTest()
      : clock_(kNow),
        fake_(clock_),
        api_(ApiOptions{}, fake_.backends(), clock_),
        native_(NativeOptions{}, fake_.backends(), clock_) {}

  Json Call(const HttpRequest& request, int status = 200) {
    HttpResponse r = api_.Handle(request);
    EXPECT_EQ(r.status, status) << r.body;
    return Json::parse(r.body, nullptr, false);
  }
  Json Logs(std::string_view op, const Json& body, int status = 200) {
    return Call(testing::LogsJson(op, body.dump()), status);
  }
  Json CloudWatch(std::string_view op, const Json& body, int status = 200) {
    return Call(testing::CloudWatchJson(op, body.dump()), status);
  }
  Json Native(const std::string& target, int status = 200) {
    HttpRequest r;
    r.method = "GET";
    r.target = target;
    HttpResponse out = native_.Handle(r);
    EXPECT_EQ(out.status, status) << out.body;
    return Json::parse(out.body, nullptr, false);
  }

  void PutMetrics(const std::string& ns, int metrics, int points) {
    Json data = Json::array();
    for (int m = 0; m < metrics; ++m) {
      for (int p = 0; p < points; ++p) {
        data.push_back({{"MetricName", absl::StrFormat("m%03d", m)},
                        {"Value", p},
                        {"Timestamp", (kNow - 3600000 + p * 60000) / 1000},
                        {"StorageResolution", 1}});
      }
    }
    CloudWatch("PutMetricData", {{"Namespace", ns}, {"MetricData", data}});
  }

  void PutLines(const std::string& group, const std::string& stream, int n) {
    Logs("CreateLogGroup", {{"logGroupName", group}}, CreatedOrExists(group));
    Logs("CreateLogStream", {{"logGroupName", group}, {"logStreamName", stream}});
    Json events = Json::array();
    for (int i = 0; i < n; ++i) {
      events.push_back({{"timestamp", kNow - 60000 + i * 100},
                        {"message", absl::StrFormat("line %d of %s", i, stream)}});
    }
    Logs("PutLogEvents", {{"logGroupName", group}, {"logStreamName", stream}, {"logEvents", events}});
  }
  int CreatedOrExists(const std::string& group) {
    return groups_.insert(group).second ? 200 : 400;
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  Api api_;
  NativeApi native_;
  std::set<std::string> groups_;
};

TEST_F(PaginationTest, ListMetrics) {
  PutMetrics("A", 600, 1);
  PutMetrics("B", 3, 1);
  Json p1 = CloudWatch("ListMetrics", {{"Namespace", "A"}});
  ASSERT_EQ(p1["Metrics"].size(), 500u);
  ASSERT_TRUE(p1.contains("NextToken"));
  Json p2 = CloudWatch("ListMetrics", {{"Namespace", "A"}, {"NextToken", p1["NextToken"]}});
  EXPECT_EQ(p2["Metrics"].size(), 100u);
  EXPECT_FALSE(p2.contains("NextToken"));
  EXPECT_EQ(p2["Metrics"][0]["MetricName"], "m500");

  Json bad = CloudWatch("ListMetrics",
                        {{"Namespace", "A"}, {"NextToken", Altered(p1["NextToken"])}}, 400);
  EXPECT_THAT(bad["__type"].get<std::string>(), HasSubstr("InvalidParameterValue")) << bad;
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other =
      CloudWatch("ListMetrics", {{"Namespace", "B"}, {"NextToken", p1["NextToken"]}}, 400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, GetMetricData) {
  PutMetrics("A", 2, 30);
  auto request = [](int period, const Json& token) {
    Json q = {{"Id", "a"},
              {"MetricStat",
               {{"Metric", {{"Namespace", "A"}, {"MetricName", "m000"}}},
                {"Period", period},
                {"Stat", "Sum"}}}};
    Json body = {{"MetricDataQueries", {q}},
                 {"StartTime", (kNow - 7200000) / 1000},
                 {"EndTime", kNow / 1000},
                 {"MaxDatapoints", 7}};
    if (!token.is_null()) body["NextToken"] = token;
    return body;
  };
  std::set<int64_t> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json j = CloudWatch("GetMetricData", request(60, token));
    for (const Json& t : j["MetricDataResults"][0]["Timestamps"]) {
      EXPECT_TRUE(seen.insert(t.get<int64_t>()).second) << "twice: " << t;
    }
    if (!j.contains("NextToken")) break;
    token = j["NextToken"];
  }
  EXPECT_EQ(seen.size(), 30u);

  Json first = CloudWatch("GetMetricData", request(60, Json()));
  ASSERT_TRUE(first.contains("NextToken"));
  Json bad = CloudWatch("GetMetricData", request(60, Altered(first["NextToken"])), 400);
  EXPECT_THAT(bad["__type"].get<std::string>(), HasSubstr("InvalidNextToken")) << bad;
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other = CloudWatch("GetMetricData", request(120, first["NextToken"]), 400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, DescribeLogGroups) {
  for (int i = 0; i < 5; ++i) PutLines(absl::StrFormat("/g/%d", i), "s", 1);
  std::set<std::string> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json body = {{"limit", 2}};
    if (!token.is_null()) body["nextToken"] = token;
    Json j = Logs("DescribeLogGroups", body);
    for (const Json& g : j["logGroups"]) EXPECT_TRUE(seen.insert(g["logGroupName"]).second);
    if (!j.contains("nextToken")) break;
    token = j["nextToken"];
  }
  EXPECT_EQ(seen.size(), 5u);
  Json first = Logs("DescribeLogGroups", {{"limit", 2}});
  Json bad = Logs("DescribeLogGroups", {{"limit", 2}, {"nextToken", Altered(first["nextToken"])}},
                  400);
  EXPECT_EQ(bad["__type"], "InvalidParameterException");
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other = Logs("DescribeLogGroups",
                    {{"limit", 2}, {"logGroupNamePrefix", "/g/"}, {"nextToken", first["nextToken"]}},
                    400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, DescribeLogStreams) {
  for (int i = 0; i < 5; ++i) PutLines("/g", absl::StrFormat("s%d", i), 1);
  PutLines("/h", "s0", 1);
  std::set<std::string> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json body = {{"logGroupName", "/g"}, {"limit", 2}};
    if (!token.is_null()) body["nextToken"] = token;
    Json j = Logs("DescribeLogStreams", body);
    for (const Json& s : j["logStreams"]) EXPECT_TRUE(seen.insert(s["logStreamName"]).second);
    if (!j.contains("nextToken")) break;
    token = j["nextToken"];
  }
  EXPECT_EQ(seen.size(), 5u);
  Json first = Logs("DescribeLogStreams", {{"logGroupName", "/g"}, {"limit", 2}});
  Json bad = Logs("DescribeLogStreams",
                  {{"logGroupName", "/g"}, {"limit", 2}, {"nextToken", Altered(first["nextToken"])}},
                  400);
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other = Logs("DescribeLogStreams",
                    {{"logGroupName", "/h"}, {"limit", 2}, {"nextToken", first["nextToken"]}}, 400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, GetLogEvents) {
  PutLines("/g", "a", 10);
  PutLines("/g", "b", 10);
  std::set<std::string> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json body = {{"logGroupName", "/g"}, {"logStreamName", "a"}, {"limit", 3},
                 {"startFromHead", true}};
    if (!token.is_null()) body["nextToken"] = token;
    Json j = Logs("GetLogEvents", body);
    for (const Json& e : j["events"]) EXPECT_TRUE(seen.insert(e["message"]).second);
    if (j["nextForwardToken"] == token) break;  // the end: the token comes back unchanged
    token = j["nextForwardToken"];
  }
  EXPECT_EQ(seen.size(), 10u);
  // A follower that began before the one cursor keeps going with its old token.
  Json old = Logs("GetLogEvents",
                  {{"logGroupName", "/g"}, {"logStreamName", "a"}, {"limit", 1},
                   {"nextToken", absl::StrFormat("f/%016d%020d%020d", 0, 0, 0)}});
  ASSERT_EQ(old["events"].size(), 1u);
  EXPECT_EQ(old["events"][0]["message"], "line 0 of a");
  Json bad = Logs("GetLogEvents",
                  {{"logGroupName", "/g"}, {"logStreamName", "a"}, {"nextToken", Altered(token)}},
                  400);
  EXPECT_EQ(bad["__type"], "InvalidParameterException");
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other =
      Logs("GetLogEvents", {{"logGroupName", "/g"}, {"logStreamName", "b"}, {"nextToken", token}},
           400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, FilterLogEvents) {
  PutLines("/g", "a", 10);
  std::set<std::string> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json body = {{"logGroupName", "/g"}, {"limit", 3}, {"filterPattern", "line"}};
    if (!token.is_null()) body["nextToken"] = token;
    Json j = Logs("FilterLogEvents", body);
    for (const Json& e : j["events"]) EXPECT_TRUE(seen.insert(e["message"]).second);
    if (!j.contains("nextToken")) break;
    token = j["nextToken"];
  }
  EXPECT_EQ(seen.size(), 10u);
  Json first = Logs("FilterLogEvents", {{"logGroupName", "/g"}, {"limit", 3}});
  ASSERT_TRUE(first.contains("nextToken"));
  Json bad = Logs("FilterLogEvents",
                  {{"logGroupName", "/g"}, {"limit", 3}, {"nextToken", Altered(first["nextToken"])}},
                  400);
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other = Logs("FilterLogEvents",
                    {{"logGroupName", "/g"}, {"limit", 3}, {"filterPattern", "?line ?x"},
                     {"nextToken", first["nextToken"]}},
                    400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, ListTrainingJobs) {
  for (int i = 0; i < 5; ++i) {
    model::JobRecord job;
    job.name = absl::StrFormat("job-%d", i);
    job.creation_ms = kNow - 10000 + i;
    job.last_modified_ms = kNow;
    job.status = model::JobStatus::kCompleted;
    fake_.SetJob(job);
  }
  auto list = [&](const Json& body, int status = 200) {
    return Call(testing::SageMakerJson("ListTrainingJobs", body.dump()), status);
  };
  std::set<std::string> seen;
  Json token;
  for (int page = 0; page < 10; ++page) {
    Json body = {{"MaxResults", 2}};
    if (!token.is_null()) body["NextToken"] = token;
    Json j = list(body);
    for (const Json& s : j["TrainingJobSummaries"]) {
      EXPECT_TRUE(seen.insert(s["TrainingJobName"]).second);
    }
    if (!j.contains("NextToken")) break;
    token = j["NextToken"];
  }
  EXPECT_EQ(seen.size(), 5u);
  Json first = list({{"MaxResults", 2}});
  Json bad = list({{"MaxResults", 2}, {"NextToken", Altered(first["NextToken"])}}, 400);
  EXPECT_EQ(bad["__type"], "ValidationException");
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr(kAltered));
  Json other = list({{"MaxResults", 2}, {"SortBy", "Name"}, {"NextToken", first["NextToken"]}},
                    400);
  EXPECT_THAT(other["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

TEST_F(PaginationTest, NativeMetricsAndLogEvents) {
  PutMetrics("A", 5, 1);
  PutMetrics("B", 5, 1);
  Json p1 = Native("/api/v1/metrics?namespace=A&limit=2");
  ASSERT_EQ(p1["metrics"].size(), 2u);
  std::string next = p1["next"];
  Json p2 = Native("/api/v1/metrics?namespace=A&limit=2&after=" + next);
  EXPECT_EQ(p2["metrics"][0]["metric"], "m002");
  Json other = Native("/api/v1/metrics?namespace=B&limit=2&after=" + next, 400);
  EXPECT_THAT(other["error"]["message"].get<std::string>(), HasSubstr(kOtherQuery));
  Json bad = Native("/api/v1/metrics?namespace=A&limit=2&after=" + Altered(next), 400);
  EXPECT_THAT(bad["error"]["message"].get<std::string>(), HasSubstr(kAltered));

  PutLines("/g", "a", 4);
  PutLines("/g", "b", 4);
  Json e1 = Native("/api/v1/logs/events?group=/g&stream=a&limit=3");
  ASSERT_EQ(e1["events"].size(), 3u);
  Json e2 = Native("/api/v1/logs/events?group=/g&stream=a&limit=3&after=" +
                   e1["next"].get<std::string>());
  EXPECT_EQ(e2["events"].size(), 1u);
  Json wrong = Native("/api/v1/logs/events?group=/g&stream=b&after=" +
                      e1["next"].get<std::string>(),
                      400);
  EXPECT_THAT(wrong["error"]["message"].get<std::string>(), HasSubstr(kOtherQuery));
}

}  // namespace
}  // namespace trainwatch::api
