// In-process cost of extraction, per line: the 10 definitions of
// ../shared/bench/gen_logs.py over the kinds of line its log mixes, with the
// fast paths and with plain RE2 on every definition (the reference), plus the
// pieces (value parsing, UTF-8 check).
//
//   cmake --preset release && cmake --build --preset release --target extract_bench
//   build/release/bench/extract/extract_bench
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "extract/extractor.h"
#include "extract/number.h"
#include "extract/text.h"

namespace trainwatch::extract {
namespace {

// The definitions of gen_logs.py (kept in step by hand).
std::vector<model::MetricDefinition> BenchDefinitions() {
  return {
      {"train:loss", "step [0-9]+ loss: ([0-9.]+)"},
      {"train:learning_rate", " lr: ([0-9.eE+-]+)"},
      {"train:throughput", "throughput: ([0-9.]+) samples/s"},
      {"hf:loss", "'loss': ([0-9.eE+-]+)"},
      {"hf:learning_rate", "'learning_rate': ([0-9.eE+-]+)"},
      {"hf:eval_loss", "'eval_loss': ([0-9.eE+-]+)"},
      {"keras:loss", " - loss: ([0-9.]+)"},
      {"validation:accuracy", "val_accuracy: ([0-9.]+)"},
      {"xgboost:train_rmse", "#011train-rmse:([0-9.]+)"},
      {"xgboost:validation_rmse", "#011validation-rmse:([0-9.]+)"},
  };
}

const char* kLines[] = {
    "[rank0]: epoch 5 step 5391 loss: 3.7650 lr: 3e-4",
    "{'loss': 0.6931, 'grad_norm': 3.2148, 'learning_rate': 4.9466e-05, 'epoch': 0.03}",
    "[2024-01-01 00:00:00] [12]#011train-rmse:0.47234#011validation-rmse:0.48123",
    "2024-01-01 00:00:00,167 - INFO - __main__ - Added key: store_based_barrier_key:9 to store",
    " 66%|\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x8C   "
    "| 661/1000 [03:07<01:36,  3.52it/s]",
};
const char* kLineNames[] = {"pytorch_2_matches", "hf_dict_2_matches", "xgboost_2_matches",
                            "noise_no_match", "tqdm_utf8_no_match"};

void BM_ExtractLine(benchmark::State& state) {
  ExtractOptions options;
  options.reference_for_test = state.range(1) != 0;
  auto x = *Extractor::Create(BenchDefinitions(), options);
  std::string_view line = kLines[state.range(0)];
  for (auto _ : state) {
    auto values = x->Extract(line);
    benchmark::DoNotOptimize(values.data());
  }
  state.SetLabel(std::string(kLineNames[state.range(0)]) +
                 (options.reference_for_test ? " (plain RE2)" : ""));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_ExtractLine)->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}});

// One long line (16 KiB of tqdm redraws on one CloudWatch line), no match.
void BM_ExtractLongLine(benchmark::State& state) {
  ExtractOptions options;
  options.reference_for_test = state.range(0) != 0;
  auto x = *Extractor::Create(BenchDefinitions(), options);
  std::string line;
  while (line.size() < 16384) line += std::string(kLines[4]) + "#015";
  for (auto _ : state) benchmark::DoNotOptimize(x->Extract(line).data());
  state.SetLabel(options.reference_for_test ? "plain RE2" : "");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_ExtractLongLine)->Arg(0)->Arg(1);

// A line with invalid UTF-8 pays for the U+FFFD copy.
void BM_ExtractInvalidUtf8Line(benchmark::State& state) {
  auto x = *Extractor::Create(BenchDefinitions());
  std::string line =
      "\xFF\xFE[rank0]: epoch 5 step 5391 loss: 3.7650 lr: 3e-4 donn\xE9"
      "es";
  for (auto _ : state) benchmark::DoNotOptimize(x->Extract(line).data());
}
BENCHMARK(BM_ExtractInvalidUtf8Line);

void BM_ParseMetricValue(benchmark::State& state) {
  const char* texts[] = {"3.7650", "4.9466e-05", "0.47234", "123456789.123456789012"};
  std::string_view text = texts[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(ParseMetricValue(text));
  state.SetLabel(std::string(text));
}
BENCHMARK(BM_ParseMetricValue)->DenseRange(0, 3);

void BM_IsValidUtf8(benchmark::State& state) {
  std::string_view line = kLines[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(IsValidUtf8(line));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_IsValidUtf8)->Arg(1)->Arg(4);

}  // namespace
}  // namespace trainwatch::extract
