#pragma once
// How `trainwatch extract` prints datapoints: JSON lines, or a table.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extract/extractor.h"
#include "model/job_record.h"

namespace trainwatch::cli {

// `text` as a JSON string literal, quotes included: " \ and control
// characters escaped, ill-formed UTF-8 replaced by U+FFFD so the output is
// always valid UTF-8.
std::string JsonString(std::string_view text);

// Appends the shortest decimal form that reads back as exactly `value`
// (std::to_chars): "0.25", "1e-05", "3", "1.7976931348623157e+308". Negative
// zero is "-0.0", so that JSON readers that turn "-0" into an integer keep
// the sign. `value` must be finite.
void AppendNumber(double value, std::string* out);

// Formats datapoints as {"metric": NAME, "value": V} lines.
class JsonlFormatter {
 public:
  explicit JsonlFormatter(const std::vector<model::MetricDefinition>& defs);
  void Append(const std::vector<extract::ExtractedValue>& values, std::string* out) const;

 private:
  std::vector<std::string> prefixes_;  // per definition: {"metric": "NAME", "value":
};

// Per-metric summary for the table format.
struct MetricSummary {
  uint64_t datapoints = 0;
  double last = 0;
  double min = 0;
  double max = 0;
};

class SummaryTable {
 public:
  explicit SummaryTable(size_t definitions) : rows_(definitions) {}
  void Add(const std::vector<extract::ExtractedValue>& values);
  const std::vector<MetricSummary>& rows() const { return rows_; }
  // One row per definition: metric, datapoints, rejected, last, min, max
  // (aligned columns; "-" where there is no value).
  std::string Render(const std::vector<model::MetricDefinition>& defs,
                     const std::vector<uint64_t>& rejected) const;

 private:
  std::vector<MetricSummary> rows_;
};

}  // namespace trainwatch::cli
