#pragma once
// The report's drawings as inline SVG (no script, so the file opens anywhere
// offline): line charts over time and a histogram. Internal to report/.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace trainwatch::report {

// Text safe inside HTML/SVG element content and attribute values.
std::string EscapeHtml(std::string_view text);

// Elapsed time as "1h 02m 05s", "3m 04s", "850 ms".
std::string FormatDuration(int64_t ms);

// A value with its unit for people: "61.4 kB/s", "12.5 %", "0.7".
std::string FormatQuantity(double value, std::string_view unit);

// A time-axis line chart of `chart` over [start_ms, end_ms]; marks (e.g. rule
// findings) drawn as vertical lines with their labels as tooltips.
struct Mark {
  int64_t t_ms = 0;
  std::string label;
};
std::string LineChartSvg(const Chart& chart, int64_t start_ms, int64_t end_ms,
                         const std::vector<Mark>& marks);

// Bars of counts over the bucket edges (edges.size() == counts.size() + 1);
// `x_label` names the axis for screen readers (the page captions it).
std::string HistogramSvg(const std::vector<double>& edges, const std::vector<int64_t>& counts,
                         std::string_view x_label);

}  // namespace trainwatch::report
