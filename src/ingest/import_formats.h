#pragma once
// Parsers of the bulk import formats (docs/import.md). Each turns a block of
// whole lines into runs of samples per series; the importer (ingest/importer.h)
// feeds blocks from several threads and loads the runs in block order.
//
//   jsonl     {"namespace":"ns","metric":"m","dimensions":{"k":"v"},"timestamp_ms":1,"value":2.5}
//             ("unit" optional; "timestamp" as ISO-8601 or epoch seconds instead
//             of "timestamp_ms"); one sample per line (gen_metrics.py --format jsonl)
//   vmimport  {"metric":{"__name__":"m","namespace":"ns","k":"v"},"values":[..],"timestamps":[..]}
//             VictoriaMetrics' /api/v1/export format: one series per line
//   csv       a header naming the columns, then one sample per line:
//             timestamp (ISO-8601 or epoch seconds) or timestamp_ms, metric, value,
//             optional namespace and unit; every other column is a dimension
//             (an empty cell: the dimension is absent). RFC 4180 quoting.
//
// Blank lines and, in CSV, lines starting with '#' are skipped. Errors name
// the line and say what is wrong and what is expected.
// Thread safety: a parser is used by one thread; make one per thread.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "model/series.h"

namespace trainwatch::ingest {

enum class ImportFormat { kAuto, kJsonl, kCsv, kVmImport };
std::string_view ImportFormatName(ImportFormat f);

// The samples of one series within a block, in input order.
struct SeriesRun {
  std::shared_ptr<const model::SeriesKey> key;
  std::vector<int64_t> t_ms;
  std::vector<double> values;
};

class FormatParser {
 public:
  virtual ~FormatParser() = default;
  // Parses `block` (whole lines; the first is line number `first_line`),
  // appending runs to `out`. On error, the message starts with "line N: ".
  virtual absl::Status ParseBlock(std::string_view block, int64_t first_line,
                                  std::vector<SeriesRun>* out) = 0;
};

// `header` is the CSV header line (the first non-comment line of the file);
// ignored by the JSON formats.
absl::StatusOr<std::unique_ptr<FormatParser>> MakeParser(ImportFormat format,
                                                         const std::string& default_namespace,
                                                         std::string_view csv_header = {});

// Guesses the format from the file name and its first line.
ImportFormat DetectFormat(std::string_view path, std::string_view first_line);

}  // namespace trainwatch::ingest
