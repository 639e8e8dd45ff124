#include "store/aggregate.h"

#include <algorithm>

namespace trainwatch::store {

Aggregate Aggregate::Clone() const {
  Aggregate a;
  a.count = count;
  a.sum = sum;
  a.min = min;
  a.max = max;
  a.no_percentiles = no_percentiles;
  if (sketch) a.sketch = std::make_unique<codec::QuantileSketch>(*sketch);
  if (exact) a.exact = std::make_unique<std::vector<std::pair<double, double>>>(*exact);
  return a;
}

void Aggregate::AddValue(double value, double n, Distribution distribution) {
  if (n <= 0) return;
  count += n;
  sum += value * n;
  min = std::min(min, value);
  max = std::max(max, value);
  if (distribution == Distribution::kSketch) {
    if (!sketch) sketch = std::make_unique<codec::QuantileSketch>();
    sketch->Add(value, n);
  } else if (distribution == Distribution::kExact) {
    if (!exact) exact = std::make_unique<std::vector<std::pair<double, double>>>();
    exact->emplace_back(value, n);
  }
}

void Aggregate::AddRow(uint8_t lane, const Row& row, Distribution distribution) {
  switch (LaneKind(lane)) {
    case SampleKind::kPlain:
      AddValue(row.c[0], 1, distribution);
      return;
    case SampleKind::kWeighted:
      AddValue(row.c[0], row.c[1], distribution);
      return;
    case SampleKind::kStatSet: {
      const double n = row.c[0], s = row.c[1], lo = row.c[2], hi = row.c[3];
      if (n <= 0) return;
      if (lo == hi && s == lo * n) {
        // Identical values: exact data, percentiles stay defined.
        AddValue(lo, n, distribution);
        // Keep the sum exactly as sent (lo * n may round differently).
        sum += s - lo * n;
        return;
      }
      count += n;
      sum += s;
      min = std::min(min, lo);
      max = std::max(max, hi);
      no_percentiles = true;
      return;
    }
  }
}

void Aggregate::Merge(const Aggregate& o) {
  if (o.count <= 0 && !o.no_percentiles) return;
  count += o.count;
  sum += o.sum;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  no_percentiles = no_percentiles || o.no_percentiles;
  if (o.exact) {
    if (!exact) exact = std::make_unique<std::vector<std::pair<double, double>>>();
    exact->insert(exact->end(), o.exact->begin(), o.exact->end());
  }
  if (o.sketch) {
    if (!sketch) {
      sketch = std::make_unique<codec::QuantileSketch>(*o.sketch);
    } else {
      sketch->Merge(*o.sketch);
    }
  }
}

namespace {

// The distribution covers every value of the aggregate (not only a part,
// e.g. rollup buckets stored without sketches plus head rows).
double DistributionCount(const Aggregate& a) {
  double n = a.sketch ? a.sketch->count() : 0;
  if (a.exact) {
    for (const auto& [v, c] : *a.exact) n += c;
  }
  return n;
}

}  // namespace

bool Aggregate::HasPercentiles() const {
  return count > 0 && !no_percentiles && min >= 0 && (sketch != nullptr || exact != nullptr) &&
         DistributionCount(*this) >= count * (1 - 1e-9);
}

std::optional<double> Aggregate::Percentile(double q) const {
  if (!HasPercentiles()) return std::nullopt;
  if (q <= 0) return min;
  if (q >= 1) return max;
  if (exact != nullptr && sketch == nullptr) {
    std::vector<std::pair<double, double>> v = *exact;
    std::sort(v.begin(), v.end());
    double total = 0;
    for (const auto& [x, c] : v) total += c;
    const double target = q * total - 4 * 2.220446049250313e-16 * total;
    double cumulative = 0;
    for (const auto& [x, c] : v) {
      cumulative += c;
      if (cumulative >= target) return x;
    }
    return v.back().first;
  }
  if (exact != nullptr) {
    // Both kinds (unusual): fold the exact values into a sketch.
    codec::QuantileSketch s = *sketch;
    for (const auto& [x, c] : *exact) s.Add(x, c);
    return s.Quantile(q);
  }
  return sketch->Quantile(q);
}

}  // namespace trainwatch::store
