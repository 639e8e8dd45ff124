// QuantileSketch encoding and decoding. Layout: docs/format/sketch.md.
#include <bit>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/decimal.h"
#include "codec/float_bits.h"
#include "codec/quantile_sketch.h"
#include "codec/varint.h"
#include "util/status_macros.h"

namespace trainwatch::codec {
namespace {

// Flag bits of byte 1.
constexpr uint8_t kBucketForm = 0x01;     // else the exact form
constexpr uint8_t kWholeCounts = 0x02;    // counts as varints, else raw doubles
constexpr uint8_t kDecimalValues = 0x04;  // exact form: values as decimal integers
constexpr uint8_t kUnitCounts = 0x08;  // exact form: whole counts, most 1, sparse list of the rest
constexpr uint8_t kKnownFlags = 0x0F;

// Beyond the bucket of any finite double (denorm_min is about -37220, max about 35490).
constexpr int kMinIndex = -40000;
constexpr int kMaxIndex = 40000;

constexpr double kMaxWhole = 9007199254740992.0;  // 2^53

bool IsWhole(double c) { return c >= 0 && c <= kMaxWhole && c == std::floor(c); }

void PutDouble(double v, std::string* out) { PutFixed64(std::bit_cast<uint64_t>(v), out); }

bool GetDouble(std::string_view* in, double* v) {
  uint64_t bits;
  if (!GetFixed64(in, &bits)) return false;
  *v = std::bit_cast<double>(bits);
  return true;
}

void PutCount(double c, bool whole, std::string* out) {
  if (whole) {
    PutVarint(static_cast<uint64_t>(c), out);
  } else {
    PutDouble(c, out);
  }
}

// A count > 0, or >= 0 when `zero_ok`.
absl::Status GetCount(std::string_view* in, bool whole, double* c, bool zero_ok = false) {
  if (whole) {
    uint64_t v;
    if (!GetVarint(in, &v)) return absl::DataLossError("sketch: truncated count");
    if (v > static_cast<uint64_t>(kMaxWhole)) {
      return absl::DataLossError(absl::StrFormat("sketch: count %d is beyond 2^53", v));
    }
    *c = static_cast<double>(v);
  } else if (!GetDouble(in, c)) {
    return absl::DataLossError("sketch: truncated count");
  }
  if (!(*c > 0 || (zero_ok && *c == 0)) || !std::isfinite(*c)) {
    return absl::DataLossError(absl::StrFormat("sketch: count %g is not positive and finite", *c));
  }
  return absl::OkStatus();
}

absl::Status GetFinite(std::string_view* in, const char* what, double* v) {
  if (!GetDouble(in, v)) return absl::DataLossError(absl::StrFormat("sketch: truncated %s", what));
  if (!std::isfinite(*v)) {
    return absl::DataLossError(absl::StrFormat("sketch: %s %g is not finite", what, *v));
  }
  return absl::OkStatus();
}

}  // namespace

void QuantileSketch::EncodeTo(std::string* out) const {
  if (!exact_mode_) {
    EncodeBuckets(out);
    return;
  }
  std::string exact;
  EncodeExact(&exact);
  if (exact_.size() > 1) {
    QuantileSketch bucketed = *this;
    bucketed.ToBuckets();
    std::string buckets;
    bucketed.EncodeBuckets(&buckets);
    if (exact.size() > 2 * buckets.size() + 16) {
      out->append(buckets);
      return;
    }
  }
  out->append(exact);
}

void QuantileSketch::EncodeExact(std::string* out) const {
  const size_t n = exact_.size();
  bool whole = true;
  size_t above_one = 0;
  for (const auto& [value, count] : exact_) {
    whole = whole && IsWhole(count);
    above_one += count != 1;
  }
  // Sparse counts when most are 1 (one sample per value): (index gap, count - 2) pairs.
  const bool unit = whole && 2 * above_one < n;
  // Values as decimal integers at the smallest scale that holds them all
  // (checked once more at that scale: a late scale may push early ones past 2^53).
  int scale = 0;
  for (size_t i = 0; i < n && scale >= 0; ++i) scale = DecimalScale(exact_[i].first, scale);
  std::vector<int64_t> decimals(n);
  bool decimal = n > 0 && scale >= 0;
  for (size_t i = 0; i < n && decimal; ++i)
    decimal = ToDecimal(exact_[i].first, scale, &decimals[i]);
  uint8_t flags = 0;
  if (whole) flags |= kWholeCounts;
  if (decimal) flags |= kDecimalValues;
  if (unit && n > 0) flags |= kUnitCounts;
  out->push_back(static_cast<char>(kFormatVersion));
  out->push_back(static_cast<char>(flags));
  PutVarint(n, out);
  if (n == 0) return;
  if (decimal) {
    out->push_back(static_cast<char>(scale));
    PutSignedVarint(decimals[0], out);
    for (size_t i = 1; i < n; ++i) {
      PutVarint(static_cast<uint64_t>(decimals[i]) - static_cast<uint64_t>(decimals[i - 1]), out);
    }
  } else {
    uint64_t previous = FloatToOrdered(exact_[0].first, 0);
    PutSignedVarint(static_cast<int64_t>(previous), out);
    for (size_t i = 1; i < n; ++i) {
      const uint64_t ordered = FloatToOrdered(exact_[i].first, 0);
      PutVarint(ordered - previous, out);
      previous = ordered;
    }
  }
  if (unit) {
    PutVarint(above_one, out);
    size_t previous = 0;
    for (size_t i = 0; i < n; ++i) {
      if (exact_[i].second == 1) continue;
      PutVarint(i - previous, out);
      PutVarint(static_cast<uint64_t>(exact_[i].second) - 2, out);
      previous = i;
    }
  } else {
    for (const auto& [value, count] : exact_) PutCount(count, whole, out);
  }
  if (!whole) PutDouble(count_, out);
  PutDouble(sum_, out);
}

void QuantileSketch::EncodeBuckets(std::string* out) const {
  bool whole = IsWhole(zero_count_);
  for (const Store* store : {&positive_, &negative_}) {
    if (store->empty()) continue;
    for (int i = store->lowest(); i <= store->highest() && whole; ++i)
      whole = IsWhole(store->at(i));
  }
  out->push_back(static_cast<char>(kFormatVersion));
  out->push_back(static_cast<char>(kBucketForm | (whole ? kWholeCounts : 0)));
  PutDouble(min_, out);
  PutDouble(max_, out);
  PutDouble(sum_, out);
  if (!whole) PutDouble(count_, out);
  PutCount(zero_count_, whole, out);  // may be 0
  for (const Store* store : {&positive_, &negative_}) {
    std::vector<int> nonzero;
    if (!store->empty()) {
      for (int i = store->lowest(); i <= store->highest(); ++i) {
        if (store->at(i) != 0) nonzero.push_back(i);
      }
    }
    PutVarint(nonzero.size(), out);
    for (size_t k = 0; k < nonzero.size(); ++k) {
      if (k == 0) {
        PutSignedVarint(nonzero[0], out);
      } else {
        PutVarint(static_cast<uint64_t>(nonzero[k] - nonzero[k - 1]), out);
      }
      PutCount(store->at(nonzero[k]), whole, out);
    }
  }
}

absl::StatusOr<QuantileSketch> QuantileSketch::Decode(std::string_view bytes) {
  std::string_view in = bytes;
  if (in.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sketch of %d bytes is too short: a sketch has at least 2 (version, flags)", in.size()));
  }
  const uint8_t version = static_cast<uint8_t>(in[0]);
  if (version != kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sketch format version %d is not supported: this build reads version %d (was it written "
        "by a newer trainwatch, or is it not a sketch?)",
        version, kFormatVersion));
  }
  const uint8_t flags = static_cast<uint8_t>(in[1]);
  if ((flags & ~kKnownFlags) != 0 ||
      ((flags & kBucketForm) && (flags & (kDecimalValues | kUnitCounts)))) {
    return absl::DataLossError(
        absl::StrFormat("sketch: flags 0x%02x are not a valid combination", flags));
  }
  in.remove_prefix(2);
  QuantileSketch sketch;
  if (flags & kBucketForm) {
    TW_RETURN_IF_ERROR(sketch.DecodeBuckets(&in, flags));
  } else {
    TW_RETURN_IF_ERROR(sketch.DecodeExact(&in, flags));
  }
  if (!in.empty()) {
    return absl::DataLossError(absl::StrFormat("sketch: %d bytes left over", in.size()));
  }
  return sketch;
}

