#include "query/m4.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace trainwatch::query {

absl::Status ValidateChartQuery(const ChartQuery& q) {
  if (q.metric.ns.empty()) return absl::InvalidArgumentError("chart: the namespace is required");
  if (q.metric.metric.empty()) return absl::InvalidArgumentError("chart: the metric is required");
  constexpr int64_t kLimit = int64_t{1} << 61;  // ms: about 73 million years either way
  if (q.start_ms < -kLimit || q.end_ms > kLimit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chart: start %d and end %d must lie within +-%d ms of the epoch", q.start_ms, q.end_ms,
        kLimit));
  }
  if (q.start_ms >= q.end_ms) {
    return absl::InvalidArgumentError(
        absl::StrFormat("chart: start %d must be before end %d", q.start_ms, q.end_ms));
  }
  if (q.width < 1 || q.width > kMaxChartWidth) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chart: width %d is out of range; want 1 to %d columns", q.width, kMaxChartWidth));
  }
  if (q.x == ChartX::kStep && q.job.empty()) {
    return absl::InvalidArgumentError("chart: x=step needs the job whose steps to use");
  }
  return absl::OkStatus();
}

M4::M4(int64_t x_start, int64_t x_end, int width)
    : x_start_(x_start), x_end_(x_end), every_limit_(4 * static_cast<int64_t>(width)) {
  every_.reserve(static_cast<size_t>(every_limit_));
  cells_.resize(static_cast<size_t>(width));
  bounds_.resize(static_cast<size_t>(width) + 1);
  // Exact in 128 bits whatever the span: column k starts at
  // x_start + ceil(k * span / width).
  const __int128 span = static_cast<__int128>(x_end) - x_start;
  for (int k = 0; k <= width; ++k) {
    const __int128 num = span * k;
    bounds_[static_cast<size_t>(k)] = x_start + static_cast<int64_t>((num + width - 1) / width);
  }
  bounds_.back() = x_end;
  lo_ = bounds_[0];
  hi_ = bounds_[1];
}

void M4::FinishInto(ChartAnswer* answer, bool all_raw) {
  answer->raw = all_raw && every_point();
  std::vector<ChartPoint> points;
  Finish(&points);
  answer->x.reserve(points.size());
  answer->y.reserve(points.size());
  answer->t.reserve(points.size());
  for (const ChartPoint& p : points) {
    answer->x.push_back(p.x);
    answer->y.push_back(p.v);
    answer->t.push_back(p.t);
  }
}

void M4::Finish(std::vector<ChartPoint>* out) {
  auto append_unique = [&](std::vector<ChartPoint>::iterator begin,
                           std::vector<ChartPoint>::iterator end) {
    std::sort(begin, end);
    for (auto it = begin; it != end; ++it) {
      if (it != begin && *it == *(it - 1)) continue;
      out->push_back(*it);
    }
  };
  if (every_point()) {
    append_unique(every_.begin(), every_.end());
    return;
  }
  std::vector<ChartPoint> four(4);
  for (const Cell& c : cells_) {
    if (c.empty) continue;
    four = {c.first, c.min, c.max, c.last};
    append_unique(four.begin(), four.end());
  }
}

StepMap::StepMap(std::vector<std::pair<int64_t, int64_t>> steps) {
  std::sort(steps.begin(), steps.end());
  t_.reserve(steps.size());
  step_.reserve(steps.size());
  for (const auto& [t, step] : steps) {
    t_.push_back(t);
    step_.push_back(step);
  }
}

std::optional<std::pair<int64_t, int64_t>> StepMap::Span(int64_t start_ms, int64_t end_ms) {
  std::optional<std::pair<int64_t, int64_t>> span;
  auto take = [&](int64_t step) {
    if (!span) {
      span = std::make_pair(step, step);
    } else {
      span->first = std::min(span->first, step);
      span->second = std::max(span->second, step);
    }
  };
  if (std::optional<int64_t> at_start = At(start_ms)) take(*at_start);
  for (size_t i = static_cast<size_t>(std::upper_bound(t_.begin(), t_.end(), start_ms) -
                                      t_.begin());
       i < t_.size() && t_[i] < end_ms; ++i) {
    if (i + 1 < t_.size() && t_[i + 1] == t_[i]) continue;  // never current: the largest wins
    take(step_[i]);
  }
  if (span) span->second += 1;
  return span;
}

int64_t StepOfValue(double value) {
  // Within +-2^61, so that spans and x_end = largest + 1 stay in an int64.
  constexpr double kLimit = 2305843009213693952.0;
  if (!(value > -kLimit)) return -(int64_t{1} << 61);
  if (value >= kLimit) return int64_t{1} << 61;
  return static_cast<int64_t>(std::trunc(value));
}

}  // namespace trainwatch::query
