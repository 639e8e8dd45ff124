// CloudWatch metric operations end to end through the Api and the fake backend.
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "util/gzip.h"
#include "api/testing/api_client.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "util/time_parse.h"

namespace trainwatch::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::CloudWatchJson;
using testing::QueryRequest;

// 2025-01-15T12:05:00Z
constexpr int64_t kNow = 1736942700000;

class CloudWatchTest : public ::testing::Test {
 protected:
  CloudWatchTest() : clock_(kNow), fake_(clock_), api_(ApiOptions{}, fake_.backends(), clock_) {}

  nlohmann::json Json(const HttpRequest& r, int status = 200) {
    HttpResponse response = api_.Handle(r);
    EXPECT_EQ(response.status, status) << response.body;
    return nlohmann::json::parse(response.body, nullptr, false);
  }
  HttpResponse Call(const HttpRequest& r) { return api_.Handle(r); }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  Api api_;
};

model::SeriesKey Key(std::string metric, std::vector<model::Dimension> dims, std::string unit) {
  return *model::MakeSeriesKey("Train", std::move(metric), std::move(dims), std::move(unit));
}

TEST_F(CloudWatchTest, QueryAndJsonStoreTheSameData) {
  // The same three datums (value, statistic set, values/counts) in both protocols.
  HttpResponse q = Call(QueryRequest(
      "PutMetricData",
      "Namespace=Train&MetricData.member.1.MetricName=loss"
      "&MetricData.member.1.Dimensions.member.1.Name=Job&MetricData.member.1.Dimensions.member.1."
      "Value=a&MetricData.member.1.Timestamp=2025-01-15T12%3A00%3A01Z&MetricData.member.1.Value=0."
      "52&MetricData.member.1.StorageResolution=1"
      "&MetricData.member.2.MetricName=gpu&MetricData.member.2.Timestamp=2025-01-15T12:00:02Z"
      "&MetricData.member.2.StatisticValues.SampleCount=10&MetricData.member.2.StatisticValues.Sum="
      "875&MetricData.member.2.StatisticValues.Minimum=80&MetricData.member.2.StatisticValues."
      "Maximum=95&MetricData.member.2.Unit=Percent"
      "&MetricData.member.3.MetricName=step&MetricData.member.3.Timestamp=2025-01-15T12:00:03Z"
      "&MetricData.member.3.Values.member.1=101.5&MetricData.member.3.Values.member.2=99"
      "&MetricData.member.3.Counts.member.1=10&MetricData.member.3.Counts.member.2=5"
      "&MetricData.member.3.Unit=Milliseconds"));
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_THAT(q.body, HasSubstr("<PutMetricDataResponse"));
  auto loss = fake_.ObservationsForTest(Key("loss", {{"Job", "a"}}, "None"));
  auto gpu = fake_.ObservationsForTest(Key("gpu", {}, "Percent"));
  auto step = fake_.ObservationsForTest(Key("step", {}, "Milliseconds"));

  testing::FakeBackend other(clock_);
  Api json_api(ApiOptions{}, other.backends(), clock_);
  HttpResponse j = json_api.Handle(CloudWatchJson("PutMetricData", R"({"Namespace": "Train",
      "MetricData": [
        {"MetricName": "loss", "Dimensions": [{"Name": "Job", "Value": "a"}],
         "Timestamp": 1736942401, "Value": 0.52, "StorageResolution": 1},
        {"MetricName": "gpu", "Timestamp": "2025-01-15T12:00:02Z", "Unit": "Percent",
         "StatisticValues": {"SampleCount": 10, "Sum": 875, "Minimum": 80, "Maximum": 95}},
        {"MetricName": "step", "Timestamp": 1736942403.0, "Values": [101.5, 99.0],
         "Counts": [10, 5], "Unit": "Milliseconds", "UnknownNewMember": {"ignored": true}}]})"));
  ASSERT_EQ(j.status, 200) << j.body;
  EXPECT_EQ(j.body, "{}");
  EXPECT_EQ(other.ObservationsForTest(Key("loss", {{"Job", "a"}}, "None")), loss);
  EXPECT_EQ(other.ObservationsForTest(Key("gpu", {}, "Percent")), gpu);
  EXPECT_EQ(other.ObservationsForTest(Key("step", {}, "Milliseconds")), step);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].t_ms, 1736942401000);
  ASSERT_EQ(step.size(), 2u);
  EXPECT_EQ(step[0].count, 10);
}

TEST_F(CloudWatchTest, GzipBodiesAreAcceptedAndBoundedAfterDecompression) {
  std::string body = R"({"Namespace": "Train", "MetricData": [{"MetricName": "x", "Value": 1}]})";
  HttpRequest r = CloudWatchJson("PutMetricData", util::Gzip(body));
  r.headers.Add("Content-Encoding", "gzip");
  EXPECT_EQ(Call(r).status, 200);
  EXPECT_EQ(fake_.ObservationsForTest(Key("x", {}, "None")).size(), 1u);

  r.body[r.body.size() / 2] ^= 0x55;  // corrupt
  HttpResponse bad = Call(r);
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("gzip"));

  // A small wire body that inflates past 8 MiB: 413 without inflating it all.
  r.body = util::Gzip(std::string(9 * 1024 * 1024, ' '));
  HttpResponse big = Call(r);
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(*big.headers.Find("x-amzn-query-error"), "RequestEntityTooLarge;Sender");
}

