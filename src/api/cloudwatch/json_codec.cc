// AWS JSON 1.0 encoding of the CloudWatch responses (spec §2.3).
#include "api/cloudwatch/cloudwatch.h"
#include "api/json_text.h"
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
  // Written directly (api/json_text.h): a page may hold 100,800 datapoints.
  size_t points = 0;
  for (const MetricDataResult& r : response.results) points += r.values.size();
  std::string out;
  out.reserve(64 + points * 32 + response.results.size() * 96);
  out.append("{\"MetricDataResults\":[");
  for (size_t i = 0; i < response.results.size(); ++i) {
    const MetricDataResult& r = response.results[i];
    if (i > 0) out.push_back(',');
    out.append("{\"Id\":");
    AppendJsonString(&out, r.id);
    out.append(",\"Label\":");
    AppendJsonString(&out, r.label);
    out.append(",\"Timestamps\":[");
    for (size_t k = 0; k < r.timestamps_ms.size(); ++k) {
      if (k > 0) out.push_back(',');
      AppendJsonDouble(&out, static_cast<double>(r.timestamps_ms[k]) / 1000.0);
    }
    out.append("],\"Values\":[");
    for (size_t k = 0; k < r.values.size(); ++k) {
      if (k > 0) out.push_back(',');
      AppendJsonDouble(&out, r.values[k]);
    }
    out.append("],\"StatusCode\":");
    AppendJsonString(&out, r.status_code);
    out.push_back('}');
  }
  out.push_back(']');
  if (response.next_token) {
    out.append(",\"NextToken\":");
    AppendJsonString(&out, *response.next_token);
  }
  out.append(",\"Messages\":[]}");
  return out;
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
