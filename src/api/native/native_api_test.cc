#include "api/native/native_api.h"

#include "api/native/agent_codec.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/gzip.h"
#include "api/snappy_body.h"
#include "api/testing/fake_backend.h"
#include "api/testing/remote_write.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using testing::RemoteWriteRequest;
using testing::TimeSeries;

constexpr int64_t kNow = 1736942700000;

class NativeApiTest : public ::testing::Test {
 protected:
  NativeApiTest() : clock_(kNow), fake_(clock_), api_(NativeOptions{}, fake_.backends(), clock_) {}

  nlohmann::json Call(std::string method, std::string target, std::string body = "",
                      int status = 200) {
    HttpRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    HttpResponse out = api_.Handle(r);
    EXPECT_EQ(out.status, status) << out.body;
    EXPECT_EQ(*out.headers.Find("Content-Type"), "application/json");
    return nlohmann::json::parse(out.body, nullptr, false);
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  NativeApi api_;
};

TEST_F(NativeApiTest, HealthAndRoutes) {
  nlohmann::json j = Call("GET", "/api/v1/health");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["backends"]["metrics"], true);
  // What agents look for before they compress their batches.
  EXPECT_EQ(j["content_encodings"], nlohmann::json({"gzip", "snappy"}));
  EXPECT_EQ(j["live_updates"], true);
  EXPECT_EQ(Call("GET", "/api/v1/nope", "", 404)["error"]["code"], "NotFound");
  EXPECT_EQ(Call("POST", "/api/v1/health", "", 405)["error"]["code"], "MethodNotAllowed");
}

TEST_F(NativeApiTest, IngestThenQuery) {
  nlohmann::json batch = {
      {"series",
       {{{"namespace", "Train"}, {"metric", "loss"}, {"dimensions", {{"TrainingJobName", "j1"}}},
         {"t_ms", {kNow - 3000, kNow - 2000, kNow - 1000}}, {"values", {0.5, 0.4, 0.3}}},
        {{"namespace", "Train"}, {"metric", "gpu"}, {"unit", "Percent"},
         {"t_ms", {kNow - 1000, kNow - 1000}}, {"values", {80, 90}}, {"counts", {3, 1}}}}}};
  EXPECT_EQ(Call("POST", "/api/v1/samples", batch.dump())["accepted"], 5);
  auto loss = fake_.ObservationsForTest(
      *model::MakeSeriesKey("Train", "loss", {{"TrainingJobName", "j1"}}, "None"));
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[2].value, 0.3);

  // gzip bodies too.
  HttpRequest gz;
  gz.method = "POST";
  gz.target = "/api/v1/samples";
  gz.headers.Add("Content-Encoding", "gzip");
  gz.body = util::Gzip(batch.dump());
  EXPECT_EQ(api_.Handle(gz).status, 200);
  // And snappy bodies (one block, as Prometheus remote write sends).
  HttpRequest sn = gz;
  sn.headers = {};
  sn.headers.Add("Content-Encoding", "Snappy");
  sn.body = SnappyCompress(batch.dump());
  EXPECT_EQ(api_.Handle(sn).status, 200);
  EXPECT_EQ(fake_.ObservationsForTest(
                    *model::MakeSeriesKey("Train", "loss", {{"TrainingJobName", "j1"}}, "None"))
                .size(),
            9u);

  nlohmann::json j = Call("GET", "/api/v1/metrics?namespace=Train&dimension=TrainingJobName");
  ASSERT_EQ(j["metrics"].size(), 1u);
  EXPECT_EQ(j["metrics"][0]["metric"], "loss");
  j = Call("GET", "/api/v1/metrics/statistics?namespace=Train&metric=gpu&unit=Percent"
                  "&start=now-1m&period=60s&stat=Average&stat=p50&stat=SampleCount");
  ASSERT_EQ(j["datapoints"].size(), 1u) << j;
  EXPECT_EQ(j["datapoints"][0]["values"]["SampleCount"], 12.0);  // 4 values x 3 bodies
  EXPECT_EQ(j["datapoints"][0]["values"]["Average"], 82.5);
  EXPECT_EQ(j["datapoints"][0]["values"]["p50"], 80.0);
  j = Call("GET", "/api/v1/metrics/statistics?namespace=Train&metric=gpu&period=7s", "", 400);
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("period=7s"));
}

