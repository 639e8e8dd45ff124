// The dashboard's chart data endpoints: GET /api/v1/jobs/NAME/series and
// GET /api/v1/chart (docs/api.md, "Dashboard"), over the fake backend.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "api/native/native_api.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1736942700000;
constexpr char kNs[] = "/aws/sagemaker/TrainingJobs";

class NativeChartTest : public ::testing::Test {
 protected:
  NativeChartTest()
      : clock_(kNow), fake_(clock_), api_(NativeOptions{}, fake_.backends(), clock_) {
    model::JobRecord job;
    job.name = "j1";
    job.creation_ms = kNow - 3600000;
    job.step_metric = "step";
    fake_.SetJob(job);
    job.name = "j2";
    job.step_metric = "";
    fake_.SetJob(job);
  }

  nlohmann::json Get(const std::string& target, int status = 200) {
    HttpRequest r;
    r.method = "GET";
    r.target = target;
    HttpResponse out = api_.Handle(r);
    EXPECT_EQ(out.status, status) << target << ": " << out.body;
    return nlohmann::json::parse(out.body, nullptr, false);
  }
  void Put(const std::string& ns, const std::string& metric, std::vector<model::Dimension> dims,
           std::vector<model::Sample> samples, const std::string& unit = "None") {
    ASSERT_TRUE(fake_.PutSeries(ns, metric, std::move(dims), std::move(samples), unit).ok());
  }
  static std::string Target(const std::string& query) {
    return "/api/v1/chart?namespace=%2Faws%2Fsagemaker%2FTrainingJobs&metric=train%3Aloss"
           "&dimension=TrainingJobName%3Dj1&" +
           query;
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  NativeApi api_;
};

TEST_F(NativeChartTest, SeriesListsTheJobsAlgorithmAndInstanceMetricsWithTheirLastValues) {
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, {{kNow - 2000, 0.5}, {kNow - 1000, 0.25}});
  Put(kNs, "CPUUtilization", {{"Host", "j1/algo-1"}}, {{kNow - 500, 93}}, "Percent");
  Put("trainwatch/Profiler", "CPUUtilization", {{"Core", "0"}, {"Host", "j1/algo-1"}},
      {{kNow - 500, 80}}, "Percent");
  Put(kNs, "train:loss", {{"TrainingJobName", "j10"}}, {{kNow, 9}});  // another job
  Put(kNs, "CPUUtilization", {{"Host", "j10/algo-1"}}, {{kNow, 9}}, "Percent");
  nlohmann::json j = Get("/api/v1/jobs/j1/series");
  ASSERT_EQ(j["series"].size(), 3u) << j;
  EXPECT_EQ(j["series"][0], nlohmann::json({{"namespace", kNs},
                                            {"metric", "train:loss"},
                                            {"dimensions", {{"TrainingJobName", "j1"}}},
                                            {"unit", "None"},
                                            {"group", "algorithm"},
                                            {"last_ms", kNow - 1000},
                                            {"last_value", 0.25}}));
  EXPECT_EQ(j["series"][1]["metric"], "CPUUtilization");
  EXPECT_EQ(j["series"][1]["group"], "system");
  EXPECT_EQ(j["series"][1]["unit"], "Percent");
  EXPECT_EQ(j["series"][2]["namespace"], "trainwatch/Profiler");
  EXPECT_EQ(j["series"][2]["dimensions"], nlohmann::json({{"Core", "0"}, {"Host", "j1/algo-1"}}));
  EXPECT_EQ(j["series"][2]["last_value"], 80);

  EXPECT_EQ(Get("/api/v1/jobs/j2/series")["series"], nlohmann::json::array());
  EXPECT_THAT(Get("/api/v1/jobs/nope/series", 404)["error"]["message"].get<std::string>(),
              HasSubstr("no job named nope"));
  HttpRequest post;
  post.method = "POST";
  post.target = "/api/v1/jobs/j1/series";
  EXPECT_EQ(api_.Handle(post).status, 405);
}