TEST_F(CloudWatchTest, InvalidDatumsRejectTheWholeRequestWithEveryMessage) {
  HttpResponse r = Call(QueryRequest(
      "PutMetricData",
      "Namespace=Train&MetricData.member.1.MetricName=ok&MetricData.member.1.Value=1"
      "&MetricData.member.2.MetricName=x&MetricData.member.2.Value=nan"
      "&MetricData.member.3.MetricName=y&MetricData.member.3.Value=1"
      "&MetricData.member.3.Timestamp=2024-12-01T00:00:00Z"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("<Code>InvalidParameterValue</Code>"));
  EXPECT_THAT(r.body, HasSubstr("The value NaN for parameter MetricData.member.2.Value is invalid"));
  EXPECT_THAT(r.body, HasSubstr("The parameter MetricData.member.3.Timestamp must specify a time "
                                "within the past two weeks."));
  EXPECT_EQ(fake_.PutCallsForTest(), 0u);

  nlohmann::json j = Json(CloudWatchJson("PutMetricData", R"({"Namespace": "Train",
      "MetricData": [{"MetricName": "x", "Value": "Infinity"}]})"), 400);
  EXPECT_EQ(j["__type"], "com.amazonaws.cloudwatch#InvalidParameterValueException");
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("The value Infinity for parameter MetricData.member.1.Value is invalid"));
}

TEST_F(CloudWatchTest, PutMetricDataLimitsAndCombinations) {
  struct Case {
    std::string body;
    std::string code;
    std::string text;
  };
  std::string thousand_and_one;
  for (int i = 1; i <= 1001; ++i) {
    thousand_and_one += absl::StrFormat("&MetricData.member.%d.MetricName=m&MetricData.member.%d.Value=1", i, i);
  }
  std::string values;
  for (int i = 1; i <= 151; ++i) values += absl::StrFormat("&MetricData.member.1.Values.member.%d=1", i);
  std::string dims;
  for (int i = 1; i <= 31; ++i) {
    dims += absl::StrFormat("&MetricData.member.1.Dimensions.member.%d.Name=d%d"
                            "&MetricData.member.1.Dimensions.member.%d.Value=v", i, i, i);
  }
  std::vector<Case> cases = {
      {"Namespace=T" + thousand_and_one, "InvalidParameterValue",
       "The collection MetricData must not have a size greater than 1000"},
      {"Namespace=T&MetricData.member.1.MetricName=m" + values, "InvalidParameterValue",
       "MetricData.member.1.Values must not have a size greater than 150"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1" + dims,
       "InvalidParameterValue", "MetricData.member.1.Dimensions must not have a size greater than 30"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1"
       "&MetricData.member.1.StatisticValues.SampleCount=1&MetricData.member.1.StatisticValues.Sum=1"
       "&MetricData.member.1.StatisticValues.Minimum=1&MetricData.member.1.StatisticValues.Maximum=1",
       "InvalidParameterCombination",
       "The parameters MetricData.member.1.Value and MetricData.member.1.StatisticValues are "
       "mutually exclusive and you have specified both."},
      // AWS's words, whole (boto3 issue 2790 quotes them).
      {"Namespace=T&MetricData.member.1.MetricName=m", "InvalidParameterCombination",
       "<Message>At least one of the parameters must be specified.</Message>"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=NaN",
       "InvalidParameterValue",
       "<Message>The value NaN for parameter MetricData.member.1.Value is invalid.</Message>"},
      {"MetricData.member.1.MetricName=m&MetricData.member.1.Value=1", "MissingParameter",
       "The parameter Namespace is required."},
      {"Namespace=AWS/EC2&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1",
       "InvalidParameterValue", "reserved"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1"
       "&MetricData.member.1.Unit=Furlongs", "InvalidParameterValue", "not a valid unit"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1"
       "&MetricData.member.1.StorageResolution=5", "InvalidParameterValue", "must be 1"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Values.member.1=1"
       "&MetricData.member.1.Counts.member.1=1&MetricData.member.1.Counts.member.2=1",
       "InvalidParameterValue", "must be of the same size"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1"
       "&MetricData.member.1.Dimensions.member.1.Name=a&MetricData.member.1.Dimensions.member.1.Value=x"
       "&MetricData.member.1.Dimensions.member.2.Name=a&MetricData.member.1.Dimensions.member.2.Value=y",
       "InvalidParameterValue", "more than once"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.3.Value=1",
       "InvalidParameterValue", "without gaps"},
      {"Namespace=T&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1e400",
       "InvalidParameterValue", "is invalid"},
  };
  for (const Case& c : cases) {
    HttpResponse r = Call(QueryRequest("PutMetricData", c.body));
    EXPECT_EQ(r.status, 400) << c.text;
    EXPECT_THAT(r.body, HasSubstr("<Code>" + c.code + "</Code>")) << c.text;
    EXPECT_THAT(r.body, HasSubstr(c.text));
  }
  EXPECT_EQ(fake_.PutCallsForTest(), 0u);
  // The empty-list form and Python's repr of doubles.
  EXPECT_EQ(Call(QueryRequest("PutMetricData",
                              "Namespace=T&MetricData.member.1.MetricName=x&MetricData.member.1."
                              "Dimensions=&MetricData.member.1.Value=1e-05&MetricData.member.2."
                              "MetricName=y&MetricData.member.2.Value=1.2345678901234567e%2B19"))
                .status,
            200);
}