TEST_F(NativeApiTest, RemoteWriteStoresPrometheusSeriesByTheNamingRule) {
  const double stale = std::bit_cast<double>(uint64_t{0x7ff0000000000002});
  HttpRequest r = RemoteWriteRequest(
      {TimeSeries({{"__name__", "node_load1"}, {"instance", "gpu-3:9100"}, {"job", "node"}},
                  {{0.5, kNow - 2000}, {stale, kNow - 1000}, {0.75, kNow - 1000}}),
       TimeSeries({{"__name__", "train:loss"}, {"namespace", "/aws/sagemaker/TrainingJobs"},
                   {"TrainingJobName", "j1"}},
                  {{0.25, kNow - 1000}})});
  HttpResponse out = api_.Handle(r);
  EXPECT_EQ(out.status, 204) << out.body;
  auto load = fake_.ObservationsForTest(*model::MakeSeriesKey(
      "Prometheus", "node_load1", {{"instance", "gpu-3:9100"}, {"job", "node"}}, "None"));
  ASSERT_EQ(load.size(), 2u) << "the stale marker is not a value";
  EXPECT_EQ(load[1].value, 0.75);
  EXPECT_EQ(fake_.ObservationsForTest(*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs",
                                                            "train:loss",
                                                            {{"TrainingJobName", "j1"}}, "None"))
                .size(),
            1u);
  // The same delivery again (a sender's retry) is taken again.
  EXPECT_EQ(api_.Handle(r).status, 204);

  // Series that cannot be stored are refused (400: not retried); the others are stored.
  std::vector<std::pair<std::string, std::string>> many = {{"__name__", "wide"}};
  for (int i = 0; i < 31; ++i) many.emplace_back(absl::StrCat("l", i), "v");
  out = api_.Handle(RemoteWriteRequest(
      {TimeSeries(many, {{1, kNow}}), TimeSeries({{"__name__", "ok"}}, {{1, kNow - 1000}})}));
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("1 series could not be stored (the others were)"));
  EXPECT_EQ(fake_.ObservationsForTest(*model::MakeSeriesKey("Prometheus", "ok", {}, "None")).size(),
            1u);

  HttpRequest plain = r;
  plain.headers = {};
  plain.headers.Add("Content-Type", "application/x-protobuf");
  EXPECT_EQ(api_.Handle(plain).status, 415) << "remote write is snappy-compressed";
  HttpRequest json = r;
  json.headers = {};
  json.headers.Add("Content-Type", "application/json");
  json.headers.Add("Content-Encoding", "snappy");
  EXPECT_EQ(api_.Handle(json).status, 415);
  HttpRequest broken = r;
  broken.body = SnappyCompress(std::string("\x0a\x05" "ab", 4));
  out = api_.Handle(broken);
  EXPECT_EQ(out.status, 400);
  EXPECT_THAT(out.body, HasSubstr("a field's length runs past the end at byte 1"));
  EXPECT_EQ(Call("GET", "/api/v1/write", "", 405)["error"]["code"], "MethodNotAllowed");
}

TEST_F(NativeApiTest, MetricDataAnswersAsGetMetricDataMathIncluded) {
  nlohmann::json batch = {
      {"series",
       {{{"namespace", "Train"}, {"metric", "loss"}, {"dimensions", {{"TrainingJobName", "j1"}}},
         {"t_ms", {kNow - 240000, kNow - 180000, kNow - 120000}}, {"values", {4.0, 2.0, 1.0}}}}}};
  EXPECT_EQ(Call("POST", "/api/v1/samples", batch.dump())["accepted"], 3);
  nlohmann::json query = {
      {"StartTime", (kNow - 300000) / 1000},
      {"EndTime", kNow / 1000},
      {"ScanBy", "TimestampAscending"},
      {"MetricDataQueries",
       {{{"Id", "loss"},
         {"ReturnData", false},
         {"MetricStat",
          {{"Metric", {{"Namespace", "Train"}, {"MetricName", "loss"},
                       {"Dimensions", {{{"Name", "TrainingJobName"}, {"Value", "j1"}}}}}},
           {"Period", 60},
           {"Stat", "Average"}}}},
        {{"Id", "half"}, {"Expression", "loss / 2"}, {"Label", "half the loss"}}}}};
  nlohmann::json j = Call("POST", "/api/v1/metrics/data", query.dump());
  ASSERT_EQ(j["MetricDataResults"].size(), 1u) << j;
  const nlohmann::json& half = j["MetricDataResults"][0];
  EXPECT_EQ(half["Id"], "half");
  EXPECT_EQ(half["Label"], "half the loss");
  EXPECT_EQ(half["Values"], nlohmann::json({2.0, 1.0, 0.5}));
  EXPECT_EQ(half["Timestamps"][0], (kNow - 240000) / 1000);

  query["MetricDataQueries"][1]["Expression"] = "LOG(loss)";
  j = Call("POST", "/api/v1/metrics/data", query.dump(), 400);
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("LOG"));
  j = Call("POST", "/api/v1/metrics/data", "[1]", 400);
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("MetricDataQueries"));
  EXPECT_EQ(Call("GET", "/api/v1/metrics/data", "", 405)["error"]["code"], "MethodNotAllowed");
}

