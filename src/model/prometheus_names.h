#pragma once
// How a series (namespace, metric name, dimensions, unit) is named in
// Prometheus's data model (/metrics?job=): one rule, documented in
// docs/prometheus.md.
//
//   metric name  the CloudWatch metric name with every byte outside
//                [a-zA-Z0-9_:] replaced by '_', and '_' put in front of a
//                leading digit ("train:loss" stays, "val-acc" -> "val_acc",
//                "1cycle" -> "_1cycle")
//   labels       namespace="<namespace>", then each dimension: its name
//                with every byte outside [a-zA-Z0-9_] replaced by '_'
//                ('_' in front of a leading digit), "dim_" in front of a name
//                that would start with "__" or be "namespace" or "unit", and
//                "_2", "_3", ... after a name an earlier dimension took;
//                unit="<unit>" when the unit is not None
//
// Different series may map to the same name and labels ("a-b" and "a_b");
// a reader keeps one of them (the caller says which).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/series.h"

namespace trainwatch::model {

struct PrometheusSeries {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in the order above
};

PrometheusSeries ToPrometheus(const SeriesKey& key);
std::string PrometheusMetricName(std::string_view metric);
std::string PrometheusLabelName(std::string_view dimension);

}  // namespace trainwatch::model
