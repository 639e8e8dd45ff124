// PutMetricData (spec/aws-api.md §4.4): validation of the whole request (any
// invalid datum rejects everything, all messages joined), then one
// model::SampleBatch for the SampleSink.
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"
#include "util/log.h"

namespace trainwatch::api::cloudwatch {
namespace {

const double kMaxMagnitude = std::ldexp(1.0, 360);
const double kMinMagnitude = std::ldexp(1.0, -360);

std::string ShowValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return absl::StrFormat("%g", v);
}

// A finite value within CloudWatch's range; tiny magnitudes become 0 (TW).
std::optional<double> ReadValue(const Node& node, Problems* problems) {
  absl::StatusOr<double> v = node.Double();
  if (!v.ok()) {
    problems->Add("InvalidParameterValue", std::string(v.status().message()));
    return std::nullopt;
  }
  if (!std::isfinite(*v) || std::fabs(*v) > kMaxMagnitude) {
    // AWS's sentence, whole (clients compare it); the why goes to the log.
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is invalid.", ShowValue(*v),
                                  node.path()));
    util::LogOnce("put-metric-data-value-range",
                  "PutMetricData: a value was refused: CloudWatch takes finite numbers of "
                  "magnitude at most 2^360 (NaN and infinities are not stored)");
    return std::nullopt;
  }
  if (*v != 0 && std::fabs(*v) < kMinMagnitude) return 0.0;
  return *v;
}

std::optional<double> ReadRequiredValue(const Node& node, Problems* problems) {
  if (!node.present()) {
    problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", node.path()));
    return std::nullopt;
  }
  return ReadValue(node, problems);
}

struct Datum {
  std::string name;
  std::vector<model::Dimension> dimensions;
  std::string unit = "None";
  int resolution_s = 60;
  int64_t t_ms = 0;
  std::optional<double> value;
  std::optional<model::StatisticSet> statistic_set;
  std::vector<model::WeightedSample> weighted;
};

std::optional<Datum> ReadDatum(const Node& d, int64_t now_ms, Problems* problems) {
  size_t before = problems->items.size();
  Datum datum;
  if (absl::Status s = d.ExpectStructure(); !s.ok()) {
    problems->Add("InvalidParameterValue", std::string(s.message()));
    return std::nullopt;
  }
  if (auto name = ReadMetricName(d["MetricName"], /*required=*/true, problems)) datum.name = *name;
  datum.dimensions = ReadDimensions(d["Dimensions"], problems);
  if (auto unit = ReadUnit(d["Unit"], problems)) datum.unit = *unit;

  datum.t_ms = now_ms;
  if (Node ts = d["Timestamp"]; ts.present()) {
    absl::StatusOr<int64_t> t = ReadTimestampMs(ts);
    if (!t.ok()) {
      problems->Add("InvalidParameterValue", std::string(t.status().message()));
    } else if (*t < now_ms - 14 * kDayMs) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must specify a time within the past two "
                                    "weeks.",
                                    ts.path()));
    } else if (*t > now_ms + 2 * kHourMs) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must specify a time no more than two hours "
                                    "in the future.",
                                    ts.path()));
    } else {
      datum.t_ms = *t;
    }
  }

  if (Node res = d["StorageResolution"]; res.present()) {
    absl::StatusOr<int64_t> r = res.Int();
    if (!r.ok() || (*r != 1 && *r != 60)) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must be 1 (high resolution) or 60 "
                                    "(standard resolution).",
                                    res.path()));
    } else {
      datum.resolution_s = static_cast<int>(*r);
    }
  }

  Node value = d["Value"];
  Node stats = d["StatisticValues"];
  Node values = d["Values"];
  Node counts = d["Counts"];
  absl::StatusOr<std::vector<Node>> value_items = values.List();
  absl::StatusOr<std::vector<Node>> count_items = counts.List();
  if (!value_items.ok()) problems->Add("InvalidParameterValue", std::string(value_items.status().message()));
  if (!count_items.ok()) problems->Add("InvalidParameterValue", std::string(count_items.status().message()));
  bool has_values = value_items.ok() && !value_items->empty();
  std::vector<const Node*> given;
  if (value.present()) given.push_back(&value);
  if (stats.present()) given.push_back(&stats);
  if (has_values) given.push_back(&values);
  if (given.size() > 1) {
    problems->Add("InvalidParameterCombination",
                  absl::StrFormat("The parameters %s and %s are mutually exclusive and you have "
                                  "specified both.",
                                  given[0]->path(), given[1]->path()));
  } else if (given.empty()) {
    problems->Add("InvalidParameterCombination", "At least one of the parameters must be specified.");
  } else if (value.present()) {
    datum.value = ReadValue(value, problems);
  } else if (stats.present()) {
    std::optional<double> n = ReadRequiredValue(stats["SampleCount"], problems);
    std::optional<double> sum = ReadRequiredValue(stats["Sum"], problems);
    std::optional<double> min = ReadRequiredValue(stats["Minimum"], problems);
    std::optional<double> max = ReadRequiredValue(stats["Maximum"], problems);
    if (n && *n <= 0) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must be greater than 0.",
                                    stats["SampleCount"].path()));
    } else if (min && max && *min > *max) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must not be greater than %s.",
                                    stats["Minimum"].path(), stats["Maximum"].path()));
    } else if (n && sum && min && max) {
      datum.statistic_set = model::StatisticSet{0, *n, *sum, *min, *max};
    }
  } else {
    if (value_items->size() > kMaxValuesPerDatum) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The collection %s must not have a size greater than %d.",
                                    values.path(), kMaxValuesPerDatum));
    } else if (count_items.ok() && !count_items->empty() &&
               count_items->size() != value_items->size()) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameters %s and %s must be of the same size.",
                                    values.path(), counts.path()));
    } else {
      for (size_t i = 0; i < value_items->size(); ++i) {
        std::optional<double> v = ReadValue((*value_items)[i], problems);
        double c = 1;
        if (count_items.ok() && !count_items->empty()) {
          const Node& cn = (*count_items)[i];
          absl::StatusOr<double> cv = cn.Double();
          if (!cv.ok() || !std::isfinite(*cv) || *cv < 0) {
            problems->Add("InvalidParameterValue",
                          absl::StrFormat("The value %s for parameter %s is invalid: counts "
                                          "are finite numbers >= 0.",
                                          cv.ok() ? ShowValue(*cv) : "given", cn.path()));
            continue;
          }
          c = *cv;
        }
        if (v && c > 0) datum.weighted.push_back({0, *v, c});
      }
    }
  }
  if (!has_values && count_items.ok() && !count_items->empty()) {
    problems->Add("InvalidParameterCombination",
                  absl::StrFormat("The parameter %s is only valid together with %s.",
                                  counts.path(), values.path()));
  }
  if (problems->items.size() != before) return std::nullopt;
  return datum;
}

}  // namespace