TEST_F(NativeApiTest, IngestTakesMembersInAnyOrderAndTheFirstOfARepeatedOne) {
  // Another order than the docs', a member the format does not know, and
  // "values" twice: the first counts, as a lookup by name would find it.
  const std::string body = absl::StrFormat(
      R"({"series": [{"values": [1.5, 2.5], "t_ms": [%d, %d], "comment": "x",)"
      R"( "dimensions": {"b": "2", "a": "1"}, "metric": "m", "namespace": "T",)"
      R"( "values": [9, 9], "unit": "Seconds"}]})",
      kNow - 2000, kNow - 1000);
  EXPECT_EQ(Call("POST", "/api/v1/samples", body)["accepted"], 2);
  auto got = fake_.ObservationsForTest(
      *model::MakeSeriesKey("T", "m", {{"a", "1"}, {"b", "2"}}, "Seconds"));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].value, 1.5);
  EXPECT_EQ(got[1].value, 2.5);
  nlohmann::json j = Call("POST", "/api/v1/samples",
                          R"({"series": [{"namespace": "T", "metric": "m", "values": [1]}]})", 400);
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("t_ms and values"));
}

TEST_F(NativeApiTest, IngestErrorsNameTheProblem) {
  struct Case {
    std::string body;
    std::string text;
  };
  for (const Case& c : std::vector<Case>{
           {"not json", "JSON object"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1, 2], "values": [1]}]})",
            "same length"},
           {R"({"series": [{"namespace": "", "metric": "m", "t_ms": [1], "values": [1]}]})",
            "series[0]"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1.5], "values": [1]}]})",
            "t_ms must be an integer"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1], "values": [1], "storage_resolution": 5}]})",
            "storage_resolution"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1], "values": ["1"]}]})",
            "value a number"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1], "values": [1], "counts": [-1]}]})",
            "count must be a finite number >= 0"},
           {R"({"series": [{"namespace": "T", "metric": "m", "dimensions": {"Host": 3}, "t_ms": [1], "values": [1]}]})",
            "dimension Host must be a string"},
           {R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [], "values": [], "statistic_sets": [{"t_ms": 1, "sum": 1}]}]})",
            "statistic set 0 needs"},
           {R"({"series": {}})", "must be a list of series"},
           {R"({"series": [[[[[[[[[[1]]]]]]]]]]})", "nests JSON deeper"},
       }) {
    nlohmann::json j = Call("POST", "/api/v1/samples", c.body, 400);
    EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr(c.text)) << c.body;
  }
  // Compressed bodies that are damaged, too large once decompressed, or in
  // an encoding the server does not know.
  auto encoded = [&](std::string encoding, std::string body, int status) {
    HttpRequest r;
    r.method = "POST";
    r.target = "/api/v1/samples";
    r.headers.Add("Content-Encoding", std::move(encoding));
    r.body = std::move(body);
    HttpResponse out = api_.Handle(r);
    EXPECT_EQ(out.status, status) << out.body;
    return nlohmann::json::parse(out.body, nullptr, false)["error"]["message"].get<std::string>();
  };
  const std::string good = R"({"series": [{"namespace": "T", "metric": "m", "t_ms": [1], "values": [1]}]})";
  std::string damaged = SnappyCompress(good);
  damaged.resize(damaged.size() - 3);
  EXPECT_THAT(encoded("snappy", damaged, 400), HasSubstr("not valid snappy"));
  EXPECT_THAT(encoded("snappy", good, 400), HasSubstr("not valid snappy"));
  const size_t limit = NativeOptions{}.max_decompressed_bytes;
  EXPECT_THAT(encoded("snappy", SnappyCompress(std::string(limit + 1, ' ')), 413),
              HasSubstr(absl::StrFormat("The decompressed request body (%d bytes, as its snappy "
                                        "header says) exceeds the limit of %d bytes.",
                                        limit + 1, limit)));
  EXPECT_THAT(encoded("br", good, 415), HasSubstr("use gzip or snappy"));
  EXPECT_EQ(fake_.PutCallsForTest(), 0u);
  // A store that refuses (e.g. overloaded) gives 503 so agents retry.
  fake_.RejectMetric("busy", absl::UnavailableError("ingest queue full"));
  nlohmann::json j = Call("POST", "/api/v1/samples",
                          R"({"series": [{"namespace": "T", "metric": "busy", "t_ms": [1], "values": [1]}]})",
                          503);
  EXPECT_EQ(j["error"]["code"], "Unavailable");
}

