// Chunk codec and quantile sketch microbenchmarks (BENCHMARKS.md, "Codec").
//
//   build/release/bench/codec/codec_bench [--benchmark_filter=Chunk]
//
// Chunk cases, 1024 samples each (the recommended chunk size):
//   best     regular 1000 ms timestamps, a percentage with one decimal
//   typical  the gen_metrics.py mix: 2 decimals AR(1), byte counter, full-precision
//            loss, 1-decimal GPU utilisation with dips, step function (cycled per chunk)
//   worst    random 64-bit patterns as values, timestamps 1000 ms +- 50 ms jitter
//   lr       a cosine learning-rate schedule of the training step, sampled every
//            second at 5.37 steps a second (the stepped value encoding)
// Counters: items_per_second = samples/s; bytes_per_sample = encoded size.
//
// Sketch cases: a minute (60 values, exact) or an hour (3600 values, bucketed)
// of a two-decimal percentage; Add per value, Merge of two hour sketches,
// Quantile(0.99), EncodeTo/Decode (counter: encoded bytes).
#include <benchmark/benchmark.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "codec/chunk.h"
#include "codec/quantile_sketch.h"

namespace {

using trainwatch::codec::ChunkBuilder;
using trainwatch::codec::ChunkReader;
using trainwatch::codec::DecodeChunk;

constexpr size_t kChunkSamples = 1024;
constexpr int64_t kStart = 1704067200000;

struct Samples {
  std::vector<int64_t> t_ms;
  std::vector<double> values;
};

double Round(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

std::vector<Samples> BestCase() {
  Samples s;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 0.15);
  for (size_t i = 0; i < kChunkSamples; ++i) {
    s.t_ms.push_back(kStart + static_cast<int64_t>(i) * 1000);
    s.values.push_back(Round(40.0 + noise(rng), 1));
  }
  return {s};
}

std::vector<Samples> TypicalCase() {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<Samples> out(5);
  double x = 0, counter = 5e11, step = 0.8123;
  for (size_t i = 0; i < kChunkSamples; ++i) {
    const int64_t t = kStart + static_cast<int64_t>(i) * 1000;
    const bool eval = (i % 600) < 40;
    x = 0.9 * x + 2.5 * gauss(rng);
    counter += std::max(0.0, std::floor(1e8 * (1 + 0.2 * gauss(rng))));
    if (uniform(rng) < 0.003) step = Round(0.8 + 0.1 * uniform(rng), 4);
    const double loss =
        (0.3 + 2.0 * std::exp(-static_cast<double>(i) / 3000)) * (1 + 0.06 * gauss(rng));
    const double gpu = eval ? 30 + 30 * uniform(rng) : 95 + 1.5 * gauss(rng);
    const double values[5] = {Round(60 + x, 2), counter, loss, Round(std::min(100.0, gpu), 1),
                              step};
    for (int k = 0; k < 5; ++k) {
      out[k].t_ms.push_back(t);
      out[k].values.push_back(values[k]);
    }
  }
  return out;
}

std::vector<Samples> WorstCase() {
  Samples s;
  std::mt19937_64 rng(3);
  int64_t t = kStart;
  for (size_t i = 0; i < kChunkSamples; ++i) {
    t += 950 + static_cast<int64_t>(rng() % 101);
    s.t_ms.push_back(t);
    s.values.push_back(std::bit_cast<double>(rng()));
  }
  return {s};
}

std::vector<Samples> LearningRateCase() {
  Samples s;
  const double total_steps = 300000;
  for (size_t i = 0; i < kChunkSamples; ++i) {
    const auto step = static_cast<double>(static_cast<int64_t>(40000 + 5.37 * static_cast<double>(i)));
    s.t_ms.push_back(kStart + static_cast<int64_t>(i) * 1000);
    s.values.push_back(3e-4 * 0.5 * (1.0 + std::cos(M_PI * step / total_steps)));
  }
  return {s};
}

std::vector<Samples> Case(int which) {
  switch (which) {
    case 0:
      return BestCase();
    case 1:
      return TypicalCase();
    case 2:
      return WorstCase();
    default:
      return LearningRateCase();
  }
}

const char* CaseName(int which) {
  static const char* kNames[] = {"best", "typical", "worst", "lr"};
  return kNames[which];
}

void BM_ChunkEncode(benchmark::State& state) {
  const std::vector<Samples> series = Case(static_cast<int>(state.range(0)));
  state.SetLabel(CaseName(static_cast<int>(state.range(0))));
  ChunkBuilder builder;
  size_t bytes = 0, samples = 0, i = 0;
  for (auto _ : state) {
    const Samples& s = series[i++ % series.size()];
    builder.Clear();
    for (size_t j = 0; j < s.t_ms.size(); ++j) builder.Append(s.t_ms[j], s.values[j]);
    std::string chunk = builder.Finish();
    bytes += chunk.size();
    samples += s.t_ms.size();
    benchmark::DoNotOptimize(chunk);
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
  state.counters["bytes_per_sample"] = static_cast<double>(bytes) / static_cast<double>(samples);
}
BENCHMARK(BM_ChunkEncode)->DenseRange(0, 3);

void BM_ChunkDecode(benchmark::State& state) {
  const std::vector<Samples> series = Case(static_cast<int>(state.range(0)));
  state.SetLabel(CaseName(static_cast<int>(state.range(0))));
  std::vector<std::string> chunks;
  for (const Samples& s : series) {
    ChunkBuilder builder;
    for (size_t j = 0; j < s.t_ms.size(); ++j) builder.Append(s.t_ms[j], s.values[j]);
    chunks.push_back(builder.Finish());
  }
  std::vector<int64_t> t_ms;
  std::vector<double> values;
  size_t samples = 0, i = 0;
  for (auto _ : state) {
    t_ms.clear();
    values.clear();
    absl::Status st = DecodeChunk(chunks[i++ % chunks.size()], &t_ms, &values);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    samples += t_ms.size();
    benchmark::DoNotOptimize(values.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
}
BENCHMARK(BM_ChunkDecode)->DenseRange(0, 3);

void BM_ChunkReaderNext(benchmark::State& state) {
  const std::vector<Samples> series = Case(static_cast<int>(state.range(0)));
  state.SetLabel(CaseName(static_cast<int>(state.range(0))));
  std::vector<std::string> chunks;
  for (const Samples& s : series) {
    ChunkBuilder builder;
    for (size_t j = 0; j < s.t_ms.size(); ++j) builder.Append(s.t_ms[j], s.values[j]);
    chunks.push_back(builder.Finish());
  }
  size_t samples = 0, i = 0;
  for (auto _ : state) {
    auto reader = ChunkReader::Open(chunks[i++ % chunks.size()]);
    int64_t t;
    double v, sum = 0;
    while (reader->Next(&t, &v)) sum += v;
    samples += reader->size();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
}
BENCHMARK(BM_ChunkReaderNext)->DenseRange(0, 3);

std::vector<double> CpuPercent(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> v(n);
  double x = 0;
  for (double& value : v) {
    x = 0.9 * x + 2.5 * gauss(rng);
    value = Round(60 + x, 2);
  }
  return v;
}

using trainwatch::codec::QuantileSketch;

QuantileSketch SketchOf(const std::vector<double>& values) {
  QuantileSketch s;
  for (double v : values) s.Add(v);
  return s;
}

// range(0): values per sketch (60: exact, 3600: bucketed).
void BM_SketchAdd(benchmark::State& state) {
  const std::vector<double> values = CpuPercent(static_cast<size_t>(state.range(0)), 4);
  for (auto _ : state) {
    QuantileSketch s;
    for (double v : values) s.Add(v);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SketchAdd)->Arg(60)->Arg(3600);

void BM_SketchMerge(benchmark::State& state) {
  const QuantileSketch a = SketchOf(CpuPercent(static_cast<size_t>(state.range(0)), 5));
  const QuantileSketch b = SketchOf(CpuPercent(static_cast<size_t>(state.range(0)), 6));
  for (auto _ : state) {
    QuantileSketch merged = a;
    merged.Merge(b);
    benchmark::DoNotOptimize(merged);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SketchMerge)->Arg(60)->Arg(3600);

void BM_SketchQuantile(benchmark::State& state) {
  const QuantileSketch s = SketchOf(CpuPercent(static_cast<size_t>(state.range(0)), 7));
  for (auto _ : state) benchmark::DoNotOptimize(s.Quantile(0.99));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SketchQuantile)->Arg(60)->Arg(3600);

void BM_SketchEncode(benchmark::State& state) {
  const QuantileSketch s = SketchOf(CpuPercent(static_cast<size_t>(state.range(0)), 8));
  std::string bytes;
  for (auto _ : state) {
    bytes.clear();
    s.EncodeTo(&bytes);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_SketchEncode)->Arg(60)->Arg(3600);

void BM_SketchDecode(benchmark::State& state) {
  std::string bytes;
  SketchOf(CpuPercent(static_cast<size_t>(state.range(0)), 9)).EncodeTo(&bytes);
  for (auto _ : state) {
    auto s = QuantileSketch::Decode(bytes);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SketchDecode)->Arg(60)->Arg(3600);

}  // namespace