absl::StatusOr<PutMetricDataRequest> DecodePutMetricData(const Node& input, int64_t now_ms) {
  Problems problems;
  PutMetricDataRequest request;
  std::optional<std::string> ns = ReadNamespace(input["Namespace"], /*required=*/true, &problems,
                                                /*for_write=*/true);

  // MetricData plus the MetricData of each EntityMetricData entry (the entity
  // itself is ignored, spec §4.4).
  std::vector<Node> data;
  Node metric_data = input["MetricData"];
  Node entity_data = input["EntityMetricData"];
  absl::StatusOr<std::vector<Node>> direct = metric_data.List();
  if (!direct.ok()) return InvalidParameterValue(MessageOf(direct.status()));
  data = *std::move(direct);
  absl::StatusOr<std::vector<Node>> entities = entity_data.List();
  if (!entities.ok()) return InvalidParameterValue(MessageOf(entities.status()));
  for (const Node& entity : *entities) {
    absl::StatusOr<std::vector<Node>> inner = entity["MetricData"].List();
    if (!inner.ok()) return InvalidParameterValue(MessageOf(inner.status()));
    for (Node& n : *inner) data.push_back(std::move(n));
  }
  if (!metric_data.present() && !entity_data.present()) {
    problems.Add("MissingParameter", "The parameter MetricData is required.");
    return problems.ToStatus();
  }
  if (data.empty()) {
    problems.Add("InvalidParameterValue", "The collection MetricData must not be empty.");
    return problems.ToStatus();
  }
  if (data.size() > kMaxMetricData) {
    return InvalidParameterValue(absl::StrFormat(
        "The collection MetricData must not have a size greater than %d (got %d).",
        kMaxMetricData, data.size()));
  }

  std::vector<Datum> datums;
  datums.reserve(data.size());
  for (const Node& d : data) {
    if (auto datum = ReadDatum(d, now_ms, &problems)) datums.push_back(*std::move(datum));
  }
  if (!problems.empty() || !ns) return problems.ToStatus();

  request.ns = *ns;
  request.datum_count = datums.size();
  std::map<std::pair<std::string, int>, size_t> index;  // (canonical key, resolution) -> series
  for (Datum& datum : datums) {
    absl::StatusOr<model::SeriesKey> key =
        model::MakeSeriesKey(*ns, datum.name, datum.dimensions, datum.unit);
    if (!key.ok()) return InvalidParameterValue(MessageOf(key.status()));
    auto [it, inserted] =
        index.emplace(std::pair{key->Canonical(), datum.resolution_s}, request.batch.series.size());
    if (inserted) {
      model::SeriesSamples series;
      series.key = *std::move(key);
      series.storage_resolution_s = datum.resolution_s;
      request.batch.series.push_back(std::move(series));
    }
    model::SeriesSamples& series = request.batch.series[it->second];
    if (datum.value) series.samples.push_back({datum.t_ms, *datum.value});
    if (datum.statistic_set) {
      datum.statistic_set->t_ms = datum.t_ms;
      series.statistic_sets.push_back(*datum.statistic_set);
    }
    for (model::WeightedSample& w : datum.weighted) {
      w.t_ms = datum.t_ms;
      series.weighted.push_back(w);
    }
  }
  return request;
}

absl::Status RunPutMetricData(const PutMetricDataRequest& request, const Backends& backends) {
  if (backends.samples == nullptr) {
    return BackendMissing("metric store");
  }
  if (request.batch.empty()) return absl::OkStatus();  // e.g. only zero counts
  return backends.samples->Put(request.batch);
}

}  // namespace trainwatch::api::cloudwatch
