// The receiver cases of the Prometheus remote-write compliance suite
// (github.com/prometheus/compliance, remotewrite/receiver: request_test.go,
// rw1_compat_test.go, metric_test.go) that apply to remote write 1.0, ported:
// the same requests, the same expected outcome (2xx stored, 4xx refused and
// not retried, 415 for what is not remote write 1.0), and what the store
// holds afterwards. The 2.0-only cases (symbols, histograms, exemplars,
// metadata, the written-samples headers) do not apply: 2.0 is answered 415
// (native_api_test.cc).
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "api/native/native_api.h"
#include "api/testing/fake_backend.h"
#include "api/testing/remote_write.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/series.h"
#include "util/clock.h"

namespace trainwatch::api {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;
using testing::RemoteWriteRequest;
using testing::TimeSeries;

constexpr int64_t kNow = 1736942700000;

class RemoteWriteCompliance : public ::testing::Test {
 protected:
  RemoteWriteCompliance()
      : clock_(kNow), fake_(clock_), api_(NativeOptions{}, fake_.backends(), clock_) {}

  // Samples stored for the series `labels` name by the naming rule
  // (docs/prometheus.md): __name__ the metric, the rest dimensions.
  size_t Stored(const Labels& labels) {
    std::string name;
    std::vector<model::Dimension> dims;
    for (const auto& [k, v] : labels) {
      if (k == "__name__") {
        name = v;
      } else {
        dims.push_back({k, v});
      }
    }
    auto key = model::MakeSeriesKey("Prometheus", name, dims, "None");
    EXPECT_TRUE(key.ok()) << key.status();
    return key.ok() ? fake_.ObservationsForTest(*key).size() : 0;
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  NativeApi api_;
};

bool Success(int status) { return status >= 200 && status < 300; }
bool ClientError(int status) { return status >= 400 && status < 500; }

// The values of metric_test.go: a plain one, Prometheus's stale marker, a
// NaN and both infinities. Only finite values are stored (a stale marker
// ends a series in Prometheus; CloudWatch has no such value); each request
// is answered as for a plain value.
struct Value {
  const char* name;
  double value;
};
const std::vector<Value>& Values() {
  static const std::vector<Value> values = {
      {"1.0", 1.0},
      {"StaleNaN", std::bit_cast<double>(uint64_t{0x7ff0000000000002})},
      {"NaN", std::numeric_limits<double>::quiet_NaN()},
      {"Inf", std::numeric_limits<double>::infinity()},
      {"-Inf", -std::numeric_limits<double>::infinity()},
  };
  return values;
}

Labels JobInstance(std::string instance = "localhost:9090") {
  return {{"__name__", "up"}, {"instance", std::move(instance)}, {"job", "testjob"}};
}

TEST_F(RemoteWriteCompliance, BadContentTypesAre415) {
  for (const char* type : {"application/json", "image/png"}) {
    HttpRequest r = RemoteWriteRequest({TimeSeries({{"__name__", "up"}}, {{1.0, kNow}})});
    r.headers.Set("Content-Type", type);
    r.body[0] = '0';
    EXPECT_EQ(api_.Handle(r).status, 415) << type;
  }
}

TEST_F(RemoteWriteCompliance, BadContentEncodingsAre415) {
  for (const char* encoding : {"gzip", "deflate"}) {
    HttpRequest r = RemoteWriteRequest({TimeSeries({{"__name__", "up"}}, {{1.0, kNow}})});
    r.headers.Set("Content-Encoding", encoding);
    r.body[0] = '0';
    EXPECT_EQ(api_.Handle(r).status, 415) << encoding;
  }
}

TEST_F(RemoteWriteCompliance, CorruptBodiesAreRefusedNotRetried) {
  for (char first : {'0', '\xff'}) {  // request_test.go, rw1_compat_test.go
    HttpRequest r = RemoteWriteRequest({TimeSeries({{"__name__", "up"}}, {{1.0, kNow}})});
    r.body[0] = first;
    const HttpResponse out = api_.Handle(r);
    EXPECT_TRUE(ClientError(out.status)) << out.status << " " << out.body;
  }
  EXPECT_EQ(Stored({{"__name__", "up"}}), 0u);
}

TEST_F(RemoteWriteCompliance, VersionOneRequestsWithoutAVersionHeaderAreTaken) {
  HttpRequest r = RemoteWriteRequest({TimeSeries(JobInstance(), {{1.0, kNow}}),
                                      TimeSeries({{"__name__", "http_requests_total"},
                                                  {"instance", "localhost:9090"},
                                                  {"job", "testjob"}},
                                                 {{100.0, kNow}})});
  r.headers = {};
  r.headers.Add("Content-Encoding", "snappy");
  r.headers.Add("Content-Type", "application/x-protobuf");
  const HttpResponse out = api_.Handle(r);
  EXPECT_TRUE(Success(out.status)) << out.status << " " << out.body;
  EXPECT_EQ(Stored(JobInstance()), 1u);
}

TEST_F(RemoteWriteCompliance, SingleMetric) {
  struct Case {
    const char* name;
    Labels labels;
    bool success;
  };
  const std::vector<Case> cases = {
      {"simple metric", {{"__name__", "up"}}, true},
      {"simple metric with multiple labels", JobInstance(), true},
      {"simple metric with newlines",
       {{"__name__", "up"}, {"instance", "localhost:9090"}, {"job", "test\njob\n"}},
       true},
      {"simple metric with dots",
       {{"__name__", "resource.cpu.usage"}, {"instance.name", "localhost:9090"},
        {"job.name", "testjob"}},
       true},
      {"simple metric with spaces",
       {{"__name__", "resource cpu usage"}, {"instance name", "localhost:9090"},
        {"job name", "testjob"}},
       true},
      {"simple metric without name label", {{"instance", "localhost:9090"}, {"job", "testjob"}},
       false},
      {"empty metric", {}, false},
  };
  int64_t t = kNow - 100000;
  for (const Value& v : Values()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(v.name) + ": " + c.name);
      const size_t before = c.success ? Stored(c.labels) : 0;
      const HttpResponse out = api_.Handle(RemoteWriteRequest({TimeSeries(c.labels, {{v.value, ++t}})}));
      if (c.success) {
        EXPECT_TRUE(Success(out.status)) << out.status << " " << out.body;
        EXPECT_EQ(Stored(c.labels) - before, std::isfinite(v.value) ? 1u : 0u);
      } else {
        EXPECT_TRUE(ClientError(out.status)) << out.status << " " << out.body;
      }
    }
  }
}

