// Query-protocol (XML) encoding of the CloudWatch responses (spec §2.2).
#include "absl/strings/str_format.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/wire_time.h"
#include "api/xml_writer.h"

namespace trainwatch::api::cloudwatch {
namespace {

constexpr std::string_view kXmlns = "xmlns=\"http://monitoring.amazonaws.com/doc/2010-08-01/\"";

void OpenResponse(XmlWriter& xml, std::string_view operation) {
  xml.Open(absl::StrFormat("%sResponse", operation), kXmlns);
  xml.Open(absl::StrFormat("%sResult", operation));
}

std::string CloseResponse(XmlWriter& xml, std::string_view operation,
                          std::string_view request_id) {
  xml.Close(absl::StrFormat("%sResult", operation));
  xml.Open("ResponseMetadata");
  xml.Element("RequestId", request_id);
  xml.Close("ResponseMetadata");
  xml.Close(absl::StrFormat("%sResponse", operation));
  return xml.Take();
}

void WriteDimensions(XmlWriter& xml, const std::vector<model::Dimension>& dims) {
  if (dims.empty()) {
    xml.Empty("Dimensions");
    return;
  }
  xml.Open("Dimensions");
  for (const model::Dimension& d : dims) {
    xml.Open("member");
    xml.Element("Name", d.name);
    xml.Element("Value", d.value);
    xml.Close("member");
  }
  xml.Close("Dimensions");
}

}  // namespace

std::string EncodeEmptyXml(std::string_view operation, std::string_view request_id) {
  XmlWriter xml;
  xml.Open(absl::StrFormat("%sResponse", operation), kXmlns);
  xml.Open("ResponseMetadata");
  xml.Element("RequestId", request_id);
  xml.Close("ResponseMetadata");
  xml.Close(absl::StrFormat("%sResponse", operation));
  return xml.Take();
}

std::string EncodeXml(const GetMetricStatisticsResponse& response, std::string_view request_id) {
  XmlWriter xml;
  OpenResponse(xml, "GetMetricStatistics");
  xml.Element("Label", response.label);
  if (response.datapoints.empty()) {
    xml.Empty("Datapoints");
  } else {
    xml.Open("Datapoints");
    for (const StatisticsBucket& b : response.datapoints) {
      xml.Open("member");
      xml.Element("Timestamp", FormatIsoMillis(b.t_ms));
      xml.Element("Unit", b.unit);
      if (response.extended) {
        xml.Open("ExtendedStatistics");
        for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
          if (!b.values[i]) continue;
          xml.Open("entry");
          xml.Element("key", response.statistics[i].name);
          xml.Element("value", FormatDouble(*b.values[i]));
          xml.Close("entry");
        }
        xml.Close("ExtendedStatistics");
      } else {
        for (size_t i = 0; i < response.statistics.size() && i < b.values.size(); ++i) {
          if (b.values[i]) xml.Element(response.statistics[i].name, FormatDouble(*b.values[i]));
        }
      }
      xml.Close("member");
    }
    xml.Close("Datapoints");
  }
  return CloseResponse(xml, "GetMetricStatistics", request_id);
}

std::string EncodeXml(const GetMetricDataResponse& response, std::string_view request_id) {
  XmlWriter xml;
  OpenResponse(xml, "GetMetricData");
  if (response.results.empty()) {
    xml.Empty("MetricDataResults");
  } else {
    xml.Open("MetricDataResults");
    for (const MetricDataResult& r : response.results) {
      xml.Open("member");
      xml.Element("Id", r.id);
      xml.Element("Label", r.label);
      if (r.timestamps_ms.empty()) {
        xml.Empty("Timestamps");
        xml.Empty("Values");
      } else {
        xml.Open("Timestamps");
        for (int64_t t : r.timestamps_ms) xml.Element("member", FormatIsoMillis(t));
        xml.Close("Timestamps");
        xml.Open("Values");
        for (double v : r.values) xml.Element("member", FormatDouble(v));
        xml.Close("Values");
      }
      xml.Element("StatusCode", r.status_code);
      xml.Close("member");
    }
    xml.Close("MetricDataResults");
  }
  if (response.next_token) xml.Element("NextToken", *response.next_token);
  xml.Empty("Messages");
  return CloseResponse(xml, "GetMetricData", request_id);
}

std::string EncodeXml(const ListMetricsResponse& response, std::string_view request_id) {
  XmlWriter xml;
  OpenResponse(xml, "ListMetrics");
  if (response.metrics.empty()) {
    xml.Empty("Metrics");
  } else {
    xml.Open("Metrics");
    for (const MetricId& m : response.metrics) {
      xml.Open("member");
      xml.Element("Namespace", m.ns);
      xml.Element("MetricName", m.metric);
      WriteDimensions(xml, m.dimensions);
      xml.Close("member");
    }
    xml.Close("Metrics");
  }
  if (response.include_owning_accounts) {
    if (response.metrics.empty()) {
      xml.Empty("OwningAccounts");
    } else {
      xml.Open("OwningAccounts");
      for (size_t i = 0; i < response.metrics.size(); ++i) {
        xml.Element("member", response.account_id);
      }
      xml.Close("OwningAccounts");
    }
  }
  if (response.next_token) xml.Element("NextToken", *response.next_token);
  return CloseResponse(xml, "ListMetrics", request_id);
}

}  // namespace trainwatch::api::cloudwatch
