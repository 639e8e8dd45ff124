#pragma once
// Metric reads with CloudWatch semantics (spec/aws-api.md §4.2-§4.6) over a
// read view: the statistics behind StoreReader::GetStatistics
// (query/store_reader.h), plus the last value of a series (charts:
// query/chart.h).
//
// Which data a query sees (§4.2), per namespace retention (store/retention.h;
// with the defaults this is exactly CloudWatch's rule):
//   * the finest tier that still covers StartTime decides: raw (periods 1, 5,
//     10, 20, 30 or multiples of 60), 60 s (multiples of 60), 300 s
//     (multiples of 300), 3600 s (multiples of 3600); a period that does not
//     fit returns no datapoints, not an error;
//   * StartTime is rounded down: for periods under 60 s to a multiple of the
//     period, else to the minute (raw, 60 s tiers), 5 minutes, or the hour;
//   * buckets start at the rounded StartTime, step by Period, end before
//     EndTime, and only buckets with data are returned;
//   * data stored at standard resolution (60) is left out of periods < 60 s.
// The answer is computed from the coarsest stored tier that gives the same
// result (count, sum, min, max are exact at every tier); percentiles are
// exact (nearest rank) from raw data where it still exists, else from the
// tier's sketches (exact for up to 64 distinct values, else <= 1 % relative
// error).
//
// Errors carry an ErrorKind (query/errors.h) with AWS's wording.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/series.h"
#include "query/periods.h"
#include "query/reader.h"
#include "store/read_view.h"

namespace trainwatch::query {

// ---- GetMetricStatistics ----------------------------------------------------

struct GetMetricStatisticsRequest {
  std::string ns = {};
  std::string metric = {};
  std::vector<model::Dimension> dimensions = {};  // exact set, any order
  int64_t start_ms = 0;  // inclusive (rounded, see above)
  int64_t end_ms = 0;    // exclusive
  int64_t period_s = 0;
  std::vector<std::string> statistics = {};           // 1-5 plain statistics, or
  std::vector<std::string> extended_statistics = {};  // 1-10 pNN.NN
  std::optional<std::string> unit = {};               // filter; none: each unit apart
  // Without a unit filter: every unit's data in one datapoint per period
  // (GetMetricData's MetricStat), whose unit is the series' common unit, or
  // empty when they differ.
  bool merge_units = false;
};

struct Datapoint {
  int64_t t_ms = 0;  // bucket start
  std::string unit;
  std::optional<double> sample_count, average, sum, minimum, maximum;
  // Requested extended statistics that the bucket can answer, in request
  // order (a percentile over data with a negative value or a non-identical
  // statistic set is left out).
  std::vector<std::pair<std::string, double>> extended;
};

struct GetMetricStatisticsResponse {
  std::string label;  // the metric name
  std::vector<Datapoint> datapoints;  // by time, then unit
};

// Errors: kMissing (namespace, metric), kInvalidValue
// (times, period, statistic names, unsupported statistics),
// kInvalidCombination (both or neither statistic lists; more than
// 1440 datapoints requested).
absl::StatusOr<GetMetricStatisticsResponse> GetMetricStatistics(
    const store::ReadView& view, const GetMetricStatisticsRequest& request);

// ---- GetMetricData ----------------------------------------------------------

struct MetricDataQuery {
  std::string id = {};  // ^[a-z][a-zA-Z0-9_]*$, unique in the call
  // MetricStat:
  std::string ns = {};
  std::string metric = {};
  std::vector<model::Dimension> dimensions = {};
  int64_t period_s = 0;
  std::string stat = {};
  std::optional<std::string> unit = {};
  // Metric math: not supported yet (ValidationError).
  std::optional<std::string> expression = {};
  std::string label = {};  // default: the metric name
  bool return_data = true;
};

struct GetMetricDataRequest {
  std::vector<MetricDataQuery> queries = {};  // 1-500
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  bool scan_ascending = false;  // default TimestampDescending
  std::optional<int64_t> max_datapoints = {};  // default 100,800
  std::string next_token = {};
};

struct MetricDataResult {
  std::string id;
  std::string label;
  std::vector<int64_t> timestamps_ms;
  std::vector<double> values;
  bool complete = true;  // false: "PartialData", the rest follows with next_token
};

struct GetMetricDataResponse {
  std::vector<MetricDataResult> results;  // request order, return_data only
  std::string next_token;                 // empty on the last page
};

// A query's units are aggregated together (one series per query). Errors:
// kInvalidQuery (ids, stats, expressions), kInvalidValue (times,
// periods), kInvalidCombination (more than 100,800 datapoints
// requested by one query), kInvalidCursor.
absl::StatusOr<GetMetricDataResponse> GetMetricData(const store::ReadView& view,
                                                    const GetMetricDataRequest& request);

// ---- Last value -------------------------------------------------------------

// The newest sample of the series (FinalMetricDataList), in O(1); nullopt
// when the series does not exist or has no data.
absl::StatusOr<std::optional<store::LastValue>> LastValue(const store::ReadView& view,
                                                          const model::SeriesKey& key);

}  // namespace trainwatch::query
