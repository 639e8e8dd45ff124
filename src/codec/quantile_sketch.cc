// QuantileSketch: adding, merging and quantiles. Encoding is in
// quantile_sketch_codec.cc.
#include "codec/quantile_sketch.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "util/check.h"

namespace trainwatch::codec {
namespace {

const double kGamma =
    (1 + QuantileSketch::kRelativeAccuracy) / (1 - QuantileSketch::kRelativeAccuracy);
const double kLogGamma = std::log(kGamma);

}  // namespace

int QuantileSketch::BucketIndex(double magnitude) {
  return static_cast<int>(std::ceil(std::log(magnitude) / kLogGamma));
}

double QuantileSketch::BucketValue(int index) {
  // Every |v| in (gamma^(i-1), gamma^i] is within (gamma - 1) / (gamma + 1) = a of this.
  return 2 * std::exp(index * kLogGamma) / (kGamma + 1);
}

int QuantileSketch::Store::Reserve(int index) {
  if (counts_.empty()) {
    offset_ = index;
    counts_.assign(1, 0.0);
    return index;
  }
  const int high = highest();
  if (index > high) {
    const int new_low = std::max(offset_, index - kMaxBuckets + 1);
    if (new_low > offset_) {
      // Growing up past kMaxBuckets: fold the lowest buckets into new_low.
      std::vector<double> grown(static_cast<size_t>(index - new_low + 1), 0.0);
      for (int i = offset_; i <= high; ++i) {
        grown[static_cast<size_t>(std::max(i, new_low) - new_low)] += at(i);
      }
      counts_.swap(grown);
      offset_ = new_low;
    } else {
      counts_.resize(static_cast<size_t>(index - offset_ + 1), 0.0);
    }
    return index;
  }
  if (index < offset_) {
    index = std::max(index, high - kMaxBuckets + 1);  // collapses below the span
    if (index < offset_) {
      counts_.insert(counts_.begin(), static_cast<size_t>(offset_ - index), 0.0);
      offset_ = index;
    }
  }
  return index;
}

void QuantileSketch::Store::Add(int index, double count) {
  index = Reserve(index);
  counts_[static_cast<size_t>(index - offset_)] += count;
}

void QuantileSketch::Store::MergeFrom(const Store& other) {
  if (other.empty()) return;
  Reserve(other.highest());  // grow once
  Reserve(other.lowest());
  for (int i = other.lowest(); i <= other.highest(); ++i) {
    if (other.at(i) != 0) Add(i, other.at(i));
  }
}

void QuantileSketch::Add(double value, double count) {
  TW_CHECK(std::isfinite(value) && std::isfinite(count) && count > 0);
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += count;
  sum_ += value * count;
  if (exact_mode_) {
    auto it =
        std::lower_bound(exact_.begin(), exact_.end(), value,
                         [](const std::pair<double, double>& e, double v) { return e.first < v; });
    if (it != exact_.end() && it->first == value) {
      it->second += count;
      return;
    }
    if (exact_.size() < kMaxExactValues) {
      exact_.insert(it, {value, count});
      return;
    }
    ToBuckets();
  }
  AddToBuckets(value, count);
}

void QuantileSketch::AddToBuckets(double value, double count) {
  if (value > 0) {
    positive_.Add(BucketIndex(value), count);
  } else if (value < 0) {
    negative_.Add(BucketIndex(-value), count);
  } else {
    zero_count_ += count;
  }
}

void QuantileSketch::ToBuckets() {
  if (!exact_mode_) return;
  exact_mode_ = false;
  for (const auto& [value, count] : exact_) AddToBuckets(value, count);
  std::vector<std::pair<double, double>>().swap(exact_);  // frees the memory
}

void QuantileSketch::Merge(const QuantileSketch& other) {
  if (other.empty()) return;
  if (this == &other) {
    const QuantileSketch copy = other;
    Merge(copy);
    return;
  }
  if (empty()) {
    *this = other;
    return;
  }
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  if (exact_mode_ && other.exact_mode_) {
    std::vector<std::pair<double, double>> merged;
    merged.reserve(exact_.size() + other.exact_.size());
    auto a = exact_.begin();
    auto b = other.exact_.begin();
    while (a != exact_.end() || b != other.exact_.end()) {
      if (b == other.exact_.end() || (a != exact_.end() && a->first < b->first)) {
        merged.push_back(*a++);
      } else if (a == exact_.end() || b->first < a->first) {
        merged.push_back(*b++);
      } else {  // equal values: keep ours, add the counts
        merged.emplace_back(a->first, a->second + b->second);
        ++a;
        ++b;
      }
    }
    exact_.swap(merged);
    if (exact_.size() > kMaxExactValues) ToBuckets();
    return;
  }
  ToBuckets();
  if (other.exact_mode_) {
    for (const auto& [value, count] : other.exact_) AddToBuckets(value, count);
  } else {
    zero_count_ += other.zero_count_;
    positive_.MergeFrom(other.positive_);
    negative_.MergeFrom(other.negative_);
  }
}

std::optional<double> QuantileSketch::Quantile(double q) const {
  if (empty() || std::isnan(q)) return std::nullopt;
  if (q <= 0) return min_;
  if (q >= 1) return max_;
  // Reached when the cumulative count is within rounding of q * count.
  const double target = q * count_ - 4 * DBL_EPSILON * count_;
  double cumulative = 0;
  if (exact_mode_) {
    for (const auto& [value, count] : exact_) {
      cumulative += count;
      if (cumulative >= target) return value;
    }
    return max_;
  }
  auto clamp = [this](double v) { return std::clamp(v, min_, max_); };
  if (!negative_.empty()) {
    for (int i = negative_.highest(); i >= negative_.lowest(); --i) {
      const double c = negative_.at(i);
      if (c == 0) continue;
      cumulative += c;
      if (cumulative >= target) return clamp(-BucketValue(i));
    }
  }
  if (zero_count_ > 0) {
    cumulative += zero_count_;
    if (cumulative >= target) return clamp(0.0);
  }
  if (!positive_.empty()) {
    for (int i = positive_.lowest(); i <= positive_.highest(); ++i) {
      const double c = positive_.at(i);
      if (c == 0) continue;
      cumulative += c;
      if (cumulative >= target) return clamp(BucketValue(i));
    }
  }
  return max_;
}

size_t QuantileSketch::MemoryBytes() const {
  return sizeof(*this) + exact_.capacity() * sizeof(exact_[0]) + positive_.MemoryBytes() +
         negative_.MemoryBytes();
}

}  // namespace trainwatch::codec
