// Store hot paths (Google Benchmark; release build):
//   BM_PutOneSample       the runner's write: one datapoint, durable on return
//   BM_PutHundredSeries   one write with 100 series x 1 sample
//   BM_PutAgentWrites     writes shaped like HTTP ingest of gen_metrics' `big`: 2000
//                         series (3 dimensions) x 1 sample per write, a second apart
//   BM_FollowerSeesWrite  writer Put -> a reader's View() (catch-up) finds it
//   BM_AggregateDay       one day of 1 s data, per-minute buckets, raw vs 60 s tier
//   BM_HeadMemory         bytes per active series (counters, not time)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "store/bulk_loader.h"
#include "store/db.h"

namespace {

using namespace trainwatch;

class TempFolder {
 public:
  TempFolder() {
    static std::atomic<int> n{0};
    path_ = (std::filesystem::temp_directory_path() /
             absl::StrFormat("tw-store-bench-%d-%d", static_cast<int>(::getpid()), n++))
                .string();
    std::filesystem::remove_all(path_);
  }
  ~TempFolder() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<store::Db> OpenWriter(const std::string& dir) {
  store::DbOptions o;
  o.data_dir = dir;
  auto db = store::Db::Open(o);
  if (!db.ok()) std::abort();
  return std::move(*db);
}

model::SeriesKey Key(int i, const char* metric = "train:loss") {
  return *model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", metric,
                               {{"TrainingJobName", absl::StrFormat("job-%d", i)}});
}

void BM_PutOneSample(benchmark::State& state) {
  TempFolder dir;
  auto db = OpenWriter(dir.path());
  model::SampleBatch b;
  b.series.push_back({Key(0), 1, {{0, 0}}, {}, {}});
  int64_t t = db->clock().NowMs();
  for (auto _ : state) {
    b.series[0].samples[0] = {++t, 0.25};
    if (!db->PutSamples(b).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PutOneSample);

void BM_PutHundredSeries(benchmark::State& state) {
  TempFolder dir;
  auto db = OpenWriter(dir.path());
  model::SampleBatch b;
  for (int i = 0; i < 100; ++i) b.series.push_back({Key(i), 1, {{0, 0}}, {}, {}});
  int64_t t = db->clock().NowMs();
  for (auto _ : state) {
    ++t;
    for (auto& s : b.series) s.samples[0] = {t, 0.5};
    if (!db->PutSamples(b).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_PutHundredSeries);

void BM_PutAgentWrites(benchmark::State& state) {
  TempFolder dir;
  auto db = OpenWriter(dir.path());
  const char* kMetrics[] = {"cpu_utilization", "gpu_utilization", "gpu_memory_utilization",
                            "train_loss", "learning_rate"};
  model::SampleBatch b;
  for (int i = 0; i < 2000; ++i) {
    b.series.push_back({*model::MakeSeriesKey(
                            i % 2 ? "trainwatch/Hosts" : "trainwatch/TrainingJobs",
                            kMetrics[i % 5],
                            {{"TrainingJobName", absl::StrFormat("job-%04d", i / 80)},
                             {"Host", absl::StrFormat("algo-%d", i / 20 % 4 + 1)},
                             {"GPU", absl::StrFormat("%d", i / 5 % 4)}}),
                        1,
                        {{0, 0}},
                        {},
                        {}});
  }
  // From an hour back, a second apart (not paced): the head seals as it fills.
  int64_t t = db->clock().NowMs() - 3'600'000;
  uint64_t noise = 88172645463325252ull;
  for (auto _ : state) {
    t += 1000;
    for (size_t i = 0; i < b.series.size(); ++i) {
      noise ^= noise << 13, noise ^= noise >> 7, noise ^= noise << 17;
      b.series[i].samples[0] = {t, 50.0 + static_cast<double>(noise % 10000) / 100.0};
    }
    if (!db->PutSamples(b).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(b.series.size()));
}
BENCHMARK(BM_PutAgentWrites)->Iterations(3000)->Unit(benchmark::kMillisecond);

void BM_FollowerSeesWrite(benchmark::State& state) {
  TempFolder dir;
  auto writer = OpenWriter(dir.path());
  model::SampleBatch b;
  b.series.push_back({Key(0), 1, {{0, 0}}, {}, {}});
  if (!writer->PutSamples(b).ok()) std::abort();
  store::DbOptions o;
  o.data_dir = dir.path();
  o.mode = store::OpenMode::kReader;
  auto reader = store::Db::Open(o);
  if (!reader.ok()) std::abort();
  int64_t t = writer->clock().NowMs();
  const model::SeriesKey key = Key(0);
  for (auto _ : state) {
    b.series[0].samples[0] = {++t, 1};
    if (!writer->PutSamples(b).ok()) std::abort();
    auto view = (*reader)->View();  // catches up with the writer's WAL
    std::vector<store::SeriesRef> refs;
    if (!view.ok() || !view->FindSeries(key.ns, key.metric, key.dimensions, &key.unit, &refs).ok() ||
        refs.empty()) {
      std::abort();
    }
    auto last = view->GetLastValue(refs[0].id);
    if (!last.ok() || !last->has_value() || (*last)->t_ms != t) {
      state.SkipWithError("the reader did not see the write");
      break;
    }
  }
}
BENCHMARK(BM_FollowerSeesWrite);

void BM_AggregateDay(benchmark::State& state) {
  static TempFolder* dir = nullptr;
  static std::unique_ptr<store::Db> db;
  if (db == nullptr) {
    dir = new TempFolder();
    db = OpenWriter(dir->path());
    if (!db->AddRetentionRule("*", "raw=forever").ok()) std::abort();
    auto loader = store::BulkLoader::Create(db.get());
    std::vector<int64_t> t(86400);
    std::vector<double> v(86400);
    for (int i = 0; i < 86400; ++i) {
      t[i] = 1704067200000 + int64_t{i} * 1000;
      v[i] = std::round(std::sin(i * 0.01) * 1e4) / 100;
    }
    if (!(*loader)->Add(Key(0), t, v).ok() || !(*loader)->Finish().ok()) std::abort();
  }
  const auto tier = static_cast<store::Tier>(state.range(0));
  auto view = db->View();
  std::vector<store::SeriesRef> refs;
  const model::SeriesKey key = Key(0);
  if (!view->FindSeries(key.ns, key.metric, key.dimensions, &key.unit, &refs).ok()) std::abort();
  for (auto _ : state) {
    std::vector<store::Aggregate> buckets(1440);
    store::AggregateRequest req;
    req.start_ms = 1704067200000;
    req.end_ms = req.start_ms + 86'400'000;
    req.origin_ms = req.start_ms;
    req.period_ms = 60'000;
    req.source = tier;
    if (!view->AggregateSeries(refs[0].id, req, &buckets).ok()) std::abort();
    benchmark::DoNotOptimize(buckets);
  }
  state.SetItemsProcessed(state.iterations() * 86400);
  state.SetLabel(std::string(store::TierName(tier)));
}
BENCHMARK(BM_AggregateDay)->Arg(0)->Arg(1);

void BM_HeadMemory(benchmark::State& state) {
  const int series = static_cast<int>(state.range(0));
  for (auto _ : state) {
    TempFolder dir;
    auto db = OpenWriter(dir.path());
    model::SampleBatch b;
    const int64_t t = db->clock().NowMs();
    for (int i = 0; i < series; ++i) {
      b.series.push_back({*model::MakeSeriesKey("trainwatch/Profiler", "GPUUtilization",
                                                {{"Host", absl::StrFormat("job-%d/algo-1", i)},
                                                 {"GPU", std::to_string(i % 8)}},
                                                "Percent"),
                          1,
                          {{t, 50.5}},
                          {},
                          {}});
    }
    if (!db->PutSamples(b).ok()) std::abort();
    store::Db::HeadStats stats = db->GetHeadStats();
    state.counters["registry_bytes_per_series"] =
        static_cast<double>(stats.registry_bytes) / series;
    state.counters["head_bytes_per_series"] = static_cast<double>(stats.head_bytes) / series;
    state.counters["open_series"] = static_cast<double>(stats.open_series);
  }
}
BENCHMARK(BM_HeadMemory)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