TEST_F(CloudWatchTest, GetMetricStatisticsWithPercentiles) {
  // 1..100 in one minute, plus a pre-aggregated set that blocks percentiles a minute later.
  std::string put = R"({"Namespace": "Train", "MetricData": [)";
  for (int i = 1; i <= 100; ++i) {
    put += absl::StrFormat(R"(%s{"MetricName": "lat", "Value": %d, "Timestamp": %d, "Unit": "Milliseconds"})",
                           i == 1 ? "" : ",", i, 1736942400 + (i % 60));
  }
  put += R"(, {"MetricName": "lat", "Timestamp": 1736942460, "Unit": "Milliseconds",
              "StatisticValues": {"SampleCount": 4, "Sum": 10, "Minimum": 1, "Maximum": 4}}]})";
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData", put)).status, 200);

  nlohmann::json j = Json(CloudWatchJson("GetMetricStatistics", R"({"Namespace": "Train",
      "MetricName": "lat", "StartTime": 1736942400, "EndTime": 1736942520, "Period": 60,
      "ExtendedStatistics": ["p50", "p99", "p100"]})"));
  EXPECT_EQ(j["Label"], "lat");
  ASSERT_EQ(j["Datapoints"].size(), 2u) << j;
  EXPECT_EQ(j["Datapoints"][0]["Timestamp"], 1736942400.0);
  EXPECT_EQ(j["Datapoints"][0]["Unit"], "Milliseconds");
  EXPECT_EQ(j["Datapoints"][0]["ExtendedStatistics"]["p50"], 50.0);
  EXPECT_EQ(j["Datapoints"][0]["ExtendedStatistics"]["p99"], 99.0);
  EXPECT_EQ(j["Datapoints"][0]["ExtendedStatistics"]["p100"], 100.0);
  // A statistic set of different values has no percentiles: the keys are omitted.
  EXPECT_TRUE(j["Datapoints"][1]["ExtendedStatistics"].empty()) << j;

  HttpResponse xml = Call(QueryRequest(
      "GetMetricStatistics",
      "Namespace=Train&MetricName=lat&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:02:00Z"
      "&Period=60&Statistics.member.1=SampleCount&Statistics.member.2=Average"));
  EXPECT_EQ(xml.status, 200);
  EXPECT_THAT(xml.body, HasSubstr("<Timestamp>2025-01-15T12:00:00.000Z</Timestamp>"));
  EXPECT_THAT(xml.body, HasSubstr("<SampleCount>100.0</SampleCount>"));
  EXPECT_THAT(xml.body, HasSubstr("<Average>50.5</Average>"));
  EXPECT_THAT(xml.body, HasSubstr("<Average>2.5</Average>"));
}

TEST_F(CloudWatchTest, GetMetricStatisticsRules) {
  auto gms = [&](const std::string& extra) {
    return Call(QueryRequest("GetMetricStatistics", "Namespace=T&MetricName=m" + extra));
  };
  HttpResponse r = gms("&StartTime=2025-01-14T00:00:00Z&EndTime=2025-01-15T12:00:00Z&Period=60"
                       "&Statistics.member.1=Average");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("<Code>InvalidParameterCombination</Code>"));
  EXPECT_THAT(r.body, HasSubstr("You have requested up to 2160 datapoints, which exceeds the limit "
                                "of 1440."));
  r = gms("&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:05:00Z&Period=61"
          "&Statistics.member.1=Average");
  EXPECT_THAT(r.body, HasSubstr("The parameter Period must be 1, 5, 10, 20, 30 or a multiple of 60"));
  r = gms("&StartTime=2025-01-15T12:05:00Z&EndTime=2025-01-15T12:00:00Z&Period=60"
          "&Statistics.member.1=Average");
  EXPECT_THAT(r.body, HasSubstr("The parameter StartTime must be less than the parameter EndTime."));
  // Equal times: AWS's own sentence, with each operation's code.
  r = gms("&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:00:00Z&Period=60"
          "&Statistics.member.1=Average");
  EXPECT_THAT(r.body, HasSubstr("<Code>InvalidParameterValue</Code>"));
  EXPECT_THAT(r.body, HasSubstr("The parameter StartTime must not equal parameter EndTime."));
  // GetMetricData with ValidationError (a sub-second part is dropped, as the
  // JSON clients drop it).
  r = Call(QueryRequest("GetMetricData",
                        "StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:00:00.700Z"
                        "&MetricDataQueries.member.1.Id=a"
                        "&MetricDataQueries.member.1.MetricStat.Metric.Namespace=T"
                        "&MetricDataQueries.member.1.MetricStat.Metric.MetricName=m"
                        "&MetricDataQueries.member.1.MetricStat.Period=60"
                        "&MetricDataQueries.member.1.MetricStat.Stat=Sum"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("<Code>ValidationError</Code>"));
  EXPECT_THAT(r.body,
              HasSubstr("<Message>The parameter StartTime must not equal parameter EndTime.</Message>"));
  r = gms("&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:05:00Z&Period=60");
  EXPECT_THAT(r.body, HasSubstr("<Code>InvalidParameterCombination</Code>"));
  r = gms("&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:05:00Z&Period=60"
          "&Statistics.member.1=Median");
  EXPECT_THAT(r.body, HasSubstr("is not a valid statistic"));
  r = gms("&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:05:00Z&Period=60"
          "&ExtendedStatistics.member.1=p100.5");
  EXPECT_THAT(r.body, HasSubstr("is not a valid statistic"));
  // Three hours back a 1 s period is no longer served: no datapoints, not an error.
  r = gms("&StartTime=2025-01-15T08:00:00Z&EndTime=2025-01-15T08:10:00Z&Period=1"
          "&Statistics.member.1=Average");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("<Datapoints/>"));
}

