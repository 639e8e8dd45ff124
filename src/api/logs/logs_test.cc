// CloudWatch Logs operations through the Api and the fake backend.
#include "api/logs/logs.h"

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/testing/api_client.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using testing::LogsJson;

constexpr int64_t kNow = 1736942700000;  // 2025-01-15T12:05:00Z
constexpr char kGroup[] = "/aws/sagemaker/TrainingJobs";

class LogsTest : public ::testing::Test {
 protected:
  LogsTest() : clock_(kNow), fake_(clock_), api_(ApiOptions{}, fake_.backends(), clock_) {}

  nlohmann::json Call(std::string_view op, const nlohmann::json& body, int status = 200) {
    HttpResponse r = api_.Handle(LogsJson(op, body.dump()));
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(*r.headers.Find("Content-Type"), "application/x-amz-json-1.1");
    return nlohmann::json::parse(r.body, nullptr, false);
  }

  void PutLines(const std::string& stream, int n, int64_t first_ms) {
    nlohmann::json events = nlohmann::json::array();
    for (int i = 0; i < n; ++i) {
      events.push_back({{"timestamp", first_ms + i * 1000},
                        {"message", absl::StrFormat("epoch=%d train_loss=0.%d", i, 50 - i)}});
    }
    Call("PutLogEvents",
         {{"logGroupName", kGroup}, {"logStreamName", stream}, {"logEvents", events}});
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  Api api_;
};

TEST_F(LogsTest, MissingGroupAndStreamAreResourceNotFound) {
  nlohmann::json j = Call("GetLogEvents", {{"logGroupName", "/no/such/group"}, {"logStreamName", "x"}}, 400);
  EXPECT_EQ(j["__type"], "ResourceNotFoundException");
  EXPECT_EQ(j["message"], "The specified log group does not exist.");
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  j = Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "x"}}, 400);
  EXPECT_EQ(j["message"], "The specified log stream does not exist.");
  j = Call("CreateLogGroup", {{"logGroupName", kGroup}}, 400);
  EXPECT_EQ(j["__type"], "ResourceAlreadyExistsException");
}

TEST_F(LogsTest, FollowingForwardTokensEndsWithTheSameToken) {
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  Call("CreateLogStream", {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"}});
  PutLines("job/algo-1-1", 25, kNow - 60000);
  // The SageMaker SDK's tail loop: startFromHead, follow nextForwardToken
  // until a page is empty / the token comes back unchanged.
  std::vector<std::string> messages;
  std::optional<std::string> token;
  for (int calls = 0; calls < 10; ++calls) {
    nlohmann::json request = {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"},
                              {"startFromHead", true}, {"limit", 10}};
    if (token) request["nextToken"] = *token;
    nlohmann::json j = Call("GetLogEvents", request);
    for (const auto& e : j["events"]) messages.push_back(e["message"].get<std::string>());
    std::string next = j["nextForwardToken"].get<std::string>();
    // Opaque (a cursor, api/pagination.h) and short enough to send back.
    ASSERT_FALSE(next.empty());
    ASSERT_LE(next.size(), 1024u);
    if (token && next == *token) {
      EXPECT_TRUE(j["events"].empty());
      break;
    }
    token = next;
  }
  ASSERT_EQ(messages.size(), 25u);
  EXPECT_EQ(messages.front(), "epoch=0 train_loss=0.50");
  EXPECT_EQ(messages.back(), "epoch=24 train_loss=0.26");

  // New lines appear on the next call with the last token.
  PutLines("job/algo-1-1", 1, kNow);
  nlohmann::json j = Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"},
                                           {"startFromHead", true}, {"nextToken", *token}});
  ASSERT_EQ(j["events"].size(), 1u);

  // Without a token and startFromHead false: the newest page, ascending.
  j = Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"}, {"limit", 3}});
  ASSERT_EQ(j["events"].size(), 3u);
  EXPECT_EQ(j["events"][2]["message"], "epoch=0 train_loss=0.50");  // the one put last, at kNow
  EXPECT_LT(j["events"][0]["timestamp"].get<int64_t>(), j["events"][1]["timestamp"].get<int64_t>());
  // ... and going backward from there reaches the start.
  nlohmann::json back = Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"},
                                              {"nextToken", j["nextBackwardToken"]}, {"limit", 100}});
  EXPECT_EQ(back["events"].size(), 23u);
  EXPECT_EQ(Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "job/algo-1-1"},
                                  {"nextToken", "f/garbage"}}, 400)["__type"],
            "InvalidParameterException");
}

