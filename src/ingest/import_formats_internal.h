#pragma once
// What the import formats' parsers share (import_formats.cc,
// import_json_formats.cc, import_csv.cc); not part of the API.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ingest/import_formats.h"
#include "model/series.h"
#include "util/status_macros.h"

namespace trainwatch::ingest::import_internal {

// InvalidArgument "line N: what".
absl::Status LineError(int64_t line, std::string_view what);

// Calls fn(line, line_number) for every non-blank line of the block.
template <typename Fn>
absl::Status ForEachLine(std::string_view block, int64_t first_line, Fn fn) {
  int64_t n = first_line;
  size_t pos = 0;
  while (pos < block.size()) {
    size_t nl = block.find('\n', pos);
    if (nl == std::string_view::npos) nl = block.size();
    std::string_view line = block.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool blank = true;
    for (char c : line) {
      if (c != ' ' && c != '\t') {
        blank = false;
        break;
      }
    }
    if (!blank) TW_RETURN_IF_ERROR(fn(line, n));
    ++n;
    pos = nl + 1;
  }
  return absl::OkStatus();
}

// Groups samples of a block by series.
class RunBuilder {
 public:
  explicit RunBuilder(std::vector<SeriesRun>* out) : out_(out) {}
  void Add(const std::shared_ptr<const model::SeriesKey>& key, int64_t t, double v) {
    auto [it, inserted] = index_.try_emplace(key.get(), out_->size());
    if (inserted) out_->push_back({key, {}, {}});
    SeriesRun& run = (*out_)[it->second];
    run.t_ms.push_back(t);
    run.values.push_back(v);
  }

 private:
  std::vector<SeriesRun>* out_;
  absl::flat_hash_map<const model::SeriesKey*, size_t> index_;
};

// InvalidArgument naming the line unless `v` is finite.
absl::Status CheckFinite(int64_t line, double v);
// The times an import takes: 1970-01-01 to 9999-12-31 (UTC), in ms.
inline constexpr int64_t kLatestImportMs = 253402300799999;
// InvalidArgument naming the line unless `t_ms` is within those times;
// `what` names the field ("timestamp_ms").
absl::Status CheckTimeMs(int64_t line, std::string_view what, int64_t t_ms);
// Epoch seconds as ms, refused (with the line) outside those times.
absl::Status SecondsToMs(int64_t line, std::string_view what, double seconds, int64_t* t_ms);
// MakeSeriesKey's key, shared; its error names the line.
absl::StatusOr<std::shared_ptr<const model::SeriesKey>> MakeKey(
    int64_t line, std::string ns, std::string metric, std::vector<model::Dimension> dims,
    std::string unit);
// Without leading and trailing spaces and tabs.
std::string_view TrimSpaces(std::string_view s);

// The parsers of each format (MakeParser's).
std::unique_ptr<FormatParser> MakeJsonlParser(std::string default_ns);
std::unique_ptr<FormatParser> MakeVmImportParser(std::string default_ns);
absl::StatusOr<std::unique_ptr<FormatParser>> MakeCsvParser(std::string default_ns,
                                                            std::string_view header);

}  // namespace trainwatch::ingest::import_internal