TEST_F(CloudWatchTest, GetMetricDataPaginatesToCompletion) {
  std::string put = R"({"Namespace": "Train", "MetricData": [)";
  for (int i = 0; i < 10; ++i) {
    put += absl::StrFormat(R"(%s{"MetricName": "loss", "Value": %d, "Timestamp": %d, "StorageResolution": 1})",
                           i == 0 ? "" : ",", i, 1736942400 + i);
  }
  put += "]}";
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData", put)).status, 200);
  for (bool ascending : {true, false}) {
    std::vector<double> seen;
    std::optional<std::string> token;
    int pages = 0;
    do {
      nlohmann::json request = {
          {"MetricDataQueries",
           {{{"Id", "a"},
             {"MetricStat",
              {{"Metric", {{"Namespace", "Train"}, {"MetricName", "loss"}}},
               {"Period", 1},
               {"Stat", "Maximum"}}}},
            {{"Id", "b"},
             {"MetricStat",
              {{"Metric", {{"Namespace", "Train"}, {"MetricName", "loss"}}},
               {"Period", 5},
               {"Stat", "SampleCount"}}}}}},
          {"StartTime", 1736942400},
          {"EndTime", 1736942700},
          {"MaxDatapoints", 3}};
      if (ascending) request["ScanBy"] = "TimestampAscending";
      if (token) request["NextToken"] = *token;
      nlohmann::json j = Json(CloudWatchJson("GetMetricData", request.dump()));
      for (const auto& result : j["MetricDataResults"]) {
        for (const auto& v : result["Values"]) seen.push_back(v.get<double>());
        EXPECT_EQ(result["Timestamps"].size(), result["Values"].size());
      }
      token.reset();
      if (j.contains("NextToken")) token = j["NextToken"].get<std::string>();
      ASSERT_LT(++pages, 20);
    } while (token);
    EXPECT_EQ(pages, 4);  // 12 values, 3 a page
    std::vector<double> expected = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 5, 5};
    if (!ascending) expected = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 5, 5};
    EXPECT_EQ(seen, expected);
  }
}

// A reader that answers only through snapshots, and counts them.
class SnapshotsOnly : public MetricsReader {
 public:
  explicit SnapshotsOnly(MetricsReader& inner) : inner_(inner) {}
  absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(const StatisticsQuery&) override {
    ADD_FAILURE() << "a query bypassed the request's snapshot";
    return absl::InternalError("bypassed");
  }
  absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& q) override {
    return inner_.ListMetrics(q);
  }
  absl::StatusOr<std::optional<query::LastSample>> LastValue(
      const model::SeriesKey& key) override {
    return inner_.LastValue(key);
  }
  absl::StatusOr<std::unique_ptr<MetricsReader>> Snapshot() override {
    ++snapshots;
    struct Forward : MetricsReader {
      explicit Forward(MetricsReader& r) : r(r) {}
      absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(
          const StatisticsQuery& q) override {
        return r.GetStatistics(q);
      }
      absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& q) override {
        return r.ListMetrics(q);
      }
      absl::StatusOr<std::optional<query::LastSample>> LastValue(
          const model::SeriesKey& key) override {
        return r.LastValue(key);
      }
      MetricsReader& r;
    };
    return std::make_unique<Forward>(inner_);
  }
  int snapshots = 0;

 private:
  MetricsReader& inner_;
};

