#include "model/series.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"

namespace trainwatch::model {
namespace {

// The characters the canonical form escapes with a backslash.
bool NeedsEscape(char c) { return c == '|' || c == '=' || c == '\\'; }

// Appends runs without special characters whole (this runs for every
// series of every write).
void AppendEscaped(std::string* out, std::string_view s) {
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (NeedsEscape(s[i])) {
      out->append(s.data() + run, i - run);
      out->push_back('\\');
      run = i;
    }
  }
  out->append(s.data() + run, s.size() - run);
}

// Takes the escaped form of `part` (AppendEscaped's) off the front of *rest.
bool TakeEscaped(std::string_view* rest, std::string_view part) {
  for (char c : part) {
    if (NeedsEscape(c)) {
      if (rest->empty() || rest->front() != '\\') return false;
      rest->remove_prefix(1);
    }
    if (rest->empty() || rest->front() != c) return false;
    rest->remove_prefix(1);
  }
  return true;
}

// How many bytes of `s` are '|' or '=', eight at a time (HasCanonical runs
// for every series of every write; a byte loop was most of its cost).
size_t CountSeparators(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  // The top bit of each byte of v that is zero, and no other bit: no carry
  // crosses bytes, as (b & 0x7F) + 0x7F <= 0xFE.
  auto zero_bytes = [](uint64_t v) { return ~(((v & kLow7) + kLow7) | v | kLow7); };
  size_t n = 0;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    // A byte is '|' or '=' but not both: one bit per separator. Moved to
    // the bottom of each byte, the multiply sums the bytes into the top one.
    const uint64_t bits = (zero_bytes(w ^ (kOnes * '|')) | zero_bytes(w ^ (kOnes * '='))) >> 7;
    n += (bits * kOnes) >> 56;
  }
  for (; i < s.size(); ++i) n += (s[i] == '|' || s[i] == '=') ? 1 : 0;
  return n;
}

bool TakeChar(std::string_view* rest, char c) {
  if (rest->empty() || rest->front() != c) return false;
  rest->remove_prefix(1);
  return true;
}

}  // namespace

std::string SeriesKey::Canonical() const {
  // Sized for the usual key without escapes: one allocation.
  size_t size = ns.size() + metric.size() + unit.size() + 2;
  for (const Dimension& d : dimensions) size += d.name.size() + d.value.size() + 2;
  std::string out;
  out.reserve(size);
  AppendEscaped(&out, ns);
  out.push_back('|');
  AppendEscaped(&out, metric);
  out.push_back('|');
  AppendEscaped(&out, unit);
  for (const Dimension& d : dimensions) {
    out.push_back('|');
    AppendEscaped(&out, d.name);
    out.push_back('=');
    AppendEscaped(&out, d.value);
  }
  return out;
}

bool SeriesKey::HasCanonical(std::string_view canonical) const {
  // Most keys have nothing to escape (this runs for every series of every
  // write): then the form is the parts and separators as they are, which
  // memcmp checks, and holds no separator besides the 2 + 2 x dimensions
  // that join the parts.
  if (canonical.find('\\') == std::string_view::npos) {
    std::string_view rest = canonical;
    auto take = [&rest](std::string_view part) {
      if (rest.substr(0, part.size()) != part) return false;
      rest.remove_prefix(part.size());
      return true;
    };
    if (!take(ns) || !TakeChar(&rest, '|') || !take(metric) || !TakeChar(&rest, '|') ||
        !take(unit)) {
      return false;
    }
    for (const Dimension& d : dimensions) {
      if (!TakeChar(&rest, '|') || !take(d.name) || !TakeChar(&rest, '=') || !take(d.value)) {
        return false;
      }
    }
    if (!rest.empty()) return false;
    return CountSeparators(canonical) == 2 + 2 * dimensions.size();
  }
  std::string_view rest = canonical;
  if (!TakeEscaped(&rest, ns) || !TakeChar(&rest, '|') || !TakeEscaped(&rest, metric) ||
      !TakeChar(&rest, '|') || !TakeEscaped(&rest, unit)) {
    return false;
  }
  for (const Dimension& d : dimensions) {
    if (!TakeChar(&rest, '|') || !TakeEscaped(&rest, d.name) || !TakeChar(&rest, '=') ||
        !TakeEscaped(&rest, d.value)) {
      return false;
    }
  }
  return rest.empty();
}

