#pragma once
// The offline extraction loop behind `trainwatch extract`: bytes from a
// ByteSource, split into lines by capture::LineSplitter, every line through
// extract::Extractor, results handed back in input order.
//
// The input is cut into blocks at line ends (right after a "\n", or after a
// "\r" known not to start a "\r\n"), so blocks split into exactly the lines
// the whole stream would; several worker threads match blocks at once, and
// the calling thread receives each block's results in input order, so the
// datapoints come out exactly as a single thread would produce them.
//
// Threads: with StreamOptions::threads > 1, ExtractStream starts that many
// workers and joins them before it returns. Memory stays bounded: a few
// blocks in flight per worker, a block grows only to hold its longest line.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "extract/extractor.h"
#include "model/job_record.h"

namespace trainwatch::cli {

// Where extraction reads its bytes: a file, stdin, or a stored job's log.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `size` bytes into `dst`; 0 at the end of the input.
  virtual absl::StatusOr<size_t> Read(char* dst, size_t size) = 0;
};

// A file, or stdin for "-". NotFound, PermissionDenied or InvalidArgument (a
// folder) with a message that names the path.
absl::StatusOr<std::unique_ptr<ByteSource>> OpenInput(const std::string& path);

// Bytes held in memory, handed out at most `max_read` at a time (tests).
std::unique_ptr<ByteSource> MemorySource(std::string data, size_t max_read = SIZE_MAX);

// What one block produced.
struct ExtractedBlock {
  uint64_t lines = 0;
  // Datapoints in line order, then definition order.
  std::vector<extract::ExtractedValue> values;
  // Whatever StreamOptions::format wrote, if set.
  std::string text;
  // Definitions with a rejected value in this block, with the first one's capture.
  std::vector<std::pair<uint32_t, std::string>> rejected_samples;
};

struct StreamOptions {
  // Bytes read per block (a block holding a longer line grows to fit it).
  size_t block_bytes = 1 << 20;
  // Worker threads; 0: one per core, at most 4. 1: everything on the calling thread.
  int threads = 0;
  // Runs on the worker that matched a block, right after; e.g. formats the
  // output so that the calling thread only has to write it.
  std::function<void(ExtractedBlock*)> format;
};

struct StreamResult {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  // Per definition, as extract::Extractor counts them, over the whole input.
  std::vector<uint64_t> matched;
  std::vector<uint64_t> rejected;
  // The first rejected capture per definition, in input order (has_rejected_sample
  // false when none was rejected).
  std::vector<bool> has_rejected_sample;
  std::vector<std::string> rejected_sample;
};

// Extracts every line of `source` with `defs` (validated first: an invalid
// list fails before anything is read) and calls `on_block` for each block on
// the calling thread, in input order. Stops at the first error of the
// source or of `on_block`, and returns it.
absl::StatusOr<StreamResult> ExtractStream(
    ByteSource& source, const std::vector<model::MetricDefinition>& defs,
    const extract::ExtractOptions& options, const StreamOptions& stream_options,
    const std::function<absl::Status(ExtractedBlock&)>& on_block);

}  // namespace trainwatch::cli
