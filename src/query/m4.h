#pragma once
// The pieces of a chart read (ChartAnswer in query/reader.h) that know
// nothing of where the points come from: the M4 reduction (Jugel et al.,
// "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014),
// the step a time belongs to, and the checks of a ChartQuery. StoreReader
// feeds them from the store (query/chart.h), fakes from memory.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "query/reader.h"

namespace trainwatch::query {

// InvalidArgument naming the field and what it must be; OK otherwise.
absl::Status ValidateChartQuery(const ChartQuery& query);

struct ChartPoint {
  int64_t x = 0;
  int64_t t = 0;
  double v = 0;
  friend bool operator==(const ChartPoint&, const ChartPoint&) = default;
  // (x, t, v): the order points are drawn in.
  friend bool operator<(const ChartPoint& a, const ChartPoint& b) {
    if (a.x != b.x) return a.x < b.x;
    if (a.t != b.t) return a.t < b.t;
    return a.v < b.v;
  }
};

// Reduces points given in any order to what ChartAnswer keeps: per column
// the first, smallest, largest and last point, or every point when there are
// at most 4 * width. Memory is allocated once, in the constructor (O(width));
// Add never allocates. Not thread-safe.
class M4 {
 public:
  // Columns over [x_start, x_end) (x_start < x_end), 1 <= width <= kMaxChartWidth.
  M4(int64_t x_start, int64_t x_end, int width);

  // Points with x outside [x_start, x_end) are left out.
  void Add(int64_t x, int64_t t, double v) {
    if (x < x_start_ || x >= x_end_) return;
    const ChartPoint p{x, t, v};
    if (++count_ <= every_limit_) every_.push_back(p);
    Cell& c = cells_[Column(x)];
    if (c.empty) {
      c = {p, p, p, p, false};
      return;
    }
    if (p < c.first) c.first = p;
    if (c.last < p) c.last = p;
    if (v < c.min.v || (v == c.min.v && p < c.min)) c.min = p;
    if (v > c.max.v || (v == c.max.v && p < c.max)) c.max = p;
  }

  // Points added (within the range), repeats included.
  int64_t count() const { return count_; }
  // Whether Finish gives every point (count() <= 4 * width).
  bool every_point() const { return count_ <= every_limit_; }
  // The column of x (x_start <= x < x_end).
  int Column(int64_t x) {
    if (x >= lo_ && x < hi_) return column_;
    // The last column whose lower bound is <= x.
    size_t k = static_cast<size_t>(
        std::upper_bound(bounds_.begin(), bounds_.end(), x) - bounds_.begin()) - 1;
    column_ = static_cast<int>(k);
    lo_ = bounds_[k];
    hi_ = bounds_[k + 1];
    return column_;
  }
  // The answer's points in (x, t, v) order, without repeats; appended to *out.
  void Finish(std::vector<ChartPoint>* out);
  // Finish, into the answer: its points (x, y, t) and whether they are every
  // point (`raw` when `all_raw`, every point being a raw sample).
  void FinishInto(ChartAnswer* answer, bool all_raw = true);

 private:
  struct Cell {
    ChartPoint first, min, max, last;
    bool empty = true;
  };
  int64_t x_start_, x_end_;
  int64_t every_limit_;
  int64_t count_ = 0;
  std::vector<ChartPoint> every_;  // the first every_limit_ points, as added
  std::vector<Cell> cells_;
  // bounds_[k]: the smallest x of column k; bounds_[width] = x_end.
  std::vector<int64_t> bounds_;
  // The column of the last lookup and its bounds (points come in runs).
  int column_ = 0;
  int64_t lo_ = 0, hi_ = 0;
};

// The step a sample belongs to: the value of the newest step sample at or
// before its time (of step samples at the same time, the largest).
class StepMap {
 public:
  // (t_ms, step) in any order.
  explicit StepMap(std::vector<std::pair<int64_t, int64_t>> steps);
  bool empty() const { return t_.empty(); }
  // nullopt before the first step. Fastest when times come in order.
  std::optional<int64_t> At(int64_t t_ms) {
    if (hint_ < t_.size() && t_[hint_] <= t_ms && (hint_ + 1 == t_.size() || t_[hint_ + 1] > t_ms)) {
      return step_[hint_];
    }
    size_t i = static_cast<size_t>(std::upper_bound(t_.begin(), t_.end(), t_ms) - t_.begin());
    if (i == 0) return std::nullopt;
    hint_ = i - 1;
    return step_[hint_];
  }
  // [smallest, largest + 1) of the steps current at some time of
  // [start_ms, end_ms); nullopt when no step is.
  std::optional<std::pair<int64_t, int64_t>> Span(int64_t start_ms, int64_t end_ms);

 private:
  std::vector<int64_t> t_, step_;
  size_t hint_ = 0;
};

// A step sample's value as a step number: truncated towards zero (as the
// rules take it), clamped to +-2^61.
int64_t StepOfValue(double value);

}  // namespace trainwatch::query