absl::Status QuantileSketch::DecodeExact(std::string_view* in, uint8_t flags) {
  const bool whole = flags & kWholeCounts;
  uint64_t n;
  if (!GetVarint(in, &n)) return absl::DataLossError("sketch: truncated value count");
  if (n > kMaxExactValues) {
    return absl::DataLossError(absl::StrFormat(
        "sketch: %d exact values, more than the %d a sketch keeps", n, kMaxExactValues));
  }
  if (n == 0) {
    if (flags & ~kWholeCounts) return absl::DataLossError("sketch: an empty sketch has no flags");
    return absl::OkStatus();
  }
  exact_.resize(n);
  if (flags & kDecimalValues) {
    if (in->empty()) return absl::DataLossError("sketch: truncated decimal scale");
    const int scale = static_cast<uint8_t>((*in)[0]);
    in->remove_prefix(1);
    if (scale > kMaxDecimalScale) {
      return absl::DataLossError(
          absl::StrFormat("sketch: decimal scale %d is out of range", scale));
    }
    int64_t d;
    if (!GetSignedVarint(in, &d)) return absl::DataLossError("sketch: truncated value");
    for (uint64_t i = 0; i < n; ++i) {
      if (i > 0) {
        uint64_t gap;
        if (!GetVarint(in, &gap)) return absl::DataLossError("sketch: truncated value");
        if (gap == 0 || gap > static_cast<uint64_t>(2 * kMaxDecimalMagnitude)) {
          return absl::DataLossError("sketch: exact values are not strictly increasing");
        }
        d = static_cast<int64_t>(static_cast<uint64_t>(d) + gap);
      }
      if (d > kMaxDecimalMagnitude || d < -kMaxDecimalMagnitude) {
        return absl::DataLossError(absl::StrFormat("sketch: decimal value %d exceeds 2^53", d));
      }
      exact_[i].first = FromDecimal(d, scale);
    }
  } else {
    int64_t first;
    if (!GetSignedVarint(in, &first)) return absl::DataLossError("sketch: truncated value");
    uint64_t ordered = static_cast<uint64_t>(first);
    for (uint64_t i = 0; i < n; ++i) {
      if (i > 0) {
        uint64_t gap;
        if (!GetVarint(in, &gap)) return absl::DataLossError("sketch: truncated value");
        // Strictly increasing, without wrapping past the largest ordered value.
        if (gap == 0 || static_cast<int64_t>(ordered + gap) <= static_cast<int64_t>(ordered)) {
          return absl::DataLossError("sketch: exact values are not strictly increasing");
        }
        ordered += gap;
      }
      exact_[i].first = OrderedToFloat(ordered, 0);
      if (!std::isfinite(exact_[i].first)) {
        return absl::DataLossError(
            absl::StrFormat("sketch: value %g is not finite", exact_[i].first));
      }
    }
  }
  for (uint64_t i = 1; i < n; ++i) {
    if (!(exact_[i - 1].first < exact_[i].first)) {  // -0.0 after +0.0, say
      return absl::DataLossError("sketch: exact values are not strictly increasing");
    }
  }
  if (flags & kUnitCounts) {
    if (!whole) return absl::DataLossError("sketch: sparse counts must be whole");
    for (auto& entry : exact_) entry.second = 1;
    uint64_t above_one;
    if (!GetVarint(in, &above_one) || above_one > n) {
      return absl::DataLossError("sketch: truncated or impossible sparse count list");
    }
    uint64_t index = 0;
    for (uint64_t k = 0; k < above_one; ++k) {
      uint64_t gap, extra;
      if (!GetVarint(in, &gap) || !GetVarint(in, &extra)) {
        return absl::DataLossError("sketch: truncated sparse count");
      }
      if ((k > 0 && gap == 0) || gap >= n - index || extra > static_cast<uint64_t>(kMaxWhole) - 2) {
        return absl::DataLossError("sketch: sparse count outside the value list");
      }
      index += gap;
      exact_[index].second = static_cast<double>(extra + 2);
    }
  } else {
    for (auto& entry : exact_) TW_RETURN_IF_ERROR(GetCount(in, whole, &entry.second));
  }
  count_ = 0;
  for (const auto& entry : exact_) count_ += entry.second;
  if (!whole) TW_RETURN_IF_ERROR(GetCount(in, false, &count_));
  // The sum of finite values may still overflow to an infinity (or NaN).
  if (!GetDouble(in, &sum_)) return absl::DataLossError("sketch: truncated sum");
  min_ = exact_.front().first;
  max_ = exact_.back().first;
  exact_mode_ = true;
  return absl::OkStatus();
}

