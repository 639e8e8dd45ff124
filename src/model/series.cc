#include "model/series.h"

#include <algorithm>

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
                        const std::vector<Dimension>& dimensions) {
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
  absl::Status s = CheckParts(ns, metric, dimensions);
  if (!s.ok()) return s;
  if (unit.empty()) unit = "None";
  return SeriesKey{std::move(ns), std::move(metric), std::move(dimensions), std::move(unit)};
}

absl::Status CheckSeriesKey(const SeriesKey& key) {
  absl::Status s = CheckParts(key.ns, key.metric, key.dimensions);
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
