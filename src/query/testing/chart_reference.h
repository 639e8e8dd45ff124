#pragma once
// Test helpers for chart reads (not linked into the product): M4 the slow,
// obvious way, and a rasteriser to compare the lines two point sets draw.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "query/m4.h"

namespace trainwatch::query::testing {

// floor((x - x0) * width / (x1 - x0)), exact.
inline int ReferenceColumn(int64_t x, int64_t x0, int64_t x1, int width) {
  return static_cast<int>((static_cast<__int128>(x) - x0) * width / (static_cast<__int128>(x1) - x0));
}

// What ChartAnswer promises, computed from all points sorted: every point of
// [x0, x1) when there are at most 4 * width, else per column its first and
// last point, and its smallest and largest value (the first of equal ones),
// without repeats, in (x, t, v) order.
inline std::vector<ChartPoint> ReferenceM4(std::vector<ChartPoint> points, int64_t x0, int64_t x1,
                                           int width) {
  std::erase_if(points, [&](const ChartPoint& p) { return p.x < x0 || p.x >= x1; });
  std::sort(points.begin(), points.end());
  std::vector<ChartPoint> out;
  if (points.size() <= 4 * static_cast<size_t>(width)) {
    std::unique_copy(points.begin(), points.end(), std::back_inserter(out));
    return out;
  }
  std::map<int, std::vector<ChartPoint>> columns;
  for (const ChartPoint& p : points) columns[ReferenceColumn(p.x, x0, x1, width)].push_back(p);
  for (const auto& [column, in] : columns) {
    // `in` is sorted: the first of equal values is the first found.
    const ChartPoint* min = &in[0];
    const ChartPoint* max = &in[0];
    for (const ChartPoint& p : in) {
      if (p.v < min->v) min = &p;
      if (p.v > max->v) max = &p;
    }
    std::vector<ChartPoint> four = {in.front(), *min, *max, in.back()};
    std::sort(four.begin(), four.end());
    std::unique_copy(four.begin(), four.end(), std::back_inserter(out));
  }
  return out;
}

// The pixels (width x height, one string per row) lit by the polyline through
// `points` (sorted by (x, t, v)): a pixel column per chart column, values
// scaled from the smallest to the largest onto the rows. A segment lights,
// in each pixel column it crosses, the rows between its values at that
// column's edges (at its ends, its end points).
inline std::vector<std::string> Rasterize(const std::vector<ChartPoint>& points, int64_t x0,
                                          int64_t x1, int width, int height) {
  std::vector<std::string> image(static_cast<size_t>(height), std::string(width, '.'));
  if (points.empty()) return image;
  double lo = points[0].v, hi = points[0].v;
  for (const ChartPoint& p : points) lo = std::min(lo, p.v), hi = std::max(hi, p.v);
  auto row = [&](double v) {
    return hi == lo ? 0 : static_cast<int>(std::floor((v - lo) / (hi - lo) * (height - 1)));
  };
  auto light = [&](int column, double a, double b) {
    int r0 = row(a), r1 = row(b);
    if (r0 > r1) std::swap(r0, r1);
    for (int r = r0; r <= r1; ++r) image[static_cast<size_t>(r)][static_cast<size_t>(column)] = '#';
  };
  // The smallest x of column c.
  auto edge = [&](int c) {
    return x0 + static_cast<int64_t>(((static_cast<__int128>(x1) - x0) * c + width - 1) / width);
  };
  light(ReferenceColumn(points[0].x, x0, x1, width), points[0].v, points[0].v);
  for (size_t i = 1; i < points.size(); ++i) {
    const ChartPoint& p = points[i - 1];
    const ChartPoint& q = points[i];
    const int cp = ReferenceColumn(p.x, x0, x1, width);
    const int cq = ReferenceColumn(q.x, x0, x1, width);
    if (cp == cq) {
      light(cp, p.v, q.v);
      continue;
    }
    auto at = [&](int64_t x) {
      return p.v + (q.v - p.v) * static_cast<double>(x - p.x) / static_cast<double>(q.x - p.x);
    };
    for (int c = cp; c <= cq; ++c) {
      const int64_t a = std::max(p.x, edge(c));
      const int64_t b = std::min(q.x, edge(c + 1) - 1);
      if (a <= b) light(c, at(a), at(b));
    }
  }
  return image;
}

}  // namespace trainwatch::query::testing