std::string SeriesKey::ToString() const {
  std::string out = absl::StrFormat("%s/%s{", ns, metric);
  for (size_t i = 0; i < dimensions.size(); ++i) {
    if (i > 0) out += ",";
    out += absl::StrFormat("%s=\"%s\"", dimensions[i].name, dimensions[i].value);
  }
  out += "}";
  if (unit != "None" && !unit.empty()) out += absl::StrFormat(" [%s]", unit);
  return out;
}

const std::string* SeriesKey::FindDimension(std::string_view name) const {
  for (const Dimension& d : dimensions) {
    if (d.name == name) return &d.value;
  }
  return nullptr;
}

namespace {

// MakeSeriesKey's checks of a key whose dimensions are sorted.
absl::Status CheckParts(std::string_view ns, std::string_view metric,
                        const std::vector<Dimension>& dimensions, std::string_view unit) {
  if (ns.empty()) return absl::InvalidArgumentError("namespace is empty");
  if (ns.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("namespace \"%s\" is longer than %d bytes", ns, kMaxNameBytes));
  }
  if (metric.empty()) return absl::InvalidArgumentError("metric name is empty");
  if (metric.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("metric name \"%s\" is longer than %d bytes", metric, kMaxNameBytes));
  }
  if (unit.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "metric \"%s\": the unit (\"%s...\") is longer than %d bytes", metric,
        unit.substr(0, 40), kMaxNameBytes));
  }
  if (dimensions.size() > kMaxDimensions) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "metric \"%s\" has %d dimensions; at most %d are allowed", metric, dimensions.size(),
        kMaxDimensions));
  }
  for (size_t i = 0; i < dimensions.size(); ++i) {
    const Dimension& d = dimensions[i];
    if (d.name.empty() || d.name.size() > kMaxNameBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "metric \"%s\": dimension name \"%s\" must be 1 to %d bytes", metric, d.name,
          kMaxNameBytes));
    }
    if (d.value.empty() || d.value.size() > kMaxDimensionValueBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "metric \"%s\": dimension \"%s\" needs a value of 1 to %d bytes", metric, d.name,
          kMaxDimensionValueBytes));
    }
    if (i > 0 && dimensions[i - 1].name == d.name) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "metric \"%s\": dimension \"%s\" is given twice", metric, d.name));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SeriesKey> MakeSeriesKey(std::string ns, std::string metric,
                                        std::vector<Dimension> dimensions, std::string unit) {
  if (dimensions.size() <= kMaxDimensions) std::sort(dimensions.begin(), dimensions.end());
  absl::Status s = CheckParts(ns, metric, dimensions, unit);
  if (!s.ok()) return s;
  if (unit.empty()) unit = "None";
  return SeriesKey{std::move(ns), std::move(metric), std::move(dimensions), std::move(unit)};
}

bool HasOnlyStorableValues(const SeriesSamples& s) {
  auto storable = [](double v) { return std::abs(v) <= kMaxValueMagnitude; };  // false for NaN
  for (const Sample& x : s.samples) {
    if (!storable(x.value)) return false;
  }
  for (const WeightedSample& x : s.weighted) {
    if (!storable(x.value) || !storable(x.count)) return false;
  }
  for (const StatisticSet& x : s.statistic_sets) {
    if (!storable(x.sample_count) || !storable(x.sum) || !storable(x.minimum) ||
        !storable(x.maximum)) {
      return false;
    }
  }
  return true;
}

absl::Status CheckSeriesKey(const SeriesKey& key) {
  absl::Status s = CheckParts(key.ns, key.metric, key.dimensions, key.unit);
  if (!s.ok()) return s;
  if (key.unit.empty() || !std::is_sorted(key.dimensions.begin(), key.dimensions.end())) {
    return absl::InvalidArgumentError("the dimensions are not sorted by name or the unit is empty");
  }
  return absl::OkStatus();
}

bool StatisticSet::DescribesIdenticalValues() const {
  return minimum == maximum && sum == minimum * sample_count;
}

size_t SampleBatch::SampleCount() const {
  size_t n = 0;
  for (const SeriesSamples& s : series) n += s.size();
  return n;
}

}  // namespace trainwatch::model