TEST_F(LogsTest, FilterPatternsAndPagination) {
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  for (const char* s : {"a/algo-1-1", "a/algo-2-1", "b/algo-1-1"}) {
    Call("CreateLogStream", {{"logGroupName", kGroup}, {"logStreamName", s}});
  }
  Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "a/algo-1-1"},
                        {"logEvents", {{{"timestamp", kNow - 3000}, {"message", "ERROR disk full"}},
                                       {{"timestamp", kNow - 1000}, {"message", "WARN slow step"}}}}});
  Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "a/algo-2-1"},
                        {"logEvents", {{{"timestamp", kNow - 2000}, {"message", "ERROR DEBUG retry"}},
                                       {{"timestamp", kNow}, {"message", "train_loss=0.1"}}}}});
  Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "b/algo-1-1"},
                        {"logEvents", {{{"timestamp", kNow - 2500}, {"message", "ERROR other job"}}}}});
  auto messages = [&](const nlohmann::json& request) {
    std::vector<std::string> out;
    nlohmann::json j = Call("FilterLogEvents", request);
    for (const auto& e : j["events"]) out.push_back(e["message"].get<std::string>());
    EXPECT_TRUE(j["searchedLogStreams"].empty());
    return out;
  };
  using V = std::vector<std::string>;
  nlohmann::json base = {{"logGroupName", kGroup}, {"logStreamNamePrefix", "a/"}};
  nlohmann::json q = base;
  q["filterPattern"] = "ERROR";
  EXPECT_EQ(messages(q), (V{"ERROR disk full", "ERROR DEBUG retry"}));
  q["filterPattern"] = "ERROR -DEBUG";
  EXPECT_EQ(messages(q), (V{"ERROR disk full"}));
  q["filterPattern"] = "?WARN ?DEBUG";
  EXPECT_EQ(messages(q), (V{"ERROR DEBUG retry", "WARN slow step"}));
  q["filterPattern"] = "\"train_loss=0\"";
  EXPECT_EQ(messages(q), (V{"train_loss=0.1"}));
  q = {{"logGroupName", kGroup}, {"logStreamNames", {"b/algo-1-1"}}, {"filterPattern", "ERROR"}};
  EXPECT_EQ(messages(q), (V{"ERROR other job"}));
  // endTime is inclusive.
  q = base;
  q["startTime"] = kNow - 2000;
  q["endTime"] = kNow;
  EXPECT_EQ(messages(q), (V{"ERROR DEBUG retry", "WARN slow step", "train_loss=0.1"}));

  // One event a page: every event exactly once, in time order across streams.
  V all;
  std::optional<std::string> token;
  for (int i = 0; i < 10; ++i) {
    nlohmann::json r = {{"logGroupName", kGroup}, {"limit", 1}};
    if (token) r["nextToken"] = *token;
    nlohmann::json j = Call("FilterLogEvents", r);
    for (const auto& e : j["events"]) all.push_back(e["message"].get<std::string>());
    if (!j.contains("nextToken")) break;
    token = j["nextToken"].get<std::string>();
  }
  EXPECT_EQ(all, (V{"ERROR disk full", "ERROR other job", "ERROR DEBUG retry", "WARN slow step",
                    "train_loss=0.1"}));

  for (const char* bad : {"\"unclosed", "{ $.level = }", "[a, b", "%a(b)%", "? x"}) {
    nlohmann::json j = Call("FilterLogEvents", {{"logGroupName", kGroup}, {"filterPattern", bad}}, 400);
    EXPECT_EQ(j["__type"], "InvalidParameterException") << bad;
    EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("Invalid filter pattern")) << bad;
  }
  nlohmann::json j = Call("FilterLogEvents", {{"logGroupName", kGroup}, {"logStreamNames", {"x"}},
                                              {"logStreamNamePrefix", "a"}}, 400);
  EXPECT_EQ(j["__type"], "InvalidParameterException");
}