TEST_F(CloudWatchTest, GetMetricDataReadsAllItsQueriesFromOneSnapshot) {
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData", R"({"Namespace": "Train", "MetricData": [
      {"MetricName": "loss", "Value": 1, "Timestamp": 1736942401, "StorageResolution": 1},
      {"MetricName": "acc", "Value": 2, "Timestamp": 1736942401, "StorageResolution": 1}]})"))
                .status,
            200);
  SnapshotsOnly reader(fake_);
  Backends backends = fake_.backends();
  backends.metrics = &reader;
  Api api(ApiOptions{}, backends, clock_);
  HttpResponse r = api.Handle(CloudWatchJson("GetMetricData", R"({"MetricDataQueries": [
      {"Id": "a", "MetricStat": {"Metric": {"Namespace": "Train", "MetricName": "loss"},
                                 "Period": 60, "Stat": "Sum"}},
      {"Id": "b", "MetricStat": {"Metric": {"Namespace": "Train", "MetricName": "acc"},
                                 "Period": 60, "Stat": "Sum"}},
      {"Id": "c", "MetricStat": {"Metric": {"Namespace": "Train", "MetricName": "loss"},
                                 "Period": 60, "Stat": "SampleCount"}}],
      "StartTime": 1736942400, "EndTime": 1736942700})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(reader.snapshots, 1);
  nlohmann::json j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["MetricDataResults"].size(), 3u) << j;
  EXPECT_EQ(j["MetricDataResults"][1]["Values"][0], 2.0);
}

// A reader whose snapshots fork, recording which threads asked it.
class Forking : public MetricsReader {
 public:
  explicit Forking(MetricsReader& inner, Forking* root = nullptr)
      : inner_(inner), root_(root == nullptr ? this : root) {}
  absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(const StatisticsQuery& q) override {
    {
      std::lock_guard<std::mutex> lock(root_->mu_);
      root_->threads_.insert(std::this_thread::get_id());
    }
    return inner_.GetStatistics(q);
  }
  absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& q) override {
    return inner_.ListMetrics(q);
  }
  absl::StatusOr<std::optional<query::LastSample>> LastValue(
      const model::SeriesKey& key) override {
    return inner_.LastValue(key);
  }
  absl::StatusOr<std::unique_ptr<MetricsReader>> Snapshot() override {
    return std::make_unique<Forking>(inner_, root_);
  }
  std::unique_ptr<MetricsReader> Fork() override {
    ++root_->forks;
    return std::make_unique<Forking>(inner_, root_);
  }
  std::set<std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }
  int forks = 0;

 private:
  MetricsReader& inner_;
  Forking* root_;
  std::mutex mu_;
  std::set<std::thread::id> threads_;
};

TEST_F(CloudWatchTest, ALargeGetMetricDataRunsOnSeveralThreadsAndAnswersAsInOrder) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: no second thread";
  // 80 metrics of 5 minutes each, and one with three units, which a
  // MetricStat without Unit aggregates into one point a period.
  nlohmann::json data = nlohmann::json::array();
  nlohmann::json queries = nlohmann::json::array();
  for (int m = 0; m < 80; ++m) {
    for (int t = 0; t < 5; ++t) {
      data.push_back({{"MetricName", absl::StrFormat("m%d", m)}, {"Value", m * 10 + t},
                      {"Timestamp", 1736942400 + 60 * t + 1}, {"StorageResolution", 1}});
    }
  }
  for (const char* unit : {"Seconds", "Percent", "Count"}) {
    for (int t = 0; t < 5; ++t) {
      data.push_back({{"MetricName", "units"}, {"Value", t}, {"Unit", unit},
                      {"Timestamp", 1736942400 + 60 * t + 1}});
    }
  }
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData",
                                nlohmann::json({{"Namespace", "Train"}, {"MetricData", data}}).dump()))
                .status,
            200);
  for (int m = 0; m <= 80; ++m) {
    queries.push_back(
        {{"Id", absl::StrFormat("q%d", m)},
         {"MetricStat", {{"Metric", {{"Namespace", "Train"},
                                     {"MetricName", m < 80 ? absl::StrFormat("m%d", m) : "units"}}},
                         {"Period", 60}, {"Stat", m % 2 ? "Maximum" : "Average"}}}});
  }
  auto get = [&](MetricsReader& reader, int max_datapoints, const std::string& token) {
    Backends backends = fake_.backends();
    backends.metrics = &reader;
    Api api(ApiOptions{}, backends, clock_);
    nlohmann::json body = {{"MetricDataQueries", queries}, {"StartTime", 1736942400},
                           {"EndTime", 1736942700}, {"MaxDatapoints", max_datapoints}};
    if (!token.empty()) body["NextToken"] = token;
    HttpResponse r = api.Handle(CloudWatchJson("GetMetricData", body.dump()));
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body);
  };

  Forking forking(fake_);
  nlohmann::json parallel = get(forking, 100800, "");
  EXPECT_GE(forking.forks, 1);
  EXPECT_GE(forking.threads().size(), 2u) << "every query ran on the request's thread";
  nlohmann::json in_order = get(fake_, 100800, "");  // the fake does not fork
  EXPECT_EQ(parallel, in_order);
  ASSERT_EQ(in_order["MetricDataResults"].size(), 81u);
  EXPECT_EQ(in_order["MetricDataResults"][80]["Values"],
            nlohmann::json({4.0, 3.0, 2.0, 1.0, 0.0}));  // Average over the 3 units
  EXPECT_EQ(in_order["MetricDataResults"][3]["Values"][0], 34.0);  // Maximum of m3 at t=4

  // Pages: each as the in-order answer gives it, whether or not run ahead.
  for (int page : {7, 60, 500}) {  // 500: run ahead (81 x 6 estimated)
    std::string token_a, token_b;
    int pages = 0;
    do {
      nlohmann::json a = get(forking, page, token_a), b = get(fake_, page, token_b);
      EXPECT_EQ(a, b) << "page size " << page;
      token_a = a.value("NextToken", "");
      token_b = b.value("NextToken", "");
    } while (!token_a.empty() && ++pages < 100);
  }
}