// The decoder keeps the keys of series it has seen (agents send the same
// series in every batch). Whatever it has seen before, each body decodes to
// the keys it names, with their canonical forms beside them for the store.
TEST(SamplesBodyTest, EveryDecodeGivesTheKeysTheBodyNamesWithTheirCanonicalForms) {
  const std::string body = absl::StrFormat(
      R"({"series": [)"
      R"({"namespace": "x", "metric": "yz", "t_ms": [%1$d], "values": [1]},)"
      R"({"namespace": "xy", "metric": "z", "t_ms": [%1$d], "values": [2]},)"
      R"({"namespace": "T", "metric": "m", "dimensions": {"b": "2", "a": "1"}, "t_ms": [%1$d], "values": [3]},)"
      R"({"namespace": "T", "metric": "m", "dimensions": {"a": "1", "b": "2"}, "t_ms": [%1$d], "values": [4]},)"
      R"({"namespace": "T", "metric": "m", "dimensions": {"a": "1", "b": "2"}, "unit": "Seconds", "t_ms": [%1$d], "values": [5]},)"
      R"({"namespace": "T", "metric": "m", "dimensions": {"a": "12"}, "t_ms": [%1$d], "values": [6]},)"
      R"({"namespace": "T", "metric": "m", "dimensions": {"a1": "2"}, "t_ms": [%1$d], "values": [7]}]})",
      kNow);
  const std::vector<model::SeriesKey> want = {
      *model::MakeSeriesKey("x", "yz", {}),
      *model::MakeSeriesKey("xy", "z", {}),
      *model::MakeSeriesKey("T", "m", {{"a", "1"}, {"b", "2"}}),
      *model::MakeSeriesKey("T", "m", {{"a", "1"}, {"b", "2"}}),
      *model::MakeSeriesKey("T", "m", {{"a", "1"}, {"b", "2"}}, "Seconds"),
      *model::MakeSeriesKey("T", "m", {{"a", "12"}}),
      *model::MakeSeriesKey("T", "m", {{"a1", "2"}}),
  };
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    absl::StatusOr<model::SampleBatch> batch = DecodeSamplesBody(body, 100);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->series.size(), want.size());
    ASSERT_EQ(batch->canonical_keys.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(batch->series[i].key, want[i]) << i;
      EXPECT_EQ(batch->canonical_keys[i], want[i].Canonical()) << i;
      EXPECT_EQ(batch->series[i].samples.at(0).value, static_cast<double>(i + 1));
    }
  }
  // A bad key is refused every time, not remembered as anything.
  const std::string bad =
      R"({"series": [{"namespace": "T", "metric": "", "t_ms": [1], "values": [1]}]})";
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<model::SampleBatch> batch = DecodeSamplesBody(bad, 100);
    EXPECT_FALSE(batch.ok());
    EXPECT_THAT(std::string(batch.status().message()), HasSubstr("series[0]"));
  }
}

// More series than the decoder keeps: it forgets the oldest, keeps no more
// than its bound, and every key stays right.
TEST(SamplesBodyTest, KeysStayRightPastTheDecodersMemory) {
  auto body_of = [](int from, int to) {
    std::string body = R"({"series": [)";
    for (int i = from; i < to; ++i) {
      absl::StrAppend(&body, i > from ? "," : "",
                      absl::StrFormat(R"({"namespace": "T", "metric": "m", "dimensions": {"Host": "h%d"},)"
                                      R"( "t_ms": [%d], "values": [%d]})",
                                      i, kNow, i));
    }
    return body + "]}";
  };
  for (auto [from, to] : {std::pair{0, 6000}, std::pair{6000, 12000}, std::pair{0, 3}}) {
    absl::StatusOr<model::SampleBatch> batch = DecodeSamplesBody(body_of(from, to), 20000);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->series.size(), static_cast<size_t>(to - from));
    for (int i = from; i < to; ++i) {
      const model::SeriesSamples& s = batch->series[i - from];
      ASSERT_EQ(s.key, *model::MakeSeriesKey("T", "m", {{"Host", absl::StrFormat("h%d", i)}})) << i;
      ASSERT_EQ(batch->canonical_keys[i - from], s.key.Canonical()) << i;
      ASSERT_EQ(s.samples.at(0).value, i);
    }
  }
  const size_t kept = DecodedSeriesKeysKeptForTest();
  EXPECT_GE(kept, 3u);
  EXPECT_LE(kept, 8192u);
  // A key of a long identity (over 1 KiB) is decoded right and not kept.
  const std::string host(600, 'h'), job(600, 'j');
  absl::StatusOr<model::SampleBatch> batch = DecodeSamplesBody(
      absl::StrFormat(R"({"series": [{"namespace": "T", "metric": "m",)"
                      R"( "dimensions": {"Host": "%s", "Job": "%s"}, "t_ms": [%d], "values": [1]}]})",
                      host, job, kNow),
      10);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->series.at(0).key,
            *model::MakeSeriesKey("T", "m", {{"Host", host}, {"Job", job}}));
  EXPECT_EQ(batch->canonical_keys.at(0), batch->series[0].key.Canonical());
  EXPECT_EQ(DecodedSeriesKeysKeptForTest(), kept);
}

