// AWS JSON 1.0 encoding of the CloudWatch responses (spec §2.3).
#include "api/cloudwatch/cloudwatch.h"
#include "api/wire_time.h"

namespace trainwatch::api::cloudwatch {

using Json = nlohmann::ordered_json;

std::string EncodeJson(const GetMetricStatisticsResponse& response) {
  Json datapoints = Json::array();
  for (const StatisticsBucket& b : response.datapoints) {
    Json point;
    point["Timestamp"] = EpochSeconds(b.t_ms);
    point["Unit"] = b.unit;
    if (response.extended) {
      Json ext = Json::object();
      for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
        if (b.values[i]) ext[response.statistics[i].name] = *b.values[i];
      }
      point["ExtendedStatistics"] = std::move(ext);
    } else {
      for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
        if (b.values[i]) point[response.statistics[i].name] = *b.values[i];
      }
    }
    datapoints.push_back(std::move(point));
  }
  Json body;
  body["Label"] = response.label;
  body["Datapoints"] = std::move(datapoints);
  return DumpJson(body);
}

std::string EncodeJson(const GetMetricDataResponse& response) {
  Json results = Json::array();
  for (const MetricDataResult& r : response.results) {
    Json timestamps = Json::array();
    for (int64_t t : r.timestamps_ms) timestamps.push_back(EpochSeconds(t));
    Json item;
    item["Id"] = r.id;
    item["Label"] = r.label;
    item["Timestamps"] = std::move(timestamps);
    item["Values"] = r.values;
    item["StatusCode"] = r.status_code;
    results.push_back(std::move(item));
  }
  Json body;
  body["MetricDataResults"] = std::move(results);
  if (response.next_token) body["NextToken"] = *response.next_token;
  body["Messages"] = Json::array();
  return DumpJson(body);
}

std::string EncodeJson(const ListMetricsResponse& response) {
  Json metrics = Json::array();
  for (const MetricId& m : response.metrics) {
    Json dims = Json::array();
    for (const model::Dimension& d : m.dimensions) {
      dims.push_back(Json{{"Name", d.name}, {"Value", d.value}});
    }
    metrics.push_back(Json{{"Namespace", m.ns}, {"MetricName", m.metric}, {"Dimensions", dims}});
  }
  Json body;
  body["Metrics"] = std::move(metrics);
  if (response.include_owning_accounts) {
    body["OwningAccounts"] = Json(std::vector<std::string>(response.metrics.size(),
                                                           response.account_id));
  }
  if (response.next_token) body["NextToken"] = *response.next_token;
  return DumpJson(body);
}

}  // namespace trainwatch::api::cloudwatch