// A MetricStat without Unit aggregates every unit the metric was stored with
// into one point a period; with Unit, only that unit's data. GetMetricStatistics
// keeps a datapoint per unit.
TEST_F(CloudWatchTest, GetMetricDataWithoutUnitAggregatesEveryUnit) {
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData", R"({"Namespace": "Train", "MetricData": [
      {"MetricName": "step", "Value": 1, "Unit": "Seconds", "Timestamp": 1736942401},
      {"MetricName": "step", "Value": 3, "Unit": "Seconds", "Timestamp": 1736942402},
      {"MetricName": "step", "Value": 1000, "Unit": "Milliseconds", "Timestamp": 1736942403}]})"))
                .status,
            200);
  auto query = [&](const std::string& stat, const std::string& unit) {
    nlohmann::json q = {{"Id", "a"},
                        {"MetricStat", {{"Metric", {{"Namespace", "Train"}, {"MetricName", "step"}}},
                                        {"Period", 60}, {"Stat", stat}}}};
    if (!unit.empty()) q["MetricStat"]["Unit"] = unit;
    nlohmann::json body = {{"MetricDataQueries", {q}}, {"StartTime", 1736942400},
                           {"EndTime", 1736942700}};
    nlohmann::json j = Json(CloudWatchJson("GetMetricData", body.dump()));
    return j["MetricDataResults"][0];
  };
  nlohmann::json r = query("Sum", "");
  EXPECT_EQ(r["Timestamps"].size(), 1u);
  EXPECT_EQ(r["Values"], nlohmann::json({1004.0}));
  EXPECT_EQ(query("SampleCount", "")["Values"], nlohmann::json({3.0}));
  EXPECT_EQ(query("Sum", "Seconds")["Values"], nlohmann::json({4.0}));
  nlohmann::json stats = Json(CloudWatchJson("GetMetricStatistics", R"({"Namespace": "Train",
      "MetricName": "step", "StartTime": 1736942400, "EndTime": 1736942700, "Period": 60,
      "Statistics": ["Sum"]})"));
  EXPECT_EQ(stats["Datapoints"].size(), 2u) << stats;
}

// Without Label, CloudWatch names a MetricStat by its metric, adding the
// statistic and the period only where the request's queries differ in them
// (AWS's answers as LocalStack's parity tests recorded them).
TEST_F(CloudWatchTest, GetMetricDataDefaultLabelsTellQueriesApart) {
  auto labels = [&](std::vector<std::tuple<std::string, int, std::string>> queries) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [stat, period, label] : queries) {
      nlohmann::json q = {{"Id", absl::StrFormat("q%d", list.size())},
                          {"MetricStat", {{"Metric", {{"Namespace", "Train"}, {"MetricName", "loss"}}},
                                          {"Period", period}, {"Stat", stat}, {"Unit", "Seconds"}}}};
      if (!label.empty()) q["Label"] = label;
      list.push_back(q);
    }
    nlohmann::json body = {{"MetricDataQueries", list}, {"StartTime", 1736942400},
                           {"EndTime", 1736942700}};
    std::vector<std::string> out;
    const nlohmann::json answer = Json(CloudWatchJson("GetMetricData", body.dump()));
    for (const auto& r : answer["MetricDataResults"]) {
      out.push_back(r["Label"]);
    }
    return out;
  };
  EXPECT_THAT(labels({{"Sum", 60, ""}}), ElementsAre("loss"));
  EXPECT_THAT(labels({{"Sum", 60, ""}, {"Sum", 60, ""}}), ElementsAre("loss", "loss"));
  EXPECT_THAT(labels({{"Sum", 60, ""}, {"Minimum", 60, ""}}), ElementsAre("loss Sum", "loss Minimum"));
  EXPECT_THAT(labels({{"Sum", 60, ""}, {"Sum", 30, ""}}), ElementsAre("loss 60", "loss 30"));
  EXPECT_THAT(labels({{"Sum", 60, ""}, {"p99", 30, ""}}), ElementsAre("loss Sum 60", "loss p99 30"));
  EXPECT_THAT(labels({{"Sum", 60, "mine"}, {"Minimum", 60, ""}}), ElementsAre("mine", "loss Minimum"));
}