TEST_F(LogsTest, DescribeLogStreamsOrdersAndPages) {
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  for (int i = 0; i < 7; ++i) {
    std::string s = absl::StrFormat("job/algo-1-%d", i);
    Call("CreateLogStream", {{"logGroupName", kGroup}, {"logStreamName", s}});
    PutLines(s, 1, kNow - (i * 7 % 5) * 1000);
  }
  std::vector<std::string> names;
  std::optional<std::string> token;
  do {
    nlohmann::json r = {{"logGroupName", kGroup}, {"logStreamNamePrefix", "job/"}, {"limit", 3}};
    if (token) r["nextToken"] = *token;
    nlohmann::json j = Call("DescribeLogStreams", r);
    for (const auto& s : j["logStreams"]) {
      names.push_back(s["logStreamName"].get<std::string>());
      EXPECT_EQ(s["arn"], "arn:aws:logs:us-east-1:000000000000:log-group:" + std::string(kGroup) +
                              ":log-stream:" + names.back());
      EXPECT_EQ(s["storedBytes"], 0);
      EXPECT_TRUE(s.contains("lastEventTimestamp"));
    }
    token.reset();
    if (j.contains("nextToken")) token = j["nextToken"].get<std::string>();
  } while (token && names.size() < 20);
  ASSERT_EQ(names.size(), 7u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  nlohmann::json j = Call("DescribeLogStreams", {{"logGroupIdentifier",
      "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/TrainingJobs:*"},
      {"orderBy", "LastEventTime"}, {"descending", true}});
  int64_t previous = INT64_MAX;
  for (const auto& s : j["logStreams"]) {
    EXPECT_LE(s["lastEventTimestamp"].get<int64_t>(), previous);
    previous = s["lastEventTimestamp"].get<int64_t>();
  }
  j = Call("DescribeLogStreams", {{"logGroupName", kGroup}, {"orderBy", "LastEventTime"},
                                  {"logStreamNamePrefix", "job/"}}, 400);
  EXPECT_EQ(j["__type"], "InvalidParameterException");
  j = Call("DescribeLogStreams", {{"logGroupName", "bad name!"}}, 400);
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("1 validation error detected: Value 'bad name!' at 'logGroupName' failed "
                        "to satisfy constraint: Member must satisfy regular expression pattern"));
  j = Call("DescribeLogGroups", {{"logGroupNamePrefix", "/aws"}});
  ASSERT_EQ(j["logGroups"].size(), 1u);
  EXPECT_EQ(j["logGroups"][0]["arn"], "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/TrainingJobs:*");
}

