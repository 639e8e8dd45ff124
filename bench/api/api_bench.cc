// Hot paths of the AWS and native endpoints, without sockets: what one
// request costs the api layer (decode, validate, hand to the sink, encode).
//   build/release/bench/api/api_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"
#include "api/native/native_api.h"
#include "api/sigv4.h"
#include "api/testing/api_client.h"
#include "util/clock.h"

namespace trainwatch::api {
namespace {

constexpr int64_t kNow = 1736942700000;

// Takes batches and forgets them.
class NullSink final : public model::SampleSink {
 public:
  absl::Status Put(const model::SampleBatch& batch) override {
    samples_ += batch.SampleCount();
    return absl::OkStatus();
  }
  std::atomic<uint64_t> samples_{0};
};

std::string JsonDatums(int n) {
  std::string body = R"({"Namespace": "/aws/sagemaker/TrainingJobs", "MetricData": [)";
  for (int i = 0; i < n; ++i) {
    body += absl::StrFormat(
        R"(%s{"MetricName": "m%d", "Dimensions": [{"Name": "Host", "Value": "job/algo-1"}],)"
        R"( "Timestamp": %d, "Value": %d.25, "Unit": "Percent", "StorageResolution": 1})",
        i == 0 ? "" : ",", i % 50, kNow / 1000 - 60 + i % 60, i);
  }
  return body + "]}";
}

std::string QueryDatums(int n) {
  std::string body = "Namespace=%2Faws%2Fsagemaker%2FTrainingJobs";
  for (int i = 1; i <= n; ++i) {
    body += absl::StrFormat(
        "&MetricData.member.%d.MetricName=m%d&MetricData.member.%d.Dimensions.member.1.Name=Host"
        "&MetricData.member.%d.Dimensions.member.1.Value=job%%2Falgo-1"
        "&MetricData.member.%d.Timestamp=2025-01-15T12%%3A04%%3A%02dZ&MetricData.member.%d.Value=%d.25",
        i, i % 50, i, i, i, i % 60, i, i);
  }
  return body;
}

void BM_PutMetricDataJson(benchmark::State& state) {
  util::FakeClock clock(kNow);
  NullSink sink;
  Api api(ApiOptions{}, Backends{&sink, nullptr, nullptr, nullptr}, clock);
  HttpRequest r = testing::CloudWatchJson("PutMetricData", JsonDatums(state.range(0)));
  for (auto _ : state) {
    HttpResponse out = api.Handle(r);
    if (out.status != 200) state.SkipWithError(out.body.c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * r.body.size());
}
BENCHMARK(BM_PutMetricDataJson)->Arg(20)->Arg(1000);

void BM_PutMetricDataQuery(benchmark::State& state) {
  util::FakeClock clock(kNow);
  NullSink sink;
  Api api(ApiOptions{}, Backends{&sink, nullptr, nullptr, nullptr}, clock);
  HttpRequest r = testing::QueryRequest("PutMetricData", QueryDatums(state.range(0)));
  for (auto _ : state) {
    HttpResponse out = api.Handle(r);
    if (out.status != 200) state.SkipWithError(out.body.c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * r.body.size());
}
BENCHMARK(BM_PutMetricDataQuery)->Arg(20)->Arg(1000);

// The agents' path: columnar series, samples/s through decode and the sink.
void BM_NativeSamples(benchmark::State& state) {
  util::FakeClock clock(kNow);
  NullSink sink;
  NativeApi api(NativeOptions{}, Backends{&sink, nullptr, nullptr, nullptr}, clock);
  int series = 100, per_series = static_cast<int>(state.range(0));
  std::string body = R"({"series": [)";
  for (int s = 0; s < series; ++s) {
    std::string t, v;
    for (int i = 0; i < per_series; ++i) {
      t += absl::StrFormat("%s%d", i ? "," : "", kNow - 60000 + i * 100);
      v += absl::StrFormat("%s%.4f", i ? "," : "", 0.5 + i * 0.0001 + s);
    }
    body += absl::StrFormat(
        R"(%s{"namespace": "/aws/sagemaker/TrainingJobs", "metric": "cpu%d",)"
        R"( "dimensions": {"Host": "job/algo-1"}, "unit": "Percent", "t_ms": [%s], "values": [%s]})",
        s ? "," : "", s, t, v);
  }
  body += "]}";
  HttpRequest r;
  r.method = "POST";
  r.target = "/api/v1/samples";
  r.body = body;
  for (auto _ : state) {
    HttpResponse out = api.Handle(r);
    if (out.status != 200) state.SkipWithError(out.body.c_str());
  }
  state.SetItemsProcessed(state.iterations() * series * per_series);
  state.SetBytesProcessed(state.iterations() * body.size());
}
BENCHMARK(BM_NativeSamples)->Arg(100)->Arg(1000);

void BM_GetMetricStatisticsXml1440(benchmark::State& state) {
  cloudwatch::GetMetricStatisticsResponse response;
  response.label = "train:loss";
  response.statistics = {*cloudwatch::ParsePlainStatistic("Average"),
                         *cloudwatch::ParsePlainStatistic("Maximum")};
  for (int i = 0; i < 1440; ++i) {
    response.datapoints.push_back({kNow + i * 60000, "None", {0.5 + i * 1e-4, 0.9 + i * 1e-4}});
  }
  for (auto _ : state) {
    std::string xml = cloudwatch::EncodeXml(response, "c0ffee00-0000-4000-8000-000000000001");
    benchmark::DoNotOptimize(xml);
  }
  state.SetItemsProcessed(state.iterations() * 1440);
}
BENCHMARK(BM_GetMetricStatisticsXml1440);

void BM_SigV4Verify(benchmark::State& state) {
  sigv4::CredentialStore store;
  (void)store.Add({"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""});
  HttpRequest r = testing::CloudWatchJson("PutMetricData", JsonDatums(20));
  sigv4::SignRequest(&r, *store.Find("AKIDEXAMPLE"), "us-east-1", "monitoring", kNow);
  for (auto _ : state) {
    absl::Status s = sigv4::Verify(r, Service::kCloudWatch, Protocol::kJson10, store, kNow,
                                   sigv4::VerifyOptions{});
    if (!s.ok()) state.SkipWithError("signature did not verify");
  }
}
BENCHMARK(BM_SigV4Verify);

}  // namespace
}  // namespace trainwatch::api
