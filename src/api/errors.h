#pragma once
// AWS errors: how a failure inside an operation (an absl::Status) becomes the
// error a real AWS client parses, per service and wire protocol
// (spec/aws-api.md §2.2, §2.3, §2.7, §3.6).
//
// Code paths that know the exact AWS error attach it to the status with
// AwsStatus() (or the helpers below); a query error's kind (query/errors.h)
// is mapped per service; everything else (a backend's NotFound, a RocksDB
// IOError) is mapped from its canonical code by ToAwsError.
// The mapping is golden-tested (errors_test.cc, tests/golden/errors.txt).

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "api/http.h"

namespace trainwatch::api {

enum class Service { kCloudWatch, kLogs, kSageMaker };
enum class Protocol { kQuery, kJson10, kJson11, kCbor };

std::string_view ServiceName(Service service);    // "CloudWatch", "Logs", "SageMaker"
std::string_view ProtocolName(Protocol protocol);  // "query", "json1.0", "json1.1", "cbor"
// The SigV4 signing name (credential-scope service): monitoring, logs, sagemaker.
std::string_view SigningName(Service service);

// A status carrying an AWS error code: for CloudWatch the query-protocol code
// ("InvalidParameterValue"), for Logs and SageMaker the JSON __type
// ("ResourceNotFoundException", "ValidationException"). The authentication
// codes are spelled as in the query protocol ("SignatureDoesNotMatch") for
// every service; ToAwsError translates them per protocol. The canonical code
// is chosen to match (InvalidArgument, NotFound, ...).
absl::Status AwsStatus(std::string_view aws_code, std::string_view message);
// The code attached by AwsStatus, if any.
std::optional<std::string> AwsCodeOf(const absl::Status& status);

// A status's message as std::string_view (Debian's absl::string_view is not one).
inline std::string_view MessageOf(const absl::Status& status) {
  return std::string_view(status.message().data(), status.message().size());
}

// Shortcuts for the codes used most.
inline absl::Status InvalidParameterValue(std::string_view m) {
  return AwsStatus("InvalidParameterValue", m);
}
inline absl::Status MissingParameter(std::string_view m) {
  return AwsStatus("MissingParameter", m);
}
inline absl::Status InvalidParameterCombination(std::string_view m) {
  return AwsStatus("InvalidParameterCombination", m);
}
inline absl::Status ValidationError(std::string_view m) {  // CloudWatch GetMetricData
  return AwsStatus("ValidationError", m);
}
inline absl::Status ValidationException(std::string_view m) {  // SageMaker, Logs
  return AwsStatus("ValidationException", m);
}
inline absl::Status InvalidParameterException(std::string_view m) {  // Logs
  return AwsStatus("InvalidParameterException", m);
}
inline absl::Status ResourceNotFoundException(std::string_view m) {  // Logs
  return AwsStatus("ResourceNotFoundException", m);
}
// The "not implemented by trainwatch" error of §2.7 (InvalidAction /
// UnknownOperationException).
absl::Status NotImplemented(std::string_view operation);
// The answer when this server has no backend for an operation (e.g. no
// metric store yet): InvalidAction / UnknownOperationException (canonical
// Unimplemented), which clients do not retry. `what`: "metric store".
absl::Status BackendMissing(std::string_view what);
// 413 RequestEntityTooLarge.
absl::Status RequestEntityTooLarge(std::string_view message);

// One error as the wire shows it.
struct AwsError {
  int http_status = 400;
  std::string code;         // query Code (CloudWatch) or __type (Logs, SageMaker)
  std::string json_type;    // __type for JSON/CBOR ("com.amazonaws.cloudwatch#...")
  std::string query_error;  // x-amzn-query-error value (CloudWatch JSON/CBOR), else ""
  bool sender = true;       // Type Sender (client's fault) or Receiver
  std::string message;

  friend bool operator==(const AwsError&, const AwsError&) = default;
};

// `status` must not be OK.
AwsError ToAwsError(Service service, Protocol protocol, const absl::Status& status);

// The complete error response in the protocol's format: query XML
// ErrorResponse, JSON {"__type","message"} (+ x-amzn-query-error for
// CloudWatch), or a CBOR map with smithy-protocol. Sets x-amzn-RequestId and
// Content-Type.
HttpResponse EncodeError(Service service, Protocol protocol, const AwsError& error,
                         std::string_view request_id);

// Both steps at once.
HttpResponse ErrorResponse(Service service, Protocol protocol, const absl::Status& status,
                           std::string_view request_id);

}  // namespace trainwatch::api