TEST_F(NativeChartTest, ChartAnswersM4PointsAndRawSamplesOnceZoomedIn) {
  std::vector<model::Sample> s;
  for (int i = 0; i < 100000; ++i) s.push_back({kNow - 100000 + i, std::sin(i / 500.0)});
  s[31337].value = 42;  // one spike
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, s);
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, {{kNow - 50000, -7}}, "Percent");

  nlohmann::json j = Get(Target("start=" + std::to_string(kNow - 100000) + "&end=" +
                                std::to_string(kNow) + "&width=100"));
  EXPECT_EQ(j["x_kind"], "time");
  EXPECT_EQ(j["start"], kNow - 100000);
  EXPECT_EQ(j["end"], kNow);
  EXPECT_EQ(j["column"], 1000.0);
  EXPECT_EQ(j["tier"], "raw");
  EXPECT_EQ(j["raw"], false);
  ASSERT_EQ(j["x"].size(), j["y"].size());
  ASSERT_EQ(j["x"].size(), j["t"].size());
  EXPECT_LE(j["x"].size(), 400u);
  EXPECT_EQ(j["x"], j["t"]);
  const std::vector<double> y = j["y"].get<std::vector<double>>();
  EXPECT_EQ(*std::max_element(y.begin(), y.end()), 42);
  EXPECT_EQ(*std::min_element(y.begin(), y.end()), -7);  // every unit merged
  const std::vector<int64_t> x = j["x"].get<std::vector<int64_t>>();
  EXPECT_TRUE(std::is_sorted(x.begin(), x.end()));

  // One unit only, default width (800) and range (the last hour).
  j = Get(Target("unit=Percent"));
  EXPECT_EQ(j["start"], kNow - 3600000);
  EXPECT_EQ(j["x"], nlohmann::json({kNow - 50000}));
  EXPECT_EQ(j["y"], nlohmann::json({-7}));
  EXPECT_EQ(j["raw"], true);

  // Zoomed in: every raw sample.
  j = Get(Target("unit=None&start=" + std::to_string(kNow - 100000 + 31300) +
                 "&end=" + std::to_string(kNow - 100000 + 31400) + "&width=800"));
  EXPECT_EQ(j["raw"], true);
  ASSERT_EQ(j["x"].size(), 100u);
  EXPECT_EQ(j["y"][37], 42);
}

TEST_F(NativeChartTest, ChartOverStepsOfTheJob) {
  std::vector<model::Sample> steps, loss;
  for (int k = 0; k < 10; ++k) steps.push_back({kNow - 10000 + k * 1000, double(k)});
  for (int i = 0; i < 20; ++i) loss.push_back({kNow - 10000 + i * 500, double(i)});
  Put(kNs, "step", {{"TrainingJobName", "j1"}}, steps);
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, loss);
  nlohmann::json j = Get(Target("x=step&job=j1&start=now-1m"));
  EXPECT_EQ(j["x_kind"], "step");
  EXPECT_EQ(j["start"], 0);
  EXPECT_EQ(j["end"], 10);
  EXPECT_EQ(j["raw"], true);
  ASSERT_EQ(j["x"].size(), 20u);
  EXPECT_EQ(j["x"][3], 1);
  EXPECT_EQ(j["t"][3], kNow - 10000 + 1500);
  EXPECT_EQ(j["y"][3], 3);
}

TEST_F(NativeChartTest, ChartErrorsNameTheParameterAndWhatIsExpected) {
  auto message = [&](const std::string& target, int status = 400) {
    nlohmann::json j = Get(target, status);
    return j["error"]["message"].get<std::string>();
  };
  EXPECT_THAT(message("/api/v1/chart?metric=loss"),
              HasSubstr("query parameter namespace is required"));
  EXPECT_THAT(message("/api/v1/chart?namespace=x"),
              HasSubstr("query parameter metric is required"));
  EXPECT_THAT(message("/api/v1/chart?namespace=x&metric=m&dimension=Host"),
              HasSubstr("query parameter dimension=Host: want Name=Value"));
  EXPECT_THAT(message("/api/v1/chart?namespace=x&metric=m&dimension=A%3D1&dimension=A%3D2"),
              HasSubstr("query parameter dimension names A twice"));
  for (const char* w : {"0", "4001", "wide", "-1"}) {
    EXPECT_THAT(message(Target(std::string("width=") + w)),
                HasSubstr(std::string("query parameter width=") + w +
                          ": want an integer from 1 to 4000"));
  }
  EXPECT_THAT(message(Target("x=epoch")), HasSubstr("query parameter x=epoch: want time or step"));
  EXPECT_THAT(message(Target("x=step")), HasSubstr("query parameter job is required with x=step"));
  EXPECT_THAT(message(Target("start=now&end=now-1h")), HasSubstr("must be before end"));
  EXPECT_THAT(message(Target("start=yesterday")), HasSubstr("query parameter start"));
  EXPECT_THAT(message(Target("end=99999999999999999999")),
              HasSubstr("query parameter end=99999999999999999999: want a time in ms"));
  EXPECT_THAT(message(Target("unit=")), HasSubstr("query parameter unit is empty"));
  EXPECT_THAT(message(Target("x=step&job=nope"), 404), HasSubstr("no job named nope"));
  EXPECT_THAT(message(Target("x=step&job=j2")), HasSubstr("job j2 has no step metric"));
  EXPECT_EQ(Get(Target("width=4000"))["x"], nlohmann::json::array());  // the bounds are fine
  EXPECT_EQ(Get(Target("width=1"))["column"], 3600000.0);
  HttpRequest post;
  post.method = "POST";
  post.target = "/api/v1/chart";
  EXPECT_EQ(api_.Handle(post).status, 405);
}