absl::Status QuantileSketch::DecodeBuckets(std::string_view* in, uint8_t flags) {
  const bool whole = flags & kWholeCounts;
  exact_mode_ = false;
  TW_RETURN_IF_ERROR(GetFinite(in, "min", &min_));
  TW_RETURN_IF_ERROR(GetFinite(in, "max", &max_));
  if (!GetDouble(in, &sum_)) return absl::DataLossError("sketch: truncated sum");
  if (!(min_ <= max_)) {
    return absl::DataLossError(absl::StrFormat("sketch: min %g exceeds max %g", min_, max_));
  }
  if (!whole) TW_RETURN_IF_ERROR(GetCount(in, false, &count_));
  TW_RETURN_IF_ERROR(GetCount(in, whole, &zero_count_, /*zero_ok=*/true));
  double total = zero_count_;
  for (Store* store : {&positive_, &negative_}) {
    uint64_t nonzero;
    if (!GetVarint(in, &nonzero)) return absl::DataLossError("sketch: truncated bucket count");
    if (nonzero > static_cast<uint64_t>(kMaxBuckets)) {
      return absl::DataLossError(absl::StrFormat(
          "sketch: %d buckets, more than the %d a store keeps", nonzero, kMaxBuckets));
    }
    int64_t index = 0, first = 0;
    for (uint64_t k = 0; k < nonzero; ++k) {
      if (k == 0) {
        if (!GetSignedVarint(in, &index)) return absl::DataLossError("sketch: truncated bucket");
        first = index;
      } else {
        uint64_t gap;
        if (!GetVarint(in, &gap)) return absl::DataLossError("sketch: truncated bucket");
        if (gap == 0 || gap > static_cast<uint64_t>(kMaxBuckets)) {
          return absl::DataLossError("sketch: bucket indices are not increasing within a store");
        }
        index += static_cast<int64_t>(gap);
      }
      if (index < kMinIndex || index > kMaxIndex || index - first >= kMaxBuckets) {
        return absl::DataLossError(
            absl::StrFormat("sketch: bucket %d is outside the range a store can hold", index));
      }
      double c;
      TW_RETURN_IF_ERROR(GetCount(in, whole, &c));
      store->Add(static_cast<int>(index), c);
      total += c;
    }
  }
  if (whole) count_ = total;
  if (!(count_ > 0)) return absl::DataLossError("sketch: a bucketed sketch holds no count");
  // min and max must agree with the signs present.
  const bool has_negative = !negative_.empty(), has_positive = !positive_.empty();
  if (has_negative != (min_ < 0) || has_positive != (max_ > 0) ||
      (zero_count_ > 0 && !(min_ <= 0 && max_ >= 0))) {
    return absl::DataLossError(
        absl::StrFormat("sketch: min %g and max %g disagree with the buckets' signs", min_, max_));
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
