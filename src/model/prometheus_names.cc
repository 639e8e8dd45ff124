#include "model/prometheus_names.h"

#include "absl/strings/match.h"

namespace trainwatch::model {

namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string Sanitize(std::string_view in, bool colon_allowed) {
  std::string out;
  out.reserve(in.size() + 1);
  if (in.empty() || (in[0] >= '0' && in[0] <= '9')) out.push_back('_');
  for (char c : in) out.push_back(IsAlnum(c) || (colon_allowed && c == ':') ? c : '_');
  return out;
}

}  // namespace

std::string PrometheusMetricName(std::string_view metric) { return Sanitize(metric, true); }

std::string PrometheusLabelName(std::string_view dimension) {
  std::string name = Sanitize(dimension, false);
  if (absl::StartsWith(name, "__") || name == "namespace" || name == "unit") name = "dim_" + name;
  return name;
}

PrometheusSeries ToPrometheus(const SeriesKey& key) {
  PrometheusSeries out;
  out.name = PrometheusMetricName(key.metric);
  out.labels.emplace_back("namespace", key.ns);
  for (const Dimension& d : key.dimensions) {
    // Two dimensions may sanitize to one name ("a-b", "a_b"): the later gets
    // a suffix, since a label may appear only once.
    std::string name = PrometheusLabelName(d.name);
    auto taken = [&](const std::string& n) {
      for (const auto& [k, v] : out.labels) {
        if (k == n) return true;
      }
      return false;
    };
    if (taken(name)) {
      int n = 2;
      while (taken(name + "_" + std::to_string(n))) ++n;
      name += "_" + std::to_string(n);
    }
    out.labels.emplace_back(std::move(name), d.value);
  }
  if (key.unit != "None" && !key.unit.empty()) out.labels.emplace_back("unit", key.unit);
  return out;
}

}  // namespace trainwatch::model