TEST_F(RemoteWriteCompliance, MultipleMetricsStoreWhatCanBeStored) {
  struct Case {
    const char* name;
    std::vector<Labels> series;
    bool success;
    size_t valid;  // series that are stored
  };
  auto nameless = [](const char* instance) {
    return Labels{{"instance", instance}, {"job", "testjob"}};
  };
  const std::vector<Case> cases = {
      {"multiple metrics",
       {JobInstance(), JobInstance("localhost:9091"), JobInstance("localhost:9092"),
        JobInstance("localhost:9093")},
       true, 4},
      {"multiple metrics, without name label",
       {nameless("localhost:9090"), nameless("localhost:9091"), nameless("localhost:9092"),
        nameless("localhost:9093")},
       false, 0},
      {"multiple metrics, 1 without name label",
       {nameless("localhost:9090"), JobInstance("localhost:9091"), JobInstance("localhost:9092"),
        JobInstance("localhost:9093")},
       false, 3},
  };
  int64_t t = kNow - 100000;
  for (const Value& v : Values()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(v.name) + ": " + c.name);
      std::vector<std::string> series;
      std::map<size_t, size_t> before;  // index of a named series -> stored before
      ++t;
      for (size_t i = 0; i < c.series.size(); ++i) {
        series.push_back(TimeSeries(c.series[i], {{v.value, t}}));
        if (c.series[i].front().first == "__name__") before[i] = Stored(c.series[i]);
      }
      const HttpResponse out = api_.Handle(RemoteWriteRequest(series));
      EXPECT_EQ(Success(out.status), c.success) << out.status << " " << out.body;
      if (!c.success) {
        EXPECT_TRUE(ClientError(out.status)) << out.status;
      }
      size_t stored = 0;
      for (const auto& [i, n] : before) stored += Stored(c.series[i]) - n;
      EXPECT_EQ(stored, std::isfinite(v.value) ? c.valid : 0u);
    }
  }
}

}  // namespace
}  // namespace trainwatch::api
