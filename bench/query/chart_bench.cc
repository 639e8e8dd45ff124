// Chart reads (Google Benchmark; release build):
//   BM_Chart      1,000,000 raw points of one series -> 800 columns (M4), through
//                 query::StoreReader::Chart: chunks decoded, reduced, answer built.
//                 Arg 0: values with 2 decimals (exact decimal chunks); 1: full
//                 doubles (XOR chunks).
//   BM_ChartStep  the same with x=step (10,000 steps of the job's step metric).
//   BM_M4         the reduction alone: 1,000,000 points in time order -> 800 columns.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "query/m4.h"
#include "query/store_reader.h"
#include "store/bulk_loader.h"
#include "store/db.h"

namespace {

using namespace trainwatch;

constexpr int kPoints = 1'000'000;
constexpr int64_t kT0 = 1704067200000;

class TempFolder {
 public:
  TempFolder() {
    static std::atomic<int> n{0};
    path_ = (std::filesystem::temp_directory_path() /
             absl::StrFormat("tw-chart-bench-%d-%d", static_cast<int>(::getpid()), n++))
                .string();
    std::filesystem::remove_all(path_);
  }
  ~TempFolder() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

model::SeriesKey Key(const std::string& metric) {
  return *model::MakeSeriesKey(std::string(model::kTrainingJobsNamespace), metric,
                               {{std::string(model::kTrainingJobNameDim), "job-1"}});
}

// One store for every benchmark: "loss2" (2 decimals) and "loss" (doubles),
// a point every 10 ms, and "step", a step every 100 points.
store::Db& SharedDb() {
  static TempFolder* dir = new TempFolder();
  static std::unique_ptr<store::Db> db = [] {
    store::DbOptions o;
    o.data_dir = dir->path();
    auto opened = store::Db::Open(o);
    if (!opened.ok()) std::abort();
    std::unique_ptr<store::Db> d = std::move(*opened);
    if (!d->AddRetentionRule("*", "raw=forever").ok()) std::abort();
    auto loader = store::BulkLoader::Create(d.get());
    std::vector<int64_t> t(kPoints);
    std::vector<double> exact(kPoints), full(kPoints);
    double walk = 0;
    for (int i = 0; i < kPoints; ++i) {
      t[i] = kT0 + int64_t{i} * 10;
      exact[i] = std::round((1 + std::sin(i * 1e-4)) * 1e4) / 100;
      walk += std::sin(i * 0.37) * 0.01;
      full[i] = walk;
    }
    std::vector<int64_t> step_t;
    std::vector<double> steps;
    for (int i = 0; i < kPoints; i += 100) {
      step_t.push_back(t[i]);
      steps.push_back(i / 100);
    }
    if (!(*loader)->Add(Key("loss2"), t, exact).ok() || !(*loader)->Add(Key("loss"), t, full).ok() ||
        !(*loader)->Add(Key("step"), step_t, steps).ok() || !(*loader)->Finish().ok()) {
      std::abort();
    }
    model::JobRecord job;
    job.name = "job-1";
    job.creation_ms = kT0;
    job.last_modified_ms = kT0;
    job.step_metric = "step";
    if (!d->CreateJob(job).ok()) std::abort();
    return d;
  }();
  return *db;
}

void RunChart(benchmark::State& state, query::ChartX x) {
  query::StoreReader reader(SharedDb());
  query::ChartQuery q;
  const model::SeriesKey key = Key(state.range(0) == 0 ? "loss2" : "loss");
  q.metric = {key.ns, key.metric, key.dimensions};
  q.start_ms = kT0;
  q.end_ms = kT0 + int64_t{kPoints} * 10;
  q.width = 800;
  q.x = x;
  q.job = "job-1";
  size_t points = 0;
  for (auto _ : state) {
    absl::StatusOr<query::ChartAnswer> a = reader.Chart(q);
    if (!a.ok() || a->raw) std::abort();
    points = a->x.size();
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations() * kPoints);
  state.SetLabel(absl::StrFormat("%s, %d points in the answer",
                                 state.range(0) == 0 ? "2 decimals" : "doubles", points));
}

void BM_Chart(benchmark::State& state) { RunChart(state, query::ChartX::kTime); }
BENCHMARK(BM_Chart)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ChartStep(benchmark::State& state) { RunChart(state, query::ChartX::kStep); }
BENCHMARK(BM_ChartStep)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_M4(benchmark::State& state) {
  std::vector<double> v(kPoints);
  for (int i = 0; i < kPoints; ++i) v[i] = std::sin(i * 1e-3);
  for (auto _ : state) {
    query::M4 m4(kT0, kT0 + int64_t{kPoints} * 10, 800);
    for (int i = 0; i < kPoints; ++i) m4.Add(kT0 + int64_t{i} * 10, kT0 + int64_t{i} * 10, v[i]);
    std::vector<query::ChartPoint> out;
    m4.Finish(&out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * kPoints);
}
BENCHMARK(BM_M4)->Unit(benchmark::kMillisecond);

}  // namespace
