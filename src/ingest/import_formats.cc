#include "ingest/import_formats.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "ingest/import_formats_internal.h"

namespace trainwatch::ingest {
namespace import_internal {

absl::Status LineError(int64_t line, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("line %d: %s", line, what));
}

absl::Status CheckTimeMs(int64_t line, std::string_view what, int64_t t_ms) {
  if (t_ms < 0 || t_ms > kLatestImportMs) {
    return LineError(line, absl::StrFormat(
        "%s %d ms is not between 1970-01-01 and 9999-12-31; times are epoch seconds in "
        "\"timestamp\" (or ISO-8601) and epoch milliseconds in \"timestamp_ms\"",
        what, t_ms));
  }
  return absl::OkStatus();
}

absl::Status SecondsToMs(int64_t line, std::string_view what, double seconds, int64_t* t_ms) {
  // Checked before the conversion: a double far out of range has no int64.
  if (!(seconds >= 0 && seconds * 1000 <= static_cast<double>(kLatestImportMs))) {
    return LineError(line, absl::StrFormat(
        "%s %.15g s is not between 1970-01-01 and 9999-12-31; times are epoch seconds in "
        "\"timestamp\" (or ISO-8601) and epoch milliseconds in \"timestamp_ms\"",
        what, seconds));
  }
  *t_ms = static_cast<int64_t>(std::llround(seconds * 1000));
  return absl::OkStatus();
}

absl::Status CheckFinite(int64_t line, double v) {
  if (!std::isfinite(v)) {
    return LineError(line, absl::StrFormat("value %g is not a finite number; NaN and infinities "
                                           "cannot be stored",
                                           v));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const model::SeriesKey>> MakeKey(
    int64_t line, std::string ns, std::string metric, std::vector<model::Dimension> dims,
    std::string unit) {
  absl::StatusOr<model::SeriesKey> key =
      model::MakeSeriesKey(std::move(ns), std::move(metric), std::move(dims), std::move(unit));
  if (!key.ok()) return LineError(line, std::string(key.status().message()));
  return std::make_shared<const model::SeriesKey>(std::move(*key));
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace import_internal

std::string_view ImportFormatName(ImportFormat f) {
  switch (f) {
    case ImportFormat::kAuto:
      return "auto";
    case ImportFormat::kJsonl:
      return "jsonl";
    case ImportFormat::kCsv:
      return "csv";
    case ImportFormat::kVmImport:
      return "vmimport";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<FormatParser>> MakeParser(ImportFormat format,
                                                         const std::string& default_namespace,
                                                         std::string_view csv_header) {
  switch (format) {
    case ImportFormat::kJsonl:
      return import_internal::MakeJsonlParser(default_namespace);
    case ImportFormat::kVmImport:
      return import_internal::MakeVmImportParser(default_namespace);
    case ImportFormat::kCsv:
      return import_internal::MakeCsvParser(default_namespace, csv_header);
    case ImportFormat::kAuto:
      break;
  }
  return absl::InvalidArgumentError("the import format must be known (jsonl, csv or vmimport)");
}

ImportFormat DetectFormat(std::string_view path, std::string_view first_line) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  if (ends_with(".csv")) return ImportFormat::kCsv;
  if (ends_with(".vmimport")) return ImportFormat::kVmImport;
  std::string_view l = import_internal::TrimSpaces(first_line);
  if (!l.empty() && l[0] == '{') {
    // Keys of vmimport only (jsonl's is "value"); an export's first line
    // may be longer than what is looked at, "values" comes early in it.
    if (l.find("\"timestamps\"") != std::string_view::npos ||
        l.find("\"values\"") != std::string_view::npos) {
      return ImportFormat::kVmImport;
    }
    return ImportFormat::kJsonl;
  }
  if (ends_with(".jsonl") || ends_with(".json") || ends_with(".ndjson")) return ImportFormat::kJsonl;
  return ImportFormat::kCsv;
}

}  // namespace trainwatch::ingest