// A batch decoded into again and again (what each request thread does) holds
// exactly the last body: kept keys only where the series at that position is
// the same, no samples, counts or statistic sets left from an earlier body,
// the resolution given or the default, and no series past the body's.
TEST(SamplesBodyTest, ABatchDecodedIntoAgainHoldsOnlyTheLastBody) {
  auto series = [](std::string_view host, std::string_view extra) {
    return absl::StrFormat(R"({"namespace": "T", "metric": "m", "dimensions": {"Host": "%s"}, %s})",
                           host, extra);
  };
  auto body = [](const std::vector<std::string>& parts) {
    return absl::StrCat(R"({"series": [)", absl::StrJoin(parts, ","), "]}");
  };
  const std::string t = absl::StrFormat(R"("t_ms": [%d, %d])", kNow - 1, kNow);
  const std::vector<std::string> bodies = {
      body({series("a", t + R"(, "values": [1, 2], "storage_resolution": 60)"),
            series("b", t + R"(, "values": [3, 4], "counts": [5, 6])"),
            series("c", absl::StrFormat(
                            R"("t_ms": [], "values": [], "statistic_sets": [{"t_ms": %d,)"
                            R"( "sample_count": 2, "sum": 3, "minimum": 1, "maximum": 2}])",
                            kNow))}),
      // The same series in the same places, other samples.
      body({series("a", t + R"(, "values": [7, 8])"), series("b", t + R"(, "values": [9, 10])"),
            series("c", t + R"(, "values": [11, 12])")}),
      // Other series in the same places, and fewer of them.
      body({series("c", t + R"(, "values": [13, 14])"), series("a", t + R"(, "values": [15, 16])")}),
      // More again.
      body({series("a", t + R"(, "values": [17, 18])"), series("d", t + R"(, "values": [19, 20])"),
            series("c", t + R"(, "values": [21, 22])")}),
  };
  model::SampleBatch reused;
  for (int round = 0; round < 2; ++round) {
    for (size_t b = 0; b < bodies.size(); ++b) {
      SCOPED_TRACE(absl::StrFormat("round %d, body %d", round, b));
      absl::StatusOr<model::SampleBatch> fresh = DecodeSamplesBody(bodies[b], 100);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      ASSERT_TRUE(DecodeSamplesBodyInto(bodies[b], 100, &reused).ok());
      ASSERT_EQ(reused.series.size(), fresh->series.size());
      EXPECT_EQ(reused.canonical_keys, fresh->canonical_keys);
      for (size_t i = 0; i < fresh->series.size(); ++i) {
        const model::SeriesSamples& got = reused.series[i];
        const model::SeriesSamples& want = fresh->series[i];
        EXPECT_EQ(got.key, want.key) << i;
        EXPECT_EQ(reused.canonical_keys[i], got.key.Canonical()) << i;
        EXPECT_EQ(got.storage_resolution_s, want.storage_resolution_s) << i;
        EXPECT_EQ(got.samples, want.samples) << i;
        EXPECT_EQ(got.weighted, want.weighted) << i;
        EXPECT_EQ(got.statistic_sets, want.statistic_sets) << i;
      }
    }
    // A refused body leaves part of itself; the next body decodes right.
    const std::string bad = body({series("z", t + R"(, "values": [1, 2])"),
                                  series("y", t + R"(, "values": [1])")});
    EXPECT_FALSE(DecodeSamplesBodyInto(bad, 100, &reused).ok());
    // A batch whose canonical keys someone cleared has no key to keep.
    if (round == 1) reused.canonical_keys.clear();
  }
  ASSERT_TRUE(DecodeSamplesBodyInto(bodies[0], 100, &reused).ok());
  EXPECT_EQ(reused.series[0].key, *model::MakeSeriesKey("T", "m", {{"Host", "a"}}));
  EXPECT_EQ(reused.series[0].samples, (std::vector<model::Sample>{{kNow - 1, 1}, {kNow, 2}}));

  // A slot's key is kept for the same dimensions in another order, and never
  // for a body that repeats one of them or names another part wrong.
  auto with = [&](std::string_view parts) {
    return absl::StrFormat(R"({"series": [{%s, "t_ms": [%d], "values": [1]}]})", parts, kNow);
  };
  const model::SeriesKey two = *model::MakeSeriesKey("T", "m", {{"Host", "a"}, {"Job", "x"}});
  ASSERT_TRUE(DecodeSamplesBodyInto(
                  with(R"("namespace": "T", "metric": "m", "dimensions": {"Host": "a", "Job": "x"})"),
                  100, &reused)
                  .ok());
  ASSERT_TRUE(DecodeSamplesBodyInto(
                  with(R"("namespace": "T", "metric": "m", "dimensions": {"Job": "x", "Host": "a"})"),
                  100, &reused)
                  .ok());
  EXPECT_EQ(reused.series.at(0).key, two);
  EXPECT_EQ(reused.canonical_keys.at(0), two.Canonical());
  for (std::string_view parts :
       {R"("namespace": "T", "metric": "m", "dimensions": {"Host": "a", "Host": "a"})",
        R"("namespace": "T", "metric": "m", "dimensions": {"Host": "a", "Job": ""})",
        R"("namespace": "", "metric": "m", "dimensions": {"Host": "a", "Job": "x"})"}) {
    SCOPED_TRACE(parts);
    EXPECT_FALSE(DecodeSamplesBodyInto(with(parts), 100, &reused).ok());
    // Put the two-dimension key back into the slot for the next case.
    ASSERT_TRUE(DecodeSamplesBodyInto(
                    with(R"("namespace": "T", "metric": "m", "dimensions": {"Job": "x", "Host": "a"})"),
                    100, &reused)
                    .ok());
  }
  // A new slot holds no key: a body naming an empty key is refused there too.
  model::SampleBatch unused;
  EXPECT_FALSE(DecodeSamplesBodyInto(with(R"("namespace": "", "metric": "")"), 100, &unused).ok());
  ASSERT_TRUE(DecodeSamplesBodyInto(
                  with(R"("namespace": "T", "metric": "m", "unit": "Count", "dimensions": {"Job": "x", "Host": "a"})"),
                  100, &reused)
                  .ok());
  EXPECT_EQ(reused.series.at(0).key.unit, "Count");
}

