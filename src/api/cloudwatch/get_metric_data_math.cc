// GetMetricData's requests with metric math (query/metric_math.h).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "api/cloudwatch/get_metric_data_internal.h"
#include "api/errors.h"

namespace trainwatch::api::cloudwatch::internal {


// A request with metric math, answered whole: every MetricStat query is read
// (ascending), expressions are evaluated when first needed, and the returned
// results follow the request's order, up to MaxDatapoints points in all.
absl::StatusOr<GetMetricDataResponse> RunWithMath(const GetMetricDataRequest& request,
                                                  const Context& context, MetricsReader& reader) {
  const size_t n = request.queries.size();
  // Math reads each query whole (and FILL makes a point of every period), so
  // the range is bounded as a single query's answer is.
  for (const MetricDataQuery& q : request.queries) {
    const int64_t periods = (request.end_ms - request.start_ms) / (q.period_s * 1000) + 1;
    if (periods > query::kMaxMetricDataDatapoints) {
      return ValidationError(absl::StrFormat(
          "A request with metric math reads at most %d periods of each query; query %s asks "
          "for %d (Period %d s from StartTime to EndTime): narrow the range or widen the "
          "period.",
          query::kMaxMetricDataDatapoints, q.id, periods, q.period_s));
    }
  }
  std::map<std::string_view, size_t> by_id;
  for (size_t i = 0; i < n; ++i) by_id[request.queries[i].id] = i;
  // Every MetricStat query first, spread over threads as plain requests are.
  std::vector<size_t> stats;
  for (size_t i = 0; i < n; ++i) {
    if (!request.queries[i].expression) stats.push_back(i);
  }
  std::vector<absl::StatusOr<std::vector<StatisticsBucket>>> read(n);
  RunSpread(reader, stats.size(), [&](MetricsReader* r, size_t k) {
    // Whole and ascending: math works on series in time order.
    StatisticsQuery sq = MakeStatisticsQuery(request, context, stats[k], SIZE_MAX);
    sq.descending = false;
    sq.resume_after_ms.reset();
    read[stats[k]] = r->GetStatistics(sq);
  });
  std::vector<std::optional<query::MathValue>> values(n);
  std::function<absl::StatusOr<query::MathValue>(size_t)> value_of =
      [&](size_t i) -> absl::StatusOr<query::MathValue> {
    if (values[i]) return *values[i];
    const MetricDataQuery& q = request.queries[i];
    query::MathValue v;
    if (!q.expression) {
      const absl::StatusOr<std::vector<StatisticsBucket>>& buckets = read[i];
      if (!buckets.ok()) return buckets.status();
      query::MathSeries& s = v.series.emplace_back();
      s.label = q.label;
      for (const StatisticsBucket& b : *buckets) {
        if (b.values.empty() || !b.values[0]) continue;
        s.t_ms.push_back(b.t_ms);
        s.values.push_back(*b.values[0]);
      }
    } else {
      query::MathContext c;
      c.period_ms = q.period_s * 1000;
      c.start_ms = RoundStartMs(request.start_ms, q.period_s, context.now_ms);
      c.end_ms = request.end_ms;
      absl::Status failed;
      c.lookup = [&](std::string_view id) -> absl::StatusOr<query::MathValue> {
        return value_of(by_id.at(id));  // Ids were checked when decoded
      };
      c.metrics = [&] {
        std::vector<query::MathSeries> all;
        for (size_t k = 0; k < n; ++k) {
          if (request.queries[k].expression) continue;
          absl::StatusOr<query::MathValue> m = value_of(k);
          if (!m.ok()) {
            failed = m.status();
            continue;
          }
          all.push_back(m->series[0]);
        }
        return all;
      };
      absl::StatusOr<query::MathValue> got = q.math->Evaluate(c);
      if (!failed.ok()) return failed;
      if (!got.ok()) {
        if (!absl::IsInvalidArgument(got.status())) return got.status();
        return ValidationError(
            absl::StrFormat("Error in expression %s: %s", q.id, got.status().message()));
      }
      v = *std::move(got);
    }
    values[i] = v;
    return v;
  };

  GetMetricDataResponse response;
  size_t remaining = static_cast<size_t>(request.max_datapoints);
  for (size_t i = 0; i < n; ++i) {
    const MetricDataQuery& q = request.queries[i];
    if (!q.return_data) continue;
    absl::StatusOr<query::MathValue> v = value_of(i);
    if (!v.ok()) return v.status();
    if (v->scalar) {
      return ValidationError(absl::StrFormat(
          "Error in expression %s: it gives one number, not a time series (use it in an "
          "expression with a series, e.g. m1 - AVG(m1))",
          q.id));
    }
    for (const query::MathSeries& s : v->series) {
      MetricDataResult result;
      result.id = q.id;
      // An array's series keep their own labels (METRICS() * 2).
      result.label = v->array && !q.label_given ? s.label : q.label;
      const size_t take = std::min(remaining, s.t_ms.size());
      if (take < s.t_ms.size()) result.status_code = "PartialData";
      for (size_t k = 0; k < take; ++k) {
        // Descending (the default scan order) from the newest.
        const size_t at = request.descending ? s.t_ms.size() - 1 - k : k;
        result.timestamps_ms.push_back(s.t_ms[at]);
        result.values.push_back(s.values[at]);
      }
      remaining -= take;
      response.results.push_back(std::move(result));
    }
  }
  return response;
}


}  // namespace trainwatch::api::cloudwatch::internal
