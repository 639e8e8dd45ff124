// Fuzz target: the import parsers (jsonl, vmimport, csv) on arbitrary text:
// errors are statuses, never crashes, and every run they return is whole.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ingest/import_formats.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch::ingest;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (ImportFormat f : {ImportFormat::kJsonl, ImportFormat::kVmImport, ImportFormat::kCsv}) {
    auto parser = MakeParser(f, "fuzz", "timestamp,metric,value,namespace,unit,host");
    if (!parser.ok()) continue;
    std::vector<SeriesRun> runs;
    (void)(*parser)->ParseBlock(text, 1, &runs);
    for (const SeriesRun& r : runs) TW_CHECK(r.key != nullptr && r.t_ms.size() == r.values.size());
  }
  (void)DetectFormat("x", text.substr(0, 200));
  return 0;
}
