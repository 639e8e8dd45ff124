// Smithy RPC v2 CBOR encoding of the CloudWatch responses (spec §2.4): the
// members of the JSON 1.0 answers (json_codec.cc), timestamps as tag 1.
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "api/cbor.h"
#include "api/cloudwatch/cloudwatch.h"

namespace trainwatch::api::cloudwatch {

std::string EncodeCbor(const GetMetricStatisticsResponse& response) {
  CborWriter out;
  out.MapHeader(2);
  out.Text("Label");
  out.Text(response.label);
  out.Text("Datapoints");
  out.ArrayHeader(response.datapoints.size());
  for (const StatisticsBucket& b : response.datapoints) {
    // A statistic asked for twice is one member (as in the JSON answer).
    std::vector<std::pair<std::string_view, double>> values;
    for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
      if (!b.values[i]) continue;
      const std::string_view name = response.statistics[i].name;
      auto same = std::find_if(values.begin(), values.end(),
                               [name](const auto& v) { return v.first == name; });
      if (same == values.end()) {
        values.emplace_back(name, *b.values[i]);
      } else {
        same->second = *b.values[i];
      }
    }
    const size_t present = values.size();
    out.MapHeader(2 + (response.extended ? 1 : present));
    out.Text("Timestamp");
    out.Timestamp(b.t_ms);
    out.Text("Unit");
    out.Text(b.unit);
    if (response.extended) {
      out.Text("ExtendedStatistics");
      out.MapHeader(present);
    }
    for (const auto& [name, value] : values) {
      out.Text(name);
      out.Double(value);
    }
  }
  return out.Take();
}

std::string EncodeCbor(const GetMetricDataResponse& response) {
  CborWriter out;
  out.MapHeader(response.next_token ? 3 : 2);
  out.Text("MetricDataResults");
  out.ArrayHeader(response.results.size());
  for (const MetricDataResult& r : response.results) {
    out.MapHeader(5);
    out.Text("Id");
    out.Text(r.id);
    out.Text("Label");
    out.Text(r.label);
    out.Text("Timestamps");
    out.ArrayHeader(r.timestamps_ms.size());
    for (int64_t t : r.timestamps_ms) out.Timestamp(t);
    out.Text("Values");
    out.ArrayHeader(r.values.size());
    for (double v : r.values) out.Double(v);
    out.Text("StatusCode");
    out.Text(r.status_code);
  }
  if (response.next_token) {
    out.Text("NextToken");
    out.Text(*response.next_token);
  }
  out.Text("Messages");
  out.ArrayHeader(0);
  return out.Take();
}

std::string EncodeCbor(const ListMetricsResponse& response) {
  CborWriter out;
  out.MapHeader(1 + (response.include_owning_accounts ? 1 : 0) + (response.next_token ? 1 : 0));
  out.Text("Metrics");
  out.ArrayHeader(response.metrics.size());
  for (const MetricId& m : response.metrics) {
    out.MapHeader(3);
    out.Text("Namespace");
    out.Text(m.ns);
    out.Text("MetricName");
    out.Text(m.metric);
    out.Text("Dimensions");
    out.ArrayHeader(m.dimensions.size());
    for (const model::Dimension& d : m.dimensions) {
      out.MapHeader(2);
      out.Text("Name");
      out.Text(d.name);
      out.Text("Value");
      out.Text(d.value);
    }
  }
  if (response.include_owning_accounts) {
    out.Text("OwningAccounts");
    out.ArrayHeader(response.metrics.size());
    for (size_t i = 0; i < response.metrics.size(); ++i) out.Text(response.account_id);
  }
  if (response.next_token) {
    out.Text("NextToken");
    out.Text(*response.next_token);
  }
  return out.Take();
}

}  // namespace trainwatch::api::cloudwatch
