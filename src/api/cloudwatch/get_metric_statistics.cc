// GetMetricStatistics (spec/aws-api.md §4.5).
#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"

namespace trainwatch::api::cloudwatch {

absl::StatusOr<GetMetricStatisticsRequest> DecodeGetMetricStatistics(const Node& input,
                                                                     const Context& context) {
  Problems problems;
  GetMetricStatisticsRequest request;
  std::optional<std::string> ns = ReadNamespace(input["Namespace"], true, &problems);
  std::optional<std::string> name = ReadMetricName(input["MetricName"], true, &problems);
  request.metric.dimensions = ReadDimensions(input["Dimensions"], &problems);
  ReadTimeRange("GetMetricStatistics", input, &request.start_ms, &request.end_ms, &problems);
  request.unit = ReadUnit(input["Unit"], &problems);

  Node period = input["Period"];
  if (!period.present()) {
    problems.Add("MissingParameter", "The parameter Period is required.");
  } else {
    absl::StatusOr<int64_t> p = period.Int();
    if (!p.ok() || !IsAllowedPeriod(*p)) {
      problems.Add("InvalidParameterValue",
                   "The parameter Period must be 1, 5, 10, 20, 30 or a multiple of 60.");
    } else {
      request.period_s = *p;
    }
  }

  Node stats = input["Statistics"];
  Node extended = input["ExtendedStatistics"];
  absl::StatusOr<std::vector<Node>> stat_items = stats.List();
  absl::StatusOr<std::vector<Node>> ext_items = extended.List();
  if (!stat_items.ok()) problems.Add("InvalidParameterValue", std::string(stat_items.status().message()));
  if (!ext_items.ok()) problems.Add("InvalidParameterValue", std::string(ext_items.status().message()));
  if (stat_items.ok() && ext_items.ok()) {
    if (stat_items->empty() == ext_items->empty()) {
      problems.Add("InvalidParameterCombination",
                   "Must specify either Statistics or ExtendedStatistics, but not both.");
    } else if (stat_items->size() > kMaxStatistics) {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The collection Statistics must not have a size greater than %d.",
                                   kMaxStatistics));
    } else if (ext_items->size() > kMaxExtendedStatistics) {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The collection ExtendedStatistics must not have a size "
                                   "greater than %d.",
                                   kMaxExtendedStatistics));
    } else {
      request.extended = !ext_items->empty();
      for (const Node& item : request.extended ? *ext_items : *stat_items) {
        absl::StatusOr<std::string> text = item.String();
        if (!text.ok()) {
          problems.Add("InvalidParameterValue", std::string(text.status().message()));
          continue;
        }
        if (!request.extended) {
          std::optional<Statistic> s = ParsePlainStatistic(*text);
          if (!s) {
            problems.Add("InvalidParameterValue",
                         absl::StrFormat("The value %s for parameter %s is not a valid "
                                         "statistic; use SampleCount, Average, Sum, Minimum or "
                                         "Maximum (percentiles go in ExtendedStatistics).",
                                         QuoteValue(*text), item.path()));
            continue;
          }
          request.statistics.push_back(*s);
        } else {
          absl::StatusOr<Statistic> s = ParseExtendedStatistic(*text);
          if (!s.ok()) {
            problems.Add("InvalidParameterValue",
                         absl::StrFormat("The value %s for parameter %s %s", QuoteValue(*text),
                                         item.path(), s.status().message()));
            continue;
          }
          request.statistics.push_back(*s);
        }
      }
    }
  }
  if (!problems.empty()) return problems.ToStatus();
  request.metric.ns = *ns;
  request.metric.metric = *name;

  int64_t requested =
      RequestedDatapoints(request.start_ms, request.end_ms, request.period_s, context.now_ms);
  if (requested > kMaxStatisticsDatapoints) {
    return InvalidParameterCombination(absl::StrFormat(
        "You have requested up to %d datapoints, which exceeds the limit of %d. You may reduce "
        "the datapoints requested by increasing Period, or decreasing the time range.",
        requested, kMaxStatisticsDatapoints));
  }
  return request;
}

absl::StatusOr<GetMetricStatisticsResponse> RunGetMetricStatistics(
    const GetMetricStatisticsRequest& request, const Context& context, const Backends& backends) {
  if (backends.metrics == nullptr) {
    return BackendMissing("metric store");
  }
  StatisticsQuery query;
  query.metric = request.metric;
  query.unit = request.unit;
  query.start_ms = request.start_ms;
  query.end_ms = request.end_ms;
  query.period_s = request.period_s;
  query.now_ms = context.now_ms;
  query.statistics = request.statistics;
  absl::StatusOr<std::vector<StatisticsBucket>> buckets = backends.metrics->GetStatistics(query);
  if (!buckets.ok()) return buckets.status();
  GetMetricStatisticsResponse response;
  response.label = request.metric.metric;
  response.statistics = request.statistics;
  response.extended = request.extended;
  response.datapoints = *std::move(buckets);
  return response;
}

}  // namespace trainwatch::api::cloudwatch
