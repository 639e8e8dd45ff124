// Fuzz target: any line, through a fixed set of definitions that cover the
// fast paths (prefilter, simple matcher) and RE2, must give exactly what
// plain RE2 gives (the reference), with and without #011 escaping; and the
// extractor must never crash, whatever the bytes (invalid UTF-8, NUL, ESC).
// The first byte chooses the options; the rest is the line (terminators
// included: the extractor takes whatever it is given).
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "extract/extractor.h"
#include "util/check.h"

namespace {

using trainwatch::extract::ExtractedValue;
using trainwatch::extract::ExtractOptions;
using trainwatch::extract::Extractor;

std::vector<trainwatch::model::MetricDefinition> Definitions() {
  return {
      {"loss", "step [0-9]+ loss: ([0-9.]+)"},
      {"lr", " lr: ([0-9.eE+-]+)"},
      {"hf", "'loss': ([0-9]+(.|e\\-)[0-9]+),?"},
      {"keras", ".*loss: ([0-9\\.]+) - accuracy: [0-9\\.]+.*"},
      {"val", "val_accuracy: ([0-9.]+)"},
      {"xgb", ".*\\[[0-9]+\\].*#011train-error:(\\S+)"},
      {"any", "(\\S+)"},
      {"star", "v=([0-9]*)x"},
      {"tail", "([0-9.]+)it/s"},
      {"anchored", "^\\[rank([0-9]+)\\]$"},
      {"ci", "(?i)acc=([^,]+),"},
      {"utf8", "\xC3\xA9poque (\\d+)"},
      {"dot", "x.y=(.+)"},
      {"lazy", "Loss: (.*?)"},
      {"word", "\\bn=(\\d+)\\b"},
      {"runs", "\\| epoch \\d+:\\s+\\d+ / \\d+ loss=([0-9.]+),"},
      {"budget", "a([0-9]+)b[^x]*x"},
      {"star_runs", "^\\s*(\\d*)[a-z]*=\\S+"},
  };
}

struct Pair {
  std::unique_ptr<Extractor> fast;
  std::unique_ptr<Extractor> reference;
};

Pair Make(bool escaped) {
  ExtractOptions fast;
  fast.sagemaker_escaped = escaped;
  ExtractOptions reference = fast;
  reference.reference_for_test = true;
  auto f = Extractor::Create(Definitions(), fast);
  auto r = Extractor::Create(Definitions(), reference);
  TW_CHECK(f.ok() && r.ok());
  return {*std::move(f), *std::move(r)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Pair plain = Make(false);
  static Pair escaped = Make(true);
  if (size == 0) return 0;
  Pair& p = (data[0] & 1) != 0 ? escaped : plain;
  std::string_view line(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::pair<uint32_t, double>> a;
  for (const ExtractedValue& v : p.fast->Extract(line)) a.emplace_back(v.definition, v.value);
  std::vector<std::pair<uint32_t, double>> b;
  for (const ExtractedValue& v : p.reference->Extract(line)) b.emplace_back(v.definition, v.value);
  TW_CHECK(a == b);
  for (size_t i = 0; i < p.fast->definitions().size(); ++i) {
    TW_CHECK(p.fast->matched(i) == p.reference->matched(i));
    TW_CHECK(p.fast->rejected(i) == p.reference->rejected(i));
  }
  return 0;
}
