// tw_query_bench: the range-query cases of ../shared/bench/tools/query_bench.py,
// run in-process against a data folder opened once (as a reader), through
// the same query engine the CloudWatch API serves: GetMetricData with one
// MetricStat query per series, period 60 s, Average or Maximum, over the
// whole generated duration.
//
//   tw_query_bench --data DIR --manifest SCALE.manifest.json [--n 20] [--warmup 2]
//   tw_query_bench --data DIR --manifest SCALE.manifest.json --count-only
//
// Prints JSON {"cases": {"one_avg": {"median_ms": ..}, ...}} like query_bench.py;
// --count-only prints the number of samples visible to queries.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "query/metrics.h"
#include "store/db.h"

namespace {

using namespace trainwatch;

struct Args {
  std::string data;
  std::string manifest;
  int n = 20;
  int warmup = 2;
  bool count_only = false;
};

int Fail(const std::string& msg) {
  std::fprintf(stderr, "tw_query_bench: %s\n", msg.c_str());
  return 1;
}

// One query per series: the 1-series case, or the 100 series of 5 hosts.
std::vector<query::MetricDataQuery> Queries(const store::ReadView& view, bool hundred,
                                            const std::string& stat) {
  std::vector<query::MetricDataQuery> out;
  auto add = [&](const model::SeriesKey& k) {
    query::MetricDataQuery q;
    q.id = absl::StrFormat("q%d", out.size());
    q.ns = k.ns;
    q.metric = k.metric;
    q.dimensions = k.dimensions;
    q.period_s = 60;
    q.stat = stat;
    out.push_back(std::move(q));
  };
  if (!hundred) {
    add(*model::MakeSeriesKey("trainwatch/TrainingJobs", "train_loss",
                              {{"TrainingJobName", "job-0000"}, {"Host", "algo-1"}}));
    return out;
  }
  // TrainingJobName=~"job-000[0-4]", Host="algo-1": every metric of 5 hosts.
  for (const char* ns : {"trainwatch/Hosts", "trainwatch/TrainingJobs"}) {
    (void)view.ForEachSeries(ns, "", "", [&](store::SeriesRef&& ref, std::string_view) {
      const std::string* job = ref.key.FindDimension("TrainingJobName");
      const std::string* host = ref.key.FindDimension("Host");
      if (job != nullptr && host != nullptr && *host == "algo-1" && job->size() == 8 &&
          job->substr(0, 7) == "job-000" && (*job)[7] >= '0' && (*job)[7] <= '4') {
        add(ref.key);
      }
      return true;
    });
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--data") {
      a.data = next();
    } else if (s == "--manifest") {
      a.manifest = next();
    } else if (s == "--n") {
      a.n = std::stoi(next());
    } else if (s == "--warmup") {
      a.warmup = std::stoi(next());
    } else if (s == "--count-only") {
      a.count_only = true;
    } else {
      return Fail("unknown argument " + s);
    }
  }
  if (a.data.empty() || a.manifest.empty()) return Fail("need --data DIR --manifest FILE");
  nlohmann::json man;
  {
    std::ifstream in(a.manifest);
    if (!in) return Fail("cannot read " + a.manifest);
    in >> man;
  }
  const int64_t start_ms = man["start_ms"].get<int64_t>();
  const int64_t duration_s = man["duration_s"].get<int64_t>();

  store::DbOptions o;
  o.data_dir = a.data;
  o.mode = store::OpenMode::kReader;
  auto db = store::Db::Open(o);
  if (!db.ok()) return Fail(std::string(db.status().message()));

  if (a.count_only) {
    auto view = (*db)->View();
    if (!view.ok()) return Fail(std::string(view.status().message()));
    double total = 0;
    absl::Status read_error;  // a series that cannot be read fails the count
    absl::Status s = view->ForEachSeries("", "", "", [&](store::SeriesRef&& ref, std::string_view) {
      std::vector<store::Aggregate> one(1);
      store::AggregateRequest req;
      req.start_ms = INT64_MIN / 2;
      req.end_ms = INT64_MAX / 2;
      req.origin_ms = req.start_ms;
      req.period_ms = INT64_MAX;
      read_error = view->AggregateSeries(ref.id, req, &one);
      if (!read_error.ok()) return false;
      total += one[0].count;
      return true;
    });
    if (s.ok()) s = read_error;
    if (!s.ok()) return Fail(std::string(s.message()));
    std::printf("%.0f\n", total);
    return 0;
  }

  // query_bench.py's window: (start + step, start + duration], step 60 s.
  const int64_t q_start = (start_ms / 1000 + 60) * 1000;
  const int64_t q_end = (start_ms / 1000 + duration_s) * 1000;
  nlohmann::json out;
  out["start"] = q_start / 1000;
  out["end"] = q_end / 1000;
  out["step"] = 60;
  out["n"] = a.n;
  out["interface"] = "in-process (query::GetMetricData on a reader Db)";
  struct Case {
    const char* name;
    bool hundred;
    const char* stat;
    size_t expect;
  };
  for (const Case& c : {Case{"one_avg", false, "Average", 1}, Case{"one_max", false, "Maximum", 1},
                        Case{"hundred_avg", true, "Average", 100},
                        Case{"hundred_max", true, "Maximum", 100}}) {
    std::vector<double> ms;
    size_t series = 0, points = 0;
    for (int i = 0; i < a.warmup + a.n; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto view = (*db)->View();
      if (!view.ok()) return Fail(std::string(view.status().message()));
      query::GetMetricDataRequest req;
      req.queries = Queries(*view, c.hundred, c.stat);
      req.start_ms = q_start;
      req.end_ms = q_end;
      req.scan_ascending = true;
      auto r = query::GetMetricData(*view, req);
      if (!r.ok()) return Fail(std::string(r.status().message()));
      const double elapsed =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      series = 0;
      points = 0;
      for (const auto& res : r->results) {
        if (!res.values.empty()) ++series;
        points += res.values.size();
      }
      if (i >= a.warmup) ms.push_back(elapsed);
    }
    std::sort(ms.begin(), ms.end());
    double sum = 0;
    for (double m : ms) sum += m;
    nlohmann::json cj;
    cj["median_ms"] = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    cj["mean_ms"] = sum / ms.size();
    cj["min_ms"] = ms.front();
    cj["max_ms"] = ms.back();
    cj["series"] = series;
    cj["expected_series"] = c.expect;
    cj["points"] = points;
    out["cases"][c.name] = cj;
    if (series != c.expect) {
      std::fprintf(stderr, "WARNING: %s returned %zu series, expected %zu\n", c.name, series,
                   c.expect);
    }
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