TEST(SamplesBodyTest, TrimmingABatchFreesLargeBuffersAndKeepsSmallOnes) {
  model::SampleBatch batch;
  batch.series.resize(2);
  batch.canonical_keys.resize(2);
  batch.series[0].samples.resize(5000);
  batch.series[1].samples.resize(100);
  batch.series[1].weighted.resize(5000);
  TrimDecodedSamples(&batch);
  EXPECT_EQ(batch.series.size(), 2u);
  EXPECT_EQ(batch.series[0].samples.capacity(), 0u);
  EXPECT_GE(batch.series[1].samples.capacity(), 100u);
  EXPECT_EQ(batch.series[1].weighted.capacity(), 0u);
  // Room for more series than a batch keeps, even when few are in use.
  batch.series.reserve(kMaxKeptDecodedSeries + 1);
  TrimDecodedSamples(&batch);
  EXPECT_EQ(batch.series.capacity(), 0u);
  EXPECT_TRUE(batch.canonical_keys.empty());
  // Buffers that each stay within their bound but add up to more than the
  // batch keeps.
  auto filled = [](size_t series) {
    model::SampleBatch b;
    b.series.resize(series);
    b.canonical_keys.resize(series);
    for (model::SeriesSamples& s : b.series) s.samples.reserve(4096);
    return b;
  };
  const size_t per_series = 4096 * sizeof(model::Sample);
  model::SampleBatch under = filled(kMaxKeptDecodedBytes / per_series - 2);
  TrimDecodedSamples(&under);
  EXPECT_EQ(under.series.size(), kMaxKeptDecodedBytes / per_series - 2);
  model::SampleBatch over = filled(kMaxKeptDecodedBytes / per_series + 1);
  TrimDecodedSamples(&over);
  EXPECT_TRUE(over.series.empty());
}

