#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace trainwatch::report {

namespace {

constexpr int kWidth = 720, kHeight = 200;
constexpr int kLeft = 64, kRight = 12, kTop = 10, kBottom = 28;
// Colours that read on light and dark backgrounds (the page sets the rest).
constexpr const char* kPalette[] = {"#3b82f6", "#f59e0b", "#10b981", "#ef4444",
                                    "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16"};

std::string FormatValue(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e9 || a < 1e-3) return absl::StrFormat("%.3g", v);
  if (a >= 1e6) return absl::StrFormat("%.3gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.3gk", v / 1e3);
  return absl::StrFormat("%.4g", v);
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return absl::StrFormat("%d ms", ms);
  int64_t s = ms / 1000;
  const int64_t h = s / 3600, m = (s / 60) % 60;
  s %= 60;
  if (h > 0) return absl::StrFormat("%dh %02dm %02ds", h, m, s);
  if (m > 0) return absl::StrFormat("%dm %02ds", m, s);
  return absl::StrFormat("%.1f s", static_cast<double>(ms) / 1000);
}

std::string FormatQuantity(double value, std::string_view unit) {
  if (unit == "B/s" || unit == "B") {
    static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T"};
    size_t i = 0;
    while (std::fabs(value) >= 1000 && i + 1 < std::size(kPrefixes)) value /= 1000, ++i;
    return absl::StrFormat("%.3g %s%s", value, kPrefixes[i], unit);
  }
  if (unit.empty()) return absl::StrFormat("%.4g", value);
  return absl::StrFormat("%.4g %s", value, unit);
}

std::string LineChartSvg(const Chart& chart, int64_t start_ms, int64_t end_ms,
                         const std::vector<Mark>& marks) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const ChartLine& line : chart.lines) {
    for (double v : line.values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!(lo <= hi)) lo = 0, hi = 1;  // no points
  if (!chart.unit.empty() && chart.unit[0] == '%') lo = std::min(lo, 0.0), hi = std::max(hi, 100.0);
  if (hi == lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  const double span_t = static_cast<double>(std::max<int64_t>(end_ms - start_ms, 1));
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const auto x_of = [&](int64_t t) {
    return kLeft + plot_w * static_cast<double>(t - start_ms) / span_t;
  };
  const auto y_of = [&](double v) { return kTop + plot_h * (1 - (v - lo) / (hi - lo)); };

  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s over time\">",
      kWidth, kHeight, EscapeHtml(chart.title));
  // Axes: 5 value ticks, 5 time ticks (time since the job's start).
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4;
    const double y = y_of(v);
    absl::StrAppendFormat(&svg,
                          "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                          kLeft, kWidth - kRight, y, y, kLeft - 6, y + 4, FormatValue(v));
    const int64_t t = start_ms + static_cast<int64_t>(span_t * i / 4);
    absl::StrAppendFormat(&svg,
                          "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">+%s</text>",
                          x_of(t), kHeight - 8, i == 0 ? "start" : i == 4 ? "end" : "middle",
                          FormatDuration(t - start_ms));
  }
  for (const Mark& m : marks) {
    if (m.t_ms < start_ms || m.t_ms > end_ms) continue;
    const double x = x_of(m.t_ms);
    absl::StrAppendFormat(&svg,
                          "<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\">"
                          "<title>%s</title></line>",
                          x, x, kTop, kTop + plot_h, EscapeHtml(m.label));
  }
  for (size_t i = 0; i < chart.lines.size(); ++i) {
    const ChartLine& line = chart.lines[i];
    if (line.values.empty()) continue;
    std::string d;
    for (size_t k = 0; k < line.values.size(); ++k) {
      absl::StrAppendFormat(&d, "%c%.1f %.1f", k == 0 ? 'M' : 'L', x_of(line.t_ms[k]),
                            y_of(line.values[k]));
    }
    if (line.values.size() == 1) {  // one point: a dot
      absl::StrAppendFormat(&svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                            x_of(line.t_ms[0]), y_of(line.values[0]),
                            kPalette[i % std::size(kPalette)]);
    }
    absl::StrAppendFormat(&svg,
                          "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                          "stroke-linejoin=\"round\"><title>%s</title></path>",
                          d, kPalette[i % std::size(kPalette)], EscapeHtml(line.label));
  }
  svg += "</svg>";
  if (chart.lines.size() > 1) {
    svg += "<div class=\"legend\">";
    for (size_t i = 0; i < chart.lines.size(); ++i) {
      absl::StrAppendFormat(&svg, "<span><i style=\"background:%s\"></i>%s</span>",
                            kPalette[i % std::size(kPalette)],
                            EscapeHtml(chart.lines[i].label));
    }
    svg += "</div>";
  }
  return svg;
}

std::string HistogramSvg(const std::vector<double>& edges, const std::vector<int64_t>& counts,
                         std::string_view x_label) {
  if (counts.empty() || edges.size() != counts.size() + 1) return "";
  const int64_t top = std::max<int64_t>(1, *std::max_element(counts.begin(), counts.end()));
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double bar_w = plot_w / static_cast<double>(counts.size());
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"histogram of %s\">",
      kWidth, kHeight, EscapeHtml(x_label));
  for (int i = 0; i <= 4; ++i) {
    const double y = kTop + plot_h * (1 - i / 4.0);
    absl::StrAppendFormat(&svg,
                          "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                          kLeft, kWidth - kRight, y, y, kLeft - 6, y + 4,
                          FormatValue(static_cast<double>(top) * i / 4));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    const double h = plot_h * static_cast<double>(counts[i]) / static_cast<double>(top);
    absl::StrAppendFormat(&svg,
                          "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\"><title>%s to %s ms: %d</title></rect>",
                          kLeft + bar_w * static_cast<double>(i) + 1, kTop + plot_h - h,
                          std::max(bar_w - 2, 1.0), h, FormatValue(edges[i]),
                          FormatValue(edges[i + 1]), counts[i]);
  }
  for (size_t i = 0; i < edges.size(); i += std::max<size_t>(1, counts.size() / 6)) {
    absl::StrAppendFormat(&svg, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                          kLeft + bar_w * static_cast<double>(i), kHeight - 8,
                          FormatValue(edges[i]));
  }
  svg += "</svg>";
  return svg;
}

}  // namespace trainwatch::report
