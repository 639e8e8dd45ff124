#pragma once
// Which service and wire protocol a request speaks (spec/aws-api.md §1.3):
//   1. Smithy RPC v2 CBOR: "smithy-protocol: rpc-v2-cbor" or a path
//      .../service/GraniteServiceVersion20100801/operation/<Op> (not served yet);
//   2. AWS JSON: "X-Amz-Target: <prefix>.<Operation>" (CloudWatch 1.0, Logs and
//      SageMaker 1.1);
//   3. query: Content-Type application/x-www-form-urlencoded (CloudWatch; the
//      operation is the body's Action);
//   4. anything else: a query-protocol InvalidAction error.

#include <string>

#include "absl/status/status.h"
#include "api/errors.h"
#include "api/http.h"

namespace trainwatch::api {

struct Route {
  Service service = Service::kCloudWatch;
  Protocol protocol = Protocol::kQuery;
  std::string operation;  // empty for query (read from the body)
  // Not OK when the request cannot be routed; service and protocol then say
  // how to answer.
  absl::Status error;
};

Route RouteRequest(const HttpRequest& request);

}  // namespace trainwatch::api