TEST_F(LogsTest, PutLogEventsRules) {
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  Call("CreateLogStream", {{"logGroupName", kGroup}, {"logStreamName", "s"}});
  nlohmann::json j = Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"},
      {"logEvents", {{{"timestamp", kNow}, {"message", "b"}}, {{"timestamp", kNow - 1}, {"message", "a"}}}}}, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("chronological order"));
  // Too old and too new events are rejected one by one; the rest is stored.
  j = Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"},
      {"logEvents", {{{"timestamp", kNow - 14LL * 86400000 - 3600000}, {"message", "old"}},
                     {{"timestamp", kNow - 14LL * 86400000 + 3600000}, {"message", "ok1"}}}}});
  EXPECT_EQ(j["rejectedLogEventsInfo"]["tooOldLogEventEndIndex"], 1);
  EXPECT_TRUE(j.contains("nextSequenceToken"));
  j = Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"},
      {"logEvents", {{{"timestamp", kNow}, {"message", "ok2"}},
                     {{"timestamp", kNow + 3 * 3600000}, {"message", "new"}}}}});
  EXPECT_EQ(j["rejectedLogEventsInfo"]["tooNewLogEventStartIndex"], 1);
  j = Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"},
      {"logEvents", {{{"timestamp", kNow - 25 * 3600000}, {"message", "a"}},
                     {{"timestamp", kNow}, {"message", "b"}}}}}, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("cannot span more than 24 hours"));
  j = Call("GetLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"}, {"startFromHead", true}});
  ASSERT_EQ(j["events"].size(), 2u);
  EXPECT_EQ(j["events"][1]["message"], "ok2");
  j = Call("PutLogEvents", {{"logGroupName", kGroup}, {"logStreamName", "s"},
      {"logEvents", {{{"timestamp", kNow}, {"message", ""}}}}}, 400);
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("at 'logEvents.1.member.message'"));
}

TEST_F(LogsTest, RetentionAndDeletesAnswerAsAwsDoes) {
  nlohmann::json j = Call("PutRetentionPolicy", {{"logGroupName", kGroup}, {"retentionInDays", 2}}, 400);
  EXPECT_EQ(j["__type"], "InvalidParameterException");
  EXPECT_EQ(j["message"],
            "1 validation error detected: Value '2' at 'retentionInDays' failed to satisfy "
            "constraint: Member must satisfy enum value set: [1, 3, 5, 7, 14, 30, 60, 90, 120, "
            "150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653]");
  j = Call("PutRetentionPolicy", {{"logGroupName", kGroup}, {"retentionInDays", 1}}, 400);
  EXPECT_EQ(j["__type"], "ResourceNotFoundException");
  EXPECT_EQ(j["message"], "The specified log group does not exist.");
  Call("CreateLogGroup", {{"logGroupName", kGroup}});
  Call("PutRetentionPolicy", {{"logGroupName", kGroup}, {"retentionInDays", 1}});
  j = Call("DescribeLogGroups", nlohmann::json::object());
  EXPECT_EQ(j["logGroups"][0]["retentionInDays"], 1);
  j = Call("PutLogEvents", {{"logGroupName", kGroup},
                            {"logStreamName", "s"},
                            {"logEvents", {{{"timestamp", kNow}, {"message", "x"}}}}},
           400);
  EXPECT_EQ(j["message"], "The specified log stream does not exist.");
  Call("CreateLogStream", {{"logGroupName", kGroup}, {"logStreamName", "s"}});
  // Every event older than the retention: 200, nothing stored.
  j = Call("PutLogEvents", {{"logGroupName", kGroup},
                            {"logStreamName", "s"},
                            {"logEvents", {{{"timestamp", kNow - 2 * 86400000LL}, {"message", "x"}}}}});
  EXPECT_EQ(j["rejectedLogEventsInfo"], nlohmann::json({{"expiredLogEventEndIndex", 1}}));
  Call("DeleteRetentionPolicy", {{"logGroupName", kGroup}});
  j = Call("DescribeLogGroups", nlohmann::json::object());
  EXPECT_FALSE(j["logGroups"][0].contains("retentionInDays"));
  j = Call("DeleteLogStream", {{"logGroupName", kGroup}, {"logStreamName", "t"}}, 400);
  EXPECT_EQ(j["message"], "The specified log stream does not exist.");
  Call("DeleteLogStream", {{"logGroupName", kGroup}, {"logStreamName", "s"}});
  Call("DeleteLogGroup", {{"logGroupName", kGroup}});
  j = Call("DeleteLogGroup", {{"logGroupName", kGroup}}, 400);
  EXPECT_EQ(j["__type"], "ResourceNotFoundException");
  EXPECT_EQ(j["message"], "The specified log group does not exist.");
}

}  // namespace
}  // namespace trainwatch::api
