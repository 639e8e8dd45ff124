#pragma once
// ImportFile: bulk-loads a metrics file (jsonl, csv or vmimport; see
// ingest/import_formats.h and docs/import.md) into a data folder through
// store::BulkLoader.
//
// Threads: one reads the file in blocks cut at line ends, `parse_threads`
// parse blocks in parallel, and the calling thread loads the parsed runs in
// file order (so each series' samples arrive in order and compress well).
// All are joined before ImportFile returns. Memory stays bounded: at most
// about 2 * parse_threads + 2 blocks are in flight.
//
// On the first bad line the import stops: the error names the file and line
// and says what is expected; what was loaded before stays (the message says
// how much), so fix the line and import the rest, or start over in a fresh
// folder.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/import_formats.h"
#include "store/db.h"

namespace trainwatch::ingest {

// ImportOptions::keep_ms for data kept forever.
inline constexpr int64_t kKeepForever = store::kForever;

struct ImportProgress {
  uint64_t bytes_read = 0;
  uint64_t bytes_total = 0;
  uint64_t samples = 0;
  double seconds = 0;
};

struct ImportOptions {
  ImportFormat format = ImportFormat::kAuto;
  // For lines without a namespace (csv without the column, vmimport without
  // a "namespace" label, jsonl without "namespace").
  std::string default_namespace = "trainwatch/Imported";
  // When set, every imported namespace gets this retention on every tier
  // (kKeepForever for "forever"), persisted in retention.conf.
  std::optional<int64_t> keep_ms;
  int parse_threads = 0;  // 0: one per CPU
  size_t block_bytes = 1 << 20;
  // A longer line is refused: no format puts that much on a line, and a file
  // of another kind (one JSON document, old Mac line breaks) would otherwise
  // be read whole into memory.
  size_t max_line_bytes = size_t{256} << 20;
  // Lines before this one (1-based, as error messages number them) are
  // skipped; a CSV header is still read. After an import stopped at a bad
  // line, the rest of the file loads from that line once it is fixed.
  int64_t from_line = 1;
  // Called from the calling thread about every `progress_interval_ms`.
  std::function<void(const ImportProgress&)> progress;
  int64_t progress_interval_ms = 250;
};

struct ImportResult {
  ImportFormat format = ImportFormat::kAuto;
  uint64_t samples = 0;
  uint64_t series = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  // Namespaces that got samples older than their raw retention (without
  // ImportOptions::keep_ms): the next compaction drops those raw samples.
  struct BeyondRetention {
    std::string ns;
    int64_t oldest_ms = 0;    // the oldest sample imported into it
    int64_t raw_keep_ms = 0;  // its raw retention
  };
  std::vector<BeyondRetention> beyond_retention;
};

// `db` must be the folder's writer. InvalidArgument "PATH:LINE: ..." for bad
// input; NotFound/PermissionDenied for an unreadable file.
absl::StatusOr<ImportResult> ImportFile(store::Db* db, const std::string& path,
                                        const ImportOptions& options);

}  // namespace trainwatch::ingest
