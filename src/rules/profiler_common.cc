#include "rules/profiler_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace trainwatch::rules::prof {

std::string OnHost(int host) { return host == 1 ? "" : absl::StrFormat(" on algo-%d", host); }

std::string Subject(std::string_view kind, int index, int host) {
  return absl::StrFormat("%s %d%s", kind, index, OnHost(host));
}

std::string HostSubject(int host) {
  return host == 1 ? "host" : absl::StrFormat("host algo-%d", host);
}

std::string Seconds(double s) {
  if (s < 600) return absl::StrFormat("%.3g s", s);
  if (s < 7200) return absl::StrFormat("%.3g min", s / 60);
  return absl::StrFormat("%.3g h", s / 3600);
}

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= v.size()) return a;
  // The next order statistic is the minimum of the part above lo.
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

double TheilSenSlope(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - (points.empty() ? 0 : 1)) / 2);
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      const double dx = points[j].first - points[i].first;
      if (dx != 0) slopes.push_back((points[j].second - points[i].second) / dx);
    }
  }
  if (slopes.empty()) return 0;
  return Quantile(slopes, 0.5);
}

size_t OrderStatistics::CountLess(double x) const {
  return tree_.order_of_key({x, 0});
}

size_t OrderStatistics::CountAtMost(double x) const {
  return tree_.order_of_key({x, std::numeric_limits<uint64_t>::max()});
}

double OrderStatistics::Quantile(double q) const {
  if (tree_.empty()) return std::numeric_limits<double>::quiet_NaN();
  // As prof::Quantile: linear between the order statistics around q·(n-1).
  const double pos = q * static_cast<double>(tree_.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const double a = Select(lo).first;
  if (lo + 1 >= tree_.size()) return a;
  const double b = Select(lo + 1).first;
  return a + (b - a) * (pos - static_cast<double>(lo));
}

// The k-th smallest |v - center|: the deviations below the center, read
// from the center down, and those above it, read upwards, are two sorted
// sequences; the k-th of their union is found by bisection.
double OrderStatistics::SelectDeviation(double center, size_t k) const {
  const size_t n = tree_.size();
  const size_t below = CountLess(center);
  const size_t above = n - below;
  auto left = [&](size_t i) { return center - Select(below - 1 - i).first; };
  auto right = [&](size_t j) { return Select(below + j).first - center; };
  // Take i from the left and k + 1 - i from the right.
  size_t lo = k + 1 > above ? k + 1 - above : 0;
  size_t hi = std::min(k + 1, below);
  while (lo < hi) {
    const size_t i = (lo + hi) / 2;
    const size_t j = k + 1 - i;
    if (j > 0 && right(j - 1) > left(i)) {
      lo = i + 1;
    } else {
      hi = i;
    }
  }
  const size_t j = k + 1 - lo;
  double kth = -std::numeric_limits<double>::infinity();
  if (lo > 0) kth = std::max(kth, left(lo - 1));
  if (j > 0) kth = std::max(kth, right(j - 1));
  return kth;
}

double OrderStatistics::QuantileOfDeviations(double center, double q) const {
  if (tree_.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(tree_.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const double a = SelectDeviation(center, lo);
  if (lo + 1 >= tree_.size()) return a;
  const double b = SelectDeviation(center, lo + 1);
  return a + (b - a) * (pos - static_cast<double>(lo));
}

void Series::Add(int64_t t_ms, double value, const Span& span) {
  if (count_ == 0) first_ms_ = t_ms;
  ++count_;
  values_.push_back({t_ms, value, next_seq_});
  sorted_.Insert(value, next_seq_);
  ++next_seq_;
  if (span.samples) {
    while (values_.size() > static_cast<size_t>(std::max(1.0, span.window))) PopFront();
  } else {
    const int64_t window_ms = static_cast<int64_t>(span.window * 1000);
    while (!values_.empty() && values_.front().t_ms <= t_ms - window_ms) PopFront();
  }
}

void Series::PopFront() {
  sorted_.Erase(values_.front().value, values_.front().seq);
  values_.pop_front();
}

double Series::Quantile(double q) const { return sorted_.Quantile(q); }

double Series::Max() const {
  if (values_.empty()) return std::numeric_limits<double>::quiet_NaN();
  return sorted_.Select(sorted_.size() - 1).first;
}

bool Series::WarmedUp(const Span& span) const {
  if (count_ == 0) return false;
  if (span.samples) return static_cast<double>(count_) > span.patience;
  return static_cast<double>(last_ms() - first_ms_) >= span.patience * 1000;
}

std::string WindowText(const Span& span) {
  if (span.samples) return absl::StrFormat("the last %.0f samples", span.window);
  return "the last " + Seconds(span.window);
}

Verdict MakeVerdict(bool decided, std::vector<Finding> findings) {
  Verdict v;
  v.kind = decided ? Verdict::kOk : Verdict::kPending;
  for (const Finding& f : findings) {
    if (f.severity == Severity::kIssue) v.kind = Verdict::kIssue;
  }
  if (!findings.empty() && v.kind == Verdict::kPending) v.kind = Verdict::kOk;
  v.findings = std::move(findings);
  return v;
}

bool Due(int64_t& last_ms, int64_t t_ms) {
  if (last_ms != INT64_MIN && t_ms - last_ms < 1000) return false;
  last_ms = t_ms;
  return true;
}

bool SnapshotAssembler::AddValue(const Input& in) {
  switch (in.signal) {
    case Signal::kCoreCpu:
    case Signal::kCoreIoWait:
    case Signal::kHostCpu:
    case Signal::kGpuUtil:
      break;
    default:
      return false;
  }
  if (in.t_ms <= closed_until_) return true;  // too late: its snapshot is closed
  Snapshot& s = open_[in.t_ms];
  switch (in.signal) {
    case Signal::kCoreCpu: s.core_cpu.push_back(in.value); break;
    case Signal::kCoreIoWait: s.core_iowait.push_back(in.value); break;
    case Signal::kHostCpu: s.host_cpu = std::max(0.0, in.value); break;
    default: s.gpu_util.push_back(in.value); break;
  }
  return true;
}

}  // namespace trainwatch::rules::prof
