// What metric math costs a GetMetricData (BENCHMARKS.md, issue 31's row):
// 100 series of 3 h at 60 s in a store, asked for through the api
// (JSON 1.0, decode to encode, no sockets) with the 100 plain MetricStat
// queries, and with the same queries plus 10 expressions over them.
// Alternating pairs; prints each pair's medians and the ratio's median,
// min and max.
//
//   build/release/bench/api/metric_math_bench [--pairs 7] [--requests 15]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/testing/api_client.h"
#include "nlohmann/json.hpp"
#include "query/store_reader.h"
#include "store/db.h"
#include "util/clock.h"

namespace {

using namespace trainwatch;

constexpr int kSeries = 100;
constexpr int64_t kNowMs = 1736953200000;  // 2025-01-15T15:00:00Z
constexpr int64_t kHours = 3;

nlohmann::json Queries(bool math) {
  nlohmann::json q = nlohmann::json::array();
  for (int i = 0; i < kSeries; ++i) {
    q.push_back({{"Id", absl::StrFormat("m%d", i)},
                 {"MetricStat",
                  {{"Metric",
                    {{"Namespace", "bench/Math"},
                     {"MetricName", "loss"},
                     {"Dimensions", {{{"Name", "Host"}, {"Value", absl::StrFormat("h%03d", i)}}}}}},
                   {"Period", 60},
                   {"Stat", "Average"}}}});
  }
  if (math) {
    for (const char* e : {"SUM(METRICS())", "AVG(METRICS())", "MAX(METRICS())", "m0 / m1 * 100",
                          "RATE(m2)", "DIFF(m3)", "FILL(m4, LINEAR)", "IF(m5 > 0.5, m5, 0)",
                          "ABS(m6 - AVG(m6))", "STDDEV(METRICS())"}) {
      q.push_back({{"Id", absl::StrFormat("e%d", q.size())}, {"Expression", e}});
    }
  }
  return q;
}

double MedianMs(api::Api& api, const api::HttpRequest& request, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    api::HttpResponse r = api.Handle(request);
    auto t1 = std::chrono::steady_clock::now();
    if (r.status != 200) {
      std::fprintf(stderr, "metric_math_bench: %d %s\n", r.status, r.body.substr(0, 300).c_str());
      std::exit(1);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int pairs = 7, requests = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--pairs") pairs = std::atoi(argv[i + 1]);
    else if (flag == "--requests") requests = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: metric_math_bench [--pairs 7] [--requests 15]\n");
      return 2;
    }
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrFormat("tw-math-bench-%d", getpid()))
          .string();
  util::FakeClock clock(kNowMs);
  store::DbOptions options;
  options.data_dir = dir;
  options.clock = &clock;
  options.background_thread = false;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (!db.ok()) {
    std::fprintf(stderr, "metric_math_bench: %s\n", db.status().ToString().c_str());
    return 1;
  }
  // A sample every 10 s for 3 h per series, sealed into chunks and rollups.
  for (int i = 0; i < kSeries; ++i) {
    model::SampleBatch batch;
    auto key = model::MakeSeriesKey("bench/Math", "loss", {{"Host", absl::StrFormat("h%03d", i)}},
                                    "None");
    std::vector<model::Sample> samples;
    for (int64_t t = kNowMs - kHours * 3600000; t < kNowMs; t += 10000) {
      samples.push_back({t, 1.0 / (1.0 + static_cast<double>(t - kNowMs + kHours * 3600000) / 1e6) +
                                0.01 * i});
    }
    batch.series.push_back({*key, 1, std::move(samples), {}, {}});
    if (absl::Status s = (*db)->PutSamples(batch); !s.ok()) {
      std::fprintf(stderr, "metric_math_bench: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  (void)(*db)->SealAll();
  query::StoreReader reader(**db);
  api::Backends backends;
  backends.metrics = &reader;
  api::Api api(api::ApiOptions{}, backends, clock);
  auto request = [&](bool math) {
    nlohmann::json body = {{"MetricDataQueries", Queries(math)},
                           {"StartTime", (kNowMs - kHours * 3600000) / 1000},
                           {"EndTime", kNowMs / 1000}};
    return api::testing::CloudWatchJson("GetMetricData", body.dump());
  };
  const api::HttpRequest plain = request(false), with_math = request(true);
  MedianMs(api, plain, 3);  // warm-up
  MedianMs(api, with_math, 3);
  std::vector<double> ratios;
  for (int p = 0; p < pairs; ++p) {
    const double a = MedianMs(api, plain, requests);
    const double b = MedianMs(api, with_math, requests);
    ratios.push_back(b / a);
    std::printf("pair %d: plain %.2f ms, with 10 expressions %.2f ms, ratio %.3f\n", p + 1, a, b,
                b / a);
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  std::printf("ratio (with expressions / plain): median %.3f [%.3f-%.3f] over %d pairs\n",
              sorted[sorted.size() / 2], sorted.front(), sorted.back(), pairs);
  db->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