// AWS reserves the AWS/ namespaces for its services' writes; reads of them
// are answered as of any namespace (as CloudWatch answers them: here, with
// nothing, since no AWS service writes to this store).
TEST_F(CloudWatchTest, OnlyWritesRefuseTheAwsNamespaces) {
  HttpResponse r = Call(QueryRequest("GetMetricStatistics",
                                     "Namespace=AWS/EC2&MetricName=CPUUtilization"
                                     "&StartTime=2025-01-15T12:00:00Z&EndTime=2025-01-15T12:05:00Z"
                                     "&Period=60&Statistics.member.1=Average"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("<Datapoints/>"));
  r = Call(QueryRequest("ListMetrics", "Namespace=AWS/EC2"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, Not(HasSubstr("<MetricName>")));
  nlohmann::json j = Json(CloudWatchJson("GetMetricData", R"({"MetricDataQueries": [{"Id": "a",
      "MetricStat": {"Metric": {"Namespace": "AWS/EC2", "MetricName": "CPUUtilization"},
      "Period": 60, "Stat": "Average"}}], "StartTime": 1736942400, "EndTime": 1736942700})"));
  ASSERT_EQ(j["MetricDataResults"].size(), 1u);
  EXPECT_TRUE(j["MetricDataResults"][0]["Values"].empty());
  r = Call(QueryRequest("PutMetricData",
                        "Namespace=AWS/EC2&MetricData.member.1.MetricName=m&MetricData.member.1.Value=1"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("reserved for AWS services"));
}

// Expression queries: metric math over the request's MetricStat queries
// (query/metric_math.h), returned in request order, whole (no NextToken).
TEST_F(CloudWatchTest, GetMetricDataComputesMetricMath) {
  nlohmann::json data = nlohmann::json::array();
  for (int t = 0; t < 5; ++t) {
    data.push_back({{"MetricName", "correct"}, {"Value", 10 * t}, {"Timestamp", 1736942400 + 60 * t}});
    data.push_back({{"MetricName", "seen"}, {"Value", 50}, {"Timestamp", 1736942400 + 60 * t}});
  }
  ASSERT_EQ(Call(CloudWatchJson("PutMetricData",
                                nlohmann::json({{"Namespace", "Train"}, {"MetricData", data}}).dump()))
                .status,
            200);
  auto stat = [](const char* id, const char* metric, bool return_data) {
    return nlohmann::json{{"Id", id}, {"ReturnData", return_data},
                          {"MetricStat", {{"Metric", {{"Namespace", "Train"}, {"MetricName", metric}}},
                                          {"Period", 60}, {"Stat", "Sum"}}}};
  };
  nlohmann::json body = {
      {"MetricDataQueries",
       {stat("c", "correct", false), stat("s", "seen", true),
        {{"Id", "accuracy"}, {"Expression", "c / s * 100"}, {"Label", "accuracy %"}},
        {{"Id", "doubled"}, {"Expression", "METRICS() * 2"}},
        {{"Id", "centered"}, {"Expression", "c - AVG(c)"}}}},
      {"StartTime", 1736942400}, {"EndTime", 1736942700}, {"ScanBy", "TimestampAscending"}};
  nlohmann::json j = Json(CloudWatchJson("GetMetricData", body.dump()));
  const nlohmann::json& r = j["MetricDataResults"];
  ASSERT_EQ(r.size(), 5u) << j;
  EXPECT_EQ(r[0]["Id"], "s");
  EXPECT_EQ(r[1]["Id"], "accuracy");
  EXPECT_EQ(r[1]["Label"], "accuracy %");
  EXPECT_EQ(r[1]["Values"], nlohmann::json({0.0, 20.0, 40.0, 60.0, 80.0}));
  EXPECT_EQ(r[1]["StatusCode"], "Complete");
  // METRICS() * 2: a result per MetricStat query, under the expression's Id
  // and each metric's label.
  EXPECT_EQ(r[2]["Id"], "doubled");
  EXPECT_EQ(r[2]["Label"], "correct");
  EXPECT_EQ(r[3]["Label"], "seen");
  EXPECT_EQ(r[3]["Values"][0], 100.0);
  EXPECT_EQ(r[4]["Values"], nlohmann::json({-20.0, -10.0, 0.0, 10.0, 20.0}));
  EXPECT_FALSE(j.contains("NextToken")) << "requests with math are answered whole";
  // Math reads each query whole: the range is bounded (FILL would make a point
  // of every period).
  nlohmann::json wide = body;
  wide["StartTime"] = 1736942400 - 86400 * 2;
  wide["MetricDataQueries"][0]["MetricStat"]["Period"] = 1;
  j = Json(CloudWatchJson("GetMetricData", wide.dump()), 400);
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("A request with metric math reads at most 100800 periods of each query; "
                        "query c asks for 173101"));
  // An expression that gives one number cannot be a result.
  body["MetricDataQueries"][4]["Expression"] = "AVG(c)";
  j = Json(CloudWatchJson("GetMetricData", body.dump()), 400);
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("Error in expression centered: it gives one number, not a time series"));
}