TEST_F(NativeChartTest, ReportIsTheJobsPageOrItsContentAsJson) {
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, {{kNow - 2000, 0.5}, {kNow - 1000, 9.5}});
  HttpRequest r;
  r.method = "GET";
  r.target = "/api/v1/jobs/j1/report";
  HttpResponse page = api_.Handle(r);
  ASSERT_EQ(page.status, 200) << page.body;
  ASSERT_NE(page.headers.Find("Content-Type"), nullptr);
  EXPECT_THAT(*page.headers.Find("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(page.body, HasSubstr("Training job report: j1"));
  nlohmann::json json = Get("/api/v1/jobs/j1/report?format=json");
  EXPECT_EQ(json["job"]["name"], "j1");
  ASSERT_EQ(json["metric_charts"].size(), 1u);
  EXPECT_EQ(json["metric_charts"][0]["lines"][0]["values"].back(), 9.5);
  EXPECT_THAT(Get("/api/v1/jobs/nope/report", 404)["error"]["message"].get<std::string>(),
              HasSubstr("no job named nope"));
  EXPECT_THAT(Get("/api/v1/jobs/j1/report?format=pdf", 400)["error"]["message"].get<std::string>(),
              HasSubstr("use html"));
}


TEST_F(NativeChartTest, SamplesAnswersTheJobsOwnSeriesRawFilteredByNamespaceAndMetric) {
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, {{kNow - 2000, 0.5}, {kNow - 1000, 0.25}});
  Put("trainwatch/Tensors", "mean", {{"Collection", "weights"}, {"Tensor", "fc.weight"},
                                     {"TrainingJobName", "j1"}},
      {{kNow - 2000, 0.125}});
  Put(kNs, "train:loss", {{"TrainingJobName", "j10"}}, {{kNow - 1000, 9}});  // another job
  Put(kNs, "CPUUtilization", {{"Host", "j1/algo-1"}}, {{kNow - 500, 93}}, "Percent");
  nlohmann::json all = Get("/api/v1/jobs/j1/samples");
  ASSERT_EQ(all["series"].size(), 2u) << all;
  EXPECT_FALSE(all.contains("next_start"));
  nlohmann::json tensors = Get("/api/v1/jobs/j1/samples?namespace=trainwatch%2FTensors");
  ASSERT_EQ(tensors["series"].size(), 1u) << tensors;
  EXPECT_EQ(tensors["series"][0],
            nlohmann::json({{"namespace", "trainwatch/Tensors"},
                            {"metric", "mean"},
                            {"dimensions",
                             {{"Collection", "weights"}, {"Tensor", "fc.weight"}, {"TrainingJobName", "j1"}}},
                            {"unit", "None"},
                            {"t_ms", {kNow - 2000}},
                            {"values", {0.125}}}));
  nlohmann::json loss = Get("/api/v1/jobs/j1/samples?metric=train%3Aloss");
  ASSERT_EQ(loss["series"].size(), 1u);
  EXPECT_EQ(loss["series"][0]["values"], nlohmann::json({0.5, 0.25}));
  EXPECT_THAT(Get("/api/v1/jobs/nope/samples", 404).dump(), HasSubstr("no job named nope"));
}

TEST(NativeJobSamples, ALargeAnswerIsPagedByTimeAndNothingIsLostOrRepeated) {
  util::FakeClock clock(kNow);
  testing::FakeBackend fake(clock);
  NativeOptions options;
  options.max_samples_per_answer = 5;
  NativeApi api(options, fake.backends(), clock);
  model::JobRecord job;
  job.name = "j1";
  job.creation_ms = kNow - 3600000;
  fake.SetJob(job);
  model::SampleBatch b;
  for (const char* metric : {"a", "b"}) {
    std::vector<model::Sample> samples;
    for (int i = 0; i < 6; ++i) samples.push_back({kNow - 10000 + i * 1000, double(i)});
    b.series.push_back({*model::MakeSeriesKey(kNs, metric, {{"TrainingJobName", "j1"}}, "None"), 1,
                        samples, {}, {}});
  }
  ASSERT_TRUE(fake.Put(b).ok());
  std::map<std::string, std::vector<int64_t>> seen;
  std::string start;
  int requests = 0;
  while (true) {
    HttpRequest r;
    r.method = "GET";
    r.target = "/api/v1/jobs/j1/samples" + start;
    HttpResponse out = api.Handle(r);
    ASSERT_EQ(out.status, 200) << out.body;
    nlohmann::json j = nlohmann::json::parse(out.body);
    size_t n = 0;
    for (const auto& s : j["series"]) {
      for (const auto& t : s["t_ms"]) {
        seen[s["metric"]].push_back(t.get<int64_t>());
        ++n;
      }
    }
    EXPECT_LE(n, 5u);
    ++requests;
    ASSERT_LT(requests, 10);
    if (!j.contains("next_start")) break;
    start = "?start=" + std::to_string(j["next_start"].get<int64_t>());
  }
  for (const char* metric : {"a", "b"}) {
    std::vector<int64_t> want;
    for (int i = 0; i < 6; ++i) want.push_back(kNow - 10000 + i * 1000);
    EXPECT_EQ(seen[metric], want) << metric;
  }
}

}  // namespace
}  // namespace trainwatch::api
