#pragma once
// What GetMetricData's two paths share (get_metric_data.cc: plain requests,
// paged; get_metric_data_math.cc: requests with metric math, whole).
// Internal to the cloudwatch api.

#include <cstddef>
#include <functional>

#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"

namespace trainwatch::api::cloudwatch::internal {

// The read of query `qi`: its metric, unit (units merged when none), the
// request's range and scan order, and at most `max_buckets` buckets.
StatisticsQuery MakeStatisticsQuery(const GetMetricDataRequest& request, const Context& context,
                                    size_t qi, size_t max_buckets);

// Runs fn(reader, k) for k in [0, count), over threads with forks of
// `reader` when there are enough to be worth it, else on this thread.
void RunSpread(MetricsReader& reader, size_t count,
               const std::function<void(MetricsReader*, size_t)>& fn);

// A request with metric math (request.has_math), answered whole.
absl::StatusOr<GetMetricDataResponse> RunWithMath(const GetMetricDataRequest& request,
                                                  const Context& context, MetricsReader& reader);

}  // namespace trainwatch::api::cloudwatch::internal