// Agents' batches: each kind decodes to what was encoded, from one parse,
// and a malformed batch is refused naming the member that is wrong.
TEST(AgentBatchTest, DecodesWhatWasEncodedAndNamesWhatIsWrong) {
  AgentBatch samples;
  samples.agent = "gpu-3-4242-1f2e9a0c";
  samples.seq = 17;
  samples.kind = AgentBatch::Kind::kSamples;
  model::SeriesSamples loss;
  loss.key = *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss",
                                   {{"TrainingJobName", "mnist-7"}}, "None");
  loss.samples = {{kNow - 1000, 0.5}, {kNow, 0.25}};
  samples.samples.series.push_back(loss);
  absl::StatusOr<AgentBatch> back = DecodeAgentBatch(EncodeAgentBatch(samples), 1000);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->agent, samples.agent);
  EXPECT_EQ(back->seq, 17);
  EXPECT_EQ(back->kind, AgentBatch::Kind::kSamples);
  ASSERT_EQ(back->samples.series.size(), 1u);
  EXPECT_EQ(back->samples.series[0].key, loss.key);
  EXPECT_EQ(back->samples.series[0].samples, loss.samples);

  AgentBatch logs;
  logs.agent = "a";
  logs.seq = 18;
  logs.kind = AgentBatch::Kind::kLogs;
  logs.logs = {{"/aws/sagemaker/TrainingJobs", "mnist-7/algo-1-1"},
               {{kNow, "epoch 1"}, {kNow + 1, "caf\xc3\xa9 \"quoted\""}}};
  back = DecodeAgentBatch(EncodeAgentBatch(logs), 1000);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, AgentBatch::Kind::kLogs);
  EXPECT_EQ(back->logs.stream.group, logs.logs.stream.group);
  EXPECT_EQ(back->logs.stream.stream, logs.logs.stream.stream);
  EXPECT_EQ(back->logs.events, logs.logs.events);

  AgentBatch create;
  create.agent = "a";
  create.seq = 1;
  create.kind = AgentBatch::Kind::kCreateJob;
  create.job.name = "mnist-7";
  create.job.creation_ms = kNow;
  create.job.command = {"python3", "train.py"};
  back = DecodeAgentBatch(EncodeAgentBatch(create), 1000);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, AgentBatch::Kind::kCreateJob);
  EXPECT_EQ(back->job, create.job);

  // A byte order mark in front (an editor's) is not a reason to refuse.
  back = DecodeAgentBatch("\xEF\xBB\xBF" + EncodeAgentBatch(logs), 1000);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->logs.events, logs.logs.events);

  const struct {
    std::string body, message;
  } bad[] = {
      {"[1]", "the body must be a JSON object {\"agent\", \"seq\", \"kind\", ...}"},
      {"", "is empty"},
      {"\xEF\xBB\xBF", "is empty"},
      {R"({"agent": "a", "seq": 1, "ki)", "is not JSON ("},
      {R"({"agent": "a", "seq": 123456789012345678901234567890, "kind": "logs"})", "is not JSON ("},
      {R"({"seq": 1, "kind": "logs"})", "agent batch: agent is missing"},
      {R"({"agent": "a", "seq": "1", "kind": "logs"})", "agent batch: seq must be an integer"},
      {R"({"agent": "a", "seq": 0, "kind": "logs"})", "agent must be 1-200 bytes and seq > 0"},
      {R"({"agent": "a", "seq": 1, "kind": "metrics"})",
       "kind \"metrics\" is not samples, logs, create_job or update_job"},
      {R"({"agent": "a", "seq": 1, "kind": "samples"})", "agent batch: series is missing"},
      {R"({"agent": "a", "seq": 1, "kind": "samples", "series": [{"namespace": "T", "metric": "m"}]})",
       "series[0]: t_ms and values must be lists"},
      {R"({"agent": "a", "seq": 1, "kind": "logs", "group": "g", "stream": "s"})",
       "agent batch: events must be a list"},
      {R"({"agent": "a", "seq": 1, "kind": "logs", "group": "g", "stream": "s", "events": [1]})",
       "events must be {t_ms, message} objects"},
      {R"({"agent": "a", "seq": 1, "kind": "logs", "group": "g", "stream": "s",
           "events": [{"t_ms": 1}]})",
       "agent batch event: message is missing"},
      {R"({"agent": "a", "seq": 1, "kind": "logs", "group": 7, "stream": "s", "events": []})",
       "agent batch: group must be a string"},
      {R"({"agent": "a", "seq": 1, "kind": "update_job"})", "agent batch: job is missing"},
  };
  for (const auto& c : bad) {
    absl::StatusOr<AgentBatch> b = DecodeAgentBatch(c.body, 1000);
    ASSERT_FALSE(b.ok()) << c.body;
    EXPECT_TRUE(absl::IsInvalidArgument(b.status())) << b.status();
    EXPECT_THAT(b.status().message(), HasSubstr(c.message)) << c.body;
  }
}

