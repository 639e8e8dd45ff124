#pragma once
// CloudWatch metric math (GetMetricData's Expression queries), evaluated
// over time series the caller has read: the api answers GetMetricData with
// it, and any reader (dashboard, Python client) may use it the same way.
//
//   m1 / m2 * 100          arithmetic between series (timestamps both have)
//   m1 - 5                 and with numbers (+ - * / ^, unary -)
//   m1 > 10                comparisons give 1 or 0 (> >= < <= == !=), with
//   m1 > 1 AND m2 < 5      AND, OR, NOT
//   METRICS()              every MetricStat query's series;
//   METRICS("loss")        those whose label contains "loss"
//   SUM, AVG, MIN, MAX, STDDEV   of an array of series: one series, point by
//                          point; of one series: one number (all its points)
//   ABS(x)                 point by point (arrays stay arrays)
//   RATE(x), DIFF(x), DIFF_TIME(x)   change per second, change, seconds
//                          between a point and the one before it
//   FILL(x, 0) FILL(x, REPEAT) FILL(x, LINEAR)   every period of the range
//                          gets a point: the number, the last value, or a
//                          straight line between the neighbours
//   IF(cond, a) IF(cond, a, b)   a where cond is not 0, else b (or nothing)
//
// Functions are case-insensitive. A function CloudWatch has and trainwatch
// does not (SEARCH, ANOMALY_DETECTION_BAND, LOG, ...) is refused by name at
// parse time. Results that are not finite (x / 0) are left out.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::query {

// A time series: points in ascending time.
struct MathSeries {
  std::string label;
  std::vector<int64_t> t_ms;
  std::vector<double> values;
};

// What an expression gives: one number, or series (one, or an array).
struct MathValue {
  std::optional<double> scalar;
  std::vector<MathSeries> series;
  bool array = false;  // from METRICS() or functions of it
};

struct MathContext {
  // The periods FILL fills: start_ms, start_ms + period_ms, ... < end_ms.
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t period_ms = 60000;
  // The value of another query by Id (NotFound when there is none).
  std::function<absl::StatusOr<MathValue>(std::string_view id)> lookup;
  // Every MetricStat query's series, in request order.
  std::function<std::vector<MathSeries>()> metrics;
};

namespace internal {
struct MathNode;
}

class MetricMath {
 public:
  // InvalidArgument naming what is wrong and where (column), or the function
  // trainwatch does not evaluate.
  static absl::StatusOr<MetricMath> Parse(std::string_view expression);
  MetricMath(MetricMath&&) noexcept;
  MetricMath& operator=(MetricMath&&) noexcept;
  ~MetricMath();

  // The query Ids the expression names (each once, in order of appearance),
  // and whether it uses METRICS() (which reads every MetricStat query).
  const std::vector<std::string>& references() const { return references_; }
  bool uses_metrics() const { return uses_metrics_; }

  // InvalidArgument for a type error found with the data (e.g. FILL of a
  // number); errors of `lookup` pass through.
  absl::StatusOr<MathValue> Evaluate(const MathContext& context) const;

 private:
  MetricMath() = default;
  std::shared_ptr<const internal::MathNode> root_;
  std::vector<std::string> references_;
  bool uses_metrics_ = false;
};

}  // namespace trainwatch::query
