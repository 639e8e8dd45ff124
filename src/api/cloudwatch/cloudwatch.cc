// The CloudWatch dispatcher: operation name -> decode, run, encode.
#include "api/cloudwatch/cloudwatch.h"

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace trainwatch::api::cloudwatch {
namespace {

// CloudWatch operations that exist but trainwatch does not serve yet (§4.8).
constexpr std::string_view kLater[] = {
    "PutDashboard",       "GetDashboard",           "ListDashboards",
    "DeleteDashboards",   "GetMetricWidgetImage",   "EnableAlarmActions",
    "DisableAlarmActions", "PutCompositeAlarm",     "ListTagsForResource",
    "TagResource",        "UntagResource",          "PutAnomalyDetector",
    "DescribeAnomalyDetectors", "DeleteAnomalyDetector", "PutInsightRule",
    "DescribeInsightRules", "GetInsightRuleReport", "PutMetricStream",
    "ListMetricStreams",  "GetMetricStream",        "DeleteMetricStream",
    "ListManagedInsightRules", "StartMetricStreams", "StopMetricStreams",
};

}  // namespace

absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   Protocol protocol, const Context& context,
                                   const Backends& backends) {
  const bool query = protocol == Protocol::kQuery;
  const bool cbor = protocol == Protocol::kCbor;
  auto encode = [&](const auto& response) {
    return query ? EncodeXml(response, context.request_id)
                 : cbor ? EncodeCbor(response) : EncodeJson(response);
  };
  if (operation == "PutMetricData") {
    TW_ASSIGN_OR_RETURN(PutMetricDataRequest request, DecodePutMetricData(input, context.now_ms));
    TW_RETURN_IF_ERROR(RunPutMetricData(request, backends));
    if (query) return EncodeEmptyXml(operation, context.request_id);
    return cbor ? std::string() : std::string("{}");
  }
  if (operation == "GetMetricStatistics") {
    TW_ASSIGN_OR_RETURN(GetMetricStatisticsRequest request,
                        DecodeGetMetricStatistics(input, context));
    TW_ASSIGN_OR_RETURN(GetMetricStatisticsResponse response,
                        RunGetMetricStatistics(request, context, backends));
    return encode(response);
  }
  if (operation == "GetMetricData") {
    TW_ASSIGN_OR_RETURN(GetMetricDataRequest request, DecodeGetMetricData(input, context));
    TW_ASSIGN_OR_RETURN(GetMetricDataResponse response,
                        RunGetMetricData(request, context, backends));
    return encode(response);
  }
  if (operation == "ListMetrics") {
    TW_ASSIGN_OR_RETURN(ListMetricsRequest request, DecodeListMetrics(input, context));
    TW_ASSIGN_OR_RETURN(ListMetricsResponse response, RunListMetrics(request, context, backends));
    return encode(response);
  }
  if (auto answer = HandleAlarmOperation(operation, input, protocol, context, backends)) {
    return *std::move(answer);
  }
  for (std::string_view later : kLater) {
    if (operation == later) return NotImplemented(operation);
  }
  return AwsStatus("InvalidAction",
                   absl::StrFormat("The action %s is not valid for this web service.",
                                   std::string(operation.substr(0, 100))));
}

}  // namespace trainwatch::api::cloudwatch