TEST_F(CloudWatchTest, GetMetricDataValidation) {
  nlohmann::json j = Json(CloudWatchJson("GetMetricData", R"({"MetricDataQueries": [
      {"Id": "5xx_error", "MetricStat": {"Metric": {"Namespace": "T", "MetricName": "m"},
       "Period": 60, "Stat": "Average"}}], "StartTime": 1736942400, "EndTime": 1736942700})"),
                          400);
  EXPECT_EQ(j["__type"], "com.amazonaws.cloudwatch#ValidationError");
  EXPECT_EQ(j["message"], "The value 5xx_error for parameter MetricDataQueries.member.1.Id is not "
                          "matching the expected pattern ^[a-z][a-zA-Z0-9_]*$.");
  j = Json(CloudWatchJson("GetMetricData", R"j({"MetricDataQueries": [{"Id": "e",
      "Expression": "SEARCH('{T} m', 'Sum')"}], "StartTime": 1736942400, "EndTime": 1736942700})j"), 400);
  EXPECT_EQ(j["__type"], "com.amazonaws.cloudwatch#ValidationError");
  EXPECT_THAT(j["message"].get<std::string>(),
              HasSubstr("Error in expression e: the function SEARCH is not supported by trainwatch"));
  j = Json(CloudWatchJson("GetMetricData", R"j({"MetricDataQueries": [{"Id": "e",
      "Expression": "m9 * 2"}], "StartTime": 1736942400, "EndTime": 1736942700})j"), 400);
  EXPECT_EQ(j["message"], "Error in expression e: no query has the Id m9");
  j = Json(CloudWatchJson("GetMetricData", R"j({"MetricDataQueries": [{"Id": "e",
      "Expression": "f + 1"}, {"Id": "f", "Expression": "e * 2"}], "StartTime": 1736942400,
      "EndTime": 1736942700})j"), 400);
  EXPECT_EQ(j["message"], "Error in expression e: it depends on itself");
  j = Json(CloudWatchJson("GetMetricData", R"({"MetricDataQueries": [{"Id": "a",
      "MetricStat": {"Metric": {"Namespace": "T", "MetricName": "m"}, "Period": 60,
      "Stat": "p9x"}}], "StartTime": 1736942400, "EndTime": 1736942700})"), 400);
  EXPECT_EQ(j["message"], "The value p9x for parameter MetricDataQueries.member.1.MetricStat.Stat "
                          "is not a valid statistic.");
  j = Json(CloudWatchJson("GetMetricData", R"({"MetricDataQueries": [{"Id": "a",
      "MetricStat": {"Metric": {"Namespace": "T", "MetricName": "m"}, "Period": 60,
      "Stat": "Sum"}}], "StartTime": 1736942400, "EndTime": 1736942700, "NextToken": "bogus"})"),
           400);
  EXPECT_EQ(j["__type"], "com.amazonaws.cloudwatch#InvalidNextToken");
}

TEST_F(CloudWatchTest, ListMetricsPagesFiveHundredAtATime) {
  for (int batch = 0; batch < 2; ++batch) {
    std::string put = R"({"Namespace": "Train", "MetricData": [)";
    for (int i = 0; i < 300; ++i) {
      put += absl::StrFormat(R"(%s{"MetricName": "m%04d", "Value": 1, "Dimensions": [{"Name": "Host", "Value": "h%d"}]})",
                             i == 0 ? "" : ",", batch * 300 + i, i % 2);
    }
    put += "]}";
    ASSERT_EQ(Call(CloudWatchJson("PutMetricData", put)).status, 200);
  }
  std::set<std::string> names;
  std::string token;
  int pages = 0;
  do {
    std::string params = "Namespace=Train&Dimensions.member.1.Name=Host";
    if (!token.empty()) params += "&NextToken=" + token;
    HttpResponse r = Call(QueryRequest("ListMetrics", params));
    ASSERT_EQ(r.status, 200) << r.body;
    size_t pos = 0;
    while ((pos = r.body.find("<MetricName>", pos)) != std::string::npos) {
      pos += 12;
      names.insert(r.body.substr(pos, r.body.find('<', pos) - pos));
    }
    size_t t = r.body.find("<NextToken>");
    token = t == std::string::npos ? "" : r.body.substr(t + 11, r.body.find('<', t + 11) - t - 11);
    ++pages;
  } while (!token.empty() && pages < 5);
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(names.size(), 600u);

  nlohmann::json j = Json(CloudWatchJson("ListMetrics", R"({"Namespace": "Train",
      "Dimensions": [{"Name": "Host", "Value": "h1"}], "MetricName": "m0001"})"));
  ASSERT_EQ(j["Metrics"].size(), 1u);
  EXPECT_EQ(j["Metrics"][0]["Dimensions"][0]["Value"], "h1");
  EXPECT_FALSE(j.contains("NextToken"));
}

}  // namespace
}  // namespace trainwatch::api