TEST_F(NativeApiTest, LogsAndJobs) {
  ASSERT_TRUE(fake_.CreateLogGroup("g", kNow).ok());
  ASSERT_TRUE(fake_.CreateLogStream({"g", "s"}, kNow).ok());
  ASSERT_TRUE(fake_.PutLogEvents({{"g", "s"}, {{kNow - 2, "one"}, {kNow - 1, "two"}}}, kNow).ok());
  nlohmann::json j = Call("GET", "/api/v1/logs/events?group=g&stream=s&limit=1");
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["message"], "one");
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&after=" + j["next"].get<std::string>());
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["message"], "two");
  std::string last = j["next"].get<std::string>();
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&after=" + last);
  EXPECT_TRUE(j["events"].empty());
  EXPECT_EQ(j["next"], last);
  EXPECT_EQ(Call("GET", "/api/v1/logs/events?group=g&stream=nope", "", 404)["error"]["message"],
            "The specified log stream does not exist.");
  EXPECT_EQ(Call("GET", "/api/v1/logs/streams?group=g")["streams"][0]["name"], "s");

  // The last lines, at once (the dashboard's log opens there), then the ones
  // before them, and on from the last.
  ASSERT_TRUE(fake_.PutLogEvents({{"g", "s"}, {{kNow, "three"}, {kNow, "four"}}}, kNow).ok());
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=1&limit=2");
  ASSERT_EQ(j["events"].size(), 2u);
  EXPECT_EQ(j["events"][0]["message"], "three");
  EXPECT_EQ(j["events"][1]["message"], "four");
  const std::string tail_next = j["next"].get<std::string>();
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=1&limit=1&before=" +
                      j["prev"].get<std::string>());
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["message"], "two");
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=1&before=" +
                      j["prev"].get<std::string>());
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["message"], "one");
  EXPECT_TRUE(Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=1&before=" +
                              j["prev"].get<std::string>())["events"]
                  .empty());
  ASSERT_TRUE(fake_.PutLogEvents({{"g", "s"}, {{kNow + 1, "five"}}}, kNow).ok());
  j = Call("GET", "/api/v1/logs/events?group=g&stream=s&after=" + tail_next);
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["message"], "five");
  EXPECT_EQ(Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=yes", "", 400)["error"]["message"],
            "query parameter tail=yes: want 1 (the last lines) or 0");
  EXPECT_EQ(Call("GET", "/api/v1/logs/events?group=g&stream=s&before=" + tail_next, "", 400)
                ["error"]["message"],
            "query parameter before reads back: give tail=1 with it");
  EXPECT_EQ(Call("GET", "/api/v1/logs/events?group=g&stream=s&tail=1&before=" + tail_next, "", 400)
                ["error"]["message"],
            "query parameter before is not the prev of an answer of this API");

  model::JobRecord job;
  job.name = "mnist-7";
  job.creation_ms = kNow;
  fake_.SetJob(job);
  EXPECT_EQ(Call("GET", "/api/v1/jobs")["jobs"][0]["name"], "mnist-7");
  EXPECT_EQ(Call("GET", "/api/v1/jobs/mnist-7")["status"], "InProgress");
  EXPECT_EQ(Call("POST", "/api/v1/jobs/mnist-7/stop")["status"], "Stopping");
  EXPECT_EQ(Call("POST", "/api/v1/jobs/mnist-7/stop", "", 409)["error"]["code"],
            "FailedPrecondition");
  EXPECT_EQ(Call("GET", "/api/v1/jobs/other", "", 404)["error"]["code"], "NotFound");
  // A job's streams read as empty until it prints (or its rules find)
  // something; the streams of a job that does not exist are missing.
  j = Call("GET",
           "/api/v1/logs/events?group=%2Faws%2Fsagemaker%2FTrainingJobs&stream=mnist-7%2Falgo-1-17");
  EXPECT_TRUE(j["events"].empty());
  EXPECT_TRUE(j["next"].is_string());
  EXPECT_TRUE(Call("GET", "/api/v1/logs/events?group=%2Faws%2Fsagemaker%2FTrainingJobs&stream=mnist-7%2Frules")
                  ["events"].empty());
  EXPECT_THAT(Call("GET", "/api/v1/logs/events?group=%2Faws%2Fsagemaker%2FTrainingJobs&stream=other%2Frules",
                   "", 404)["error"]["message"]
                  .get<std::string>(),
              HasSubstr("does not exist"));
}

}  // namespace
}  // namespace trainwatch::api
