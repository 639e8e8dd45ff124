#include "api/protocol.h"

#include "absl/strings/str_format.h"

namespace trainwatch::api {
namespace {

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

std::string Clip(std::string_view s) { return std::string(s.substr(0, 100)); }

}  // namespace

Route RouteRequest(const HttpRequest& request) {
  Route route;
  const std::string* target = request.headers.Find("X-Amz-Target");
  const std::string* smithy = request.headers.Find("smithy-protocol");
  const std::string* content_type = request.headers.Find("Content-Type");
  std::string_view path = request.Path();

  size_t service_at = path.find("/service/");
  bool cbor_path = service_at != std::string_view::npos &&
                   path.find("/operation/", service_at) != std::string_view::npos;
  if ((smithy != nullptr && EqualsIgnoreCase(*smithy, "rpc-v2-cbor")) || cbor_path) {
    route.protocol = Protocol::kCbor;
    if (cbor_path) {
      std::string_view rest = path.substr(service_at + 9);
      size_t op_at = rest.find("/operation/");
      std::string_view service = rest.substr(0, op_at);
      route.operation = std::string(rest.substr(op_at + 11));
      if (service != "GraniteServiceVersion20100801" &&
          service != "com.amazonaws.cloudwatch.GraniteServiceVersion20100801") {
        route.error = AwsStatus("InvalidAction",
                                absl::StrFormat("Unknown Smithy service %s; trainwatch serves "
                                                "CloudWatch (GraniteServiceVersion20100801).",
                                                Clip(service)));
      }
    }
    if (!cbor_path) {
      route.error = AwsStatus(
          "InvalidAction",
          "A Smithy RPC v2 CBOR request names its operation in the path: POST "
          "/service/GraniteServiceVersion20100801/operation/OPERATION.");
    }
    if (target != nullptr) {
      route.error = InvalidParameterValue(
          "A Smithy RPC v2 CBOR request must not carry X-Amz-Target.");
    }
    return route;
  }

  if (target != nullptr) {
    bool json10 = content_type != nullptr &&
                  StartsWithIgnoreCase(*content_type, "application/x-amz-json-1.0");
    size_t dot = target->rfind('.');
    std::string_view prefix = dot == std::string::npos ? std::string_view(*target)
                                                       : std::string_view(*target).substr(0, dot);
    route.operation = dot == std::string::npos ? "" : target->substr(dot + 1);
    if (prefix == "GraniteServiceVersion20100801") {
      route.service = Service::kCloudWatch;
      route.protocol = Protocol::kJson10;
    } else if (prefix == "Logs_20140328") {
      route.service = Service::kLogs;
      route.protocol = Protocol::kJson11;
    } else if (prefix == "SageMaker") {
      route.service = Service::kSageMaker;
      route.protocol = Protocol::kJson11;
    } else {
      route.service = Service::kLogs;  // a JSON answer without CloudWatch's query header
      route.protocol = json10 ? Protocol::kJson10 : Protocol::kJson11;
      route.error = AwsStatus(
          "InvalidAction",
          absl::StrFormat("Unknown X-Amz-Target %s; trainwatch serves "
                          "GraniteServiceVersion20100801.*, Logs_20140328.* and SageMaker.*.",
                          Clip(*target)));
      return route;
    }
    if (route.operation.empty()) {
      route.error = AwsStatus("InvalidAction",
                              absl::StrFormat("X-Amz-Target %s names no operation; expected "
                                              "<prefix>.<Operation>.",
                                              Clip(*target)));
    } else if (request.method != "POST") {
      route.error = AwsStatus("InvalidAction",
                              absl::StrFormat("AWS JSON requests must be POST, not %s.",
                                              Clip(request.method)));
    }
    return route;
  }

  route.service = Service::kCloudWatch;
  route.protocol = Protocol::kQuery;
  if (content_type != nullptr &&
      StartsWithIgnoreCase(*content_type, "application/x-www-form-urlencoded")) {
    if (request.method != "POST") {
      route.error = AwsStatus(
          "InvalidAction",
          absl::StrFormat("Query-protocol requests must be POST with the parameters in the "
                          "body; %s is not supported.",
                          Clip(request.method)));
    }
    return route;
  }
  route.error = AwsStatus(
      "InvalidAction",
      "This is not an AWS API request trainwatch understands: send the query protocol "
      "(POST, Content-Type: application/x-www-form-urlencoded, Action=...) or AWS JSON "
      "(X-Amz-Target: <service>.<Operation>). trainwatch's own API is under /api/v1/.");
  return route;
}

}  // namespace trainwatch::api
