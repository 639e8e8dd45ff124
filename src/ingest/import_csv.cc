// The CSV import format (docs/import.md).
#include <charconv>
#include <cmath>

#include "absl/strings/str_format.h"
#include "ingest/import_formats_internal.h"
#include "util/time_parse.h"

namespace trainwatch::ingest::import_internal {
namespace {

// ---- csv --------------------------------------------------------------------

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Splits a CSV line (RFC 4180 quotes); false on an unterminated quote.
// Spaces around a cell are no part of it (a header "timestamp, metric" comes
// with rows "t, loss": " loss" is no other metric than "loss"); inside
// quotes they are.
bool SplitCsv(std::string_view line, std::vector<std::string>* fields) {
  fields->clear();
  std::string cur;
  size_t i = 0;
  while (true) {
    cur.clear();
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return false;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cur.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        cur.push_back(line[i++]);
      }
      for (; i < line.size() && line[i] != ','; ++i) {
        if (!IsBlank(line[i])) cur.push_back(line[i]);
      }
    } else {
      while (i < line.size() && line[i] != ',') cur.push_back(line[i++]);
      while (!cur.empty() && IsBlank(cur.back())) cur.pop_back();
    }
    fields->push_back(cur);
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

class CsvParser final : public FormatParser {
 public:
  static absl::StatusOr<std::unique_ptr<CsvParser>> Make(std::string default_ns,
                                                         std::string_view header) {
    auto p = std::unique_ptr<CsvParser>(new CsvParser(std::move(default_ns)));
    std::vector<std::string> cols;
    if (!SplitCsv(header, &cols)) return absl::InvalidArgumentError("CSV header: unterminated quote");
    for (size_t i = 0; i < cols.size(); ++i) {
      std::string name(TrimSpaces(cols[i]));
      if (name == "timestamp") {
        p->time_col_ = static_cast<int>(i);
        p->time_is_ms_ = false;
      } else if (name == "timestamp_ms") {
        p->time_col_ = static_cast<int>(i);
        p->time_is_ms_ = true;
      } else if (name == "metric") {
        p->metric_col_ = static_cast<int>(i);
      } else if (name == "value") {
        p->value_col_ = static_cast<int>(i);
      } else if (name == "namespace") {
        p->ns_col_ = static_cast<int>(i);
      } else if (name == "unit") {
        p->unit_col_ = static_cast<int>(i);
      } else if (name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("CSV header: column %d has no name", i + 1));
      } else {
        p->dim_cols_.emplace_back(static_cast<int>(i), name);
      }
    }
    if (p->time_col_ < 0 || p->metric_col_ < 0 || p->value_col_ < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "CSV header \"%s\" must name the columns timestamp (or timestamp_ms), metric and value; "
          "namespace and unit are optional, other columns are dimensions (see docs/import.md)",
          std::string(header)));
    }
    p->columns_ = cols.size();
    return p;
  }

  absl::Status ParseBlock(std::string_view block, int64_t first_line,
                          std::vector<SeriesRun>* out) override {
    RunBuilder runs(out);
    return ForEachLine(block, first_line, [&](std::string_view line, int64_t n) -> absl::Status {
      if (line[0] == '#') return absl::OkStatus();
      if (!SplitCsv(line, &fields_)) return LineError(n, "a quoted field is not closed");
      if (header_line_pending_) {
        // The header itself, when the block starts the file.
        header_line_pending_ = false;
        return absl::OkStatus();
      }
      if (fields_.size() != columns_) {
        return LineError(n, absl::StrFormat("%d fields, but the header has %d columns",
                                            fields_.size(), columns_));
      }
      int64_t t;
      std::string_view ts = TrimSpaces(fields_[time_col_]);
      if (time_is_ms_) {
        auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
        if (r.ec != std::errc() || r.ptr != ts.data() + ts.size()) {
          return LineError(n, absl::StrFormat("timestamp_ms \"%s\" is not integer milliseconds",
                                              std::string(ts)));
        }
        TW_RETURN_IF_ERROR(CheckTimeMs(n, "timestamp_ms", t));
      } else {
        double s;
        auto r = std::from_chars(ts.data(), ts.data() + ts.size(), s);
        if (r.ec == std::errc() && r.ptr == ts.data() + ts.size() && std::isfinite(s)) {
          TW_RETURN_IF_ERROR(SecondsToMs(n, "timestamp", s, &t));
        } else {
          absl::StatusOr<int64_t> ms = util::ParseTimeMs(ts, 0);
          if (!ms.ok() || ts.find("now") != std::string_view::npos || ts.empty() ||
              ts[0] == '-') {
            return LineError(n, absl::StrFormat("timestamp \"%s\" is neither ISO-8601 (such as "
                                                "2024-01-01T00:00:00Z) nor epoch seconds",
                                                std::string(ts)));
          }
          t = *ms;
          TW_RETURN_IF_ERROR(CheckTimeMs(n, "timestamp", t));
        }
      }
      double v;
      std::string_view vs = TrimSpaces(fields_[value_col_]);
      auto r = std::from_chars(vs.data(), vs.data() + vs.size(), v);
      if (r.ec != std::errc() || r.ptr != vs.data() + vs.size()) {
        return LineError(n, absl::StrFormat("value \"%s\" is not a number", std::string(vs)));
      }
      TW_RETURN_IF_ERROR(CheckFinite(n, v));
      signature_.clear();
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (static_cast<int>(i) == time_col_ || static_cast<int>(i) == value_col_) continue;
        signature_.append(fields_[i]).push_back('\x1f');
      }
      auto it = keys_.find(signature_);
      if (it == keys_.end()) {
        std::vector<model::Dimension> dims;
        for (const auto& [col, name] : dim_cols_) {
          if (!fields_[col].empty()) dims.push_back({name, fields_[col]});
        }
        std::string ns = ns_col_ >= 0 && !fields_[ns_col_].empty() ? fields_[ns_col_] : default_ns_;
        std::string unit = unit_col_ >= 0 ? fields_[unit_col_] : "";
        TW_ASSIGN_OR_RETURN(auto key, MakeKey(n, std::move(ns), fields_[metric_col_],
                                              std::move(dims), std::move(unit)));
        it = keys_.emplace(signature_, std::move(key)).first;
      }
      runs.Add(it->second, t, v);
      return absl::OkStatus();
    });
  }

  // The importer hands the header line to the first block's parser too.
  void ExpectHeaderLine() { header_line_pending_ = true; }

 private:
  explicit CsvParser(std::string default_ns) : default_ns_(std::move(default_ns)) {}
  std::string default_ns_;
  int time_col_ = -1, metric_col_ = -1, value_col_ = -1, ns_col_ = -1, unit_col_ = -1;
  bool time_is_ms_ = false;
  bool header_line_pending_ = false;
  size_t columns_ = 0;
  std::vector<std::pair<int, std::string>> dim_cols_;
  std::vector<std::string> fields_;
  std::string signature_;
  absl::flat_hash_map<std::string, std::shared_ptr<const model::SeriesKey>> keys_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FormatParser>> MakeCsvParser(std::string default_ns,
                                                            std::string_view header) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<CsvParser> p,
                      CsvParser::Make(std::move(default_ns), header));
  return std::unique_ptr<FormatParser>(std::move(p));
}

}  // namespace trainwatch::ingest::import_internal
