// Smithy RPC v2 CBOR encoding of the CloudWatch responses (spec §2.4): the
// members of the JSON 1.0 answers (json_codec.cc), timestamps as tag 1.
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
    size_t present = 0;
    for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
      if (b.values[i]) ++present;
    }
    out.MapHeader(2 + (response.extended ? 1 : present));
    out.Text("Timestamp");
    out.Timestamp(b.t_ms);
    out.Text("Unit");
    out.Text(b.unit);
    if (response.extended) {
      out.Text("ExtendedStatistics");
      out.MapHeader(present);
    }
    for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
      if (!b.values[i]) continue;
      out.Text(response.statistics[i].name);
      out.Double(*b.values[i]);
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
