#include "api/errors.h"

#include <array>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "api/cbor.h"
#include "api/xml_writer.h"
#include "nlohmann/json.hpp"
#include "query/errors.h"

namespace trainwatch::api {
namespace {

constexpr std::string_view kCodePayload = "type.trainwatch.dev/aws-code";
constexpr std::string_view kCwNs = "com.amazonaws.cloudwatch#";

// Every code trainwatch attaches itself, with its canonical status code.
struct CodeInfo {
  std::string_view code;
  absl::StatusCode canonical;
};
constexpr std::array kCodes = {
    CodeInfo{"InvalidParameterValue", absl::StatusCode::kInvalidArgument},
    CodeInfo{"MissingParameter", absl::StatusCode::kInvalidArgument},
    CodeInfo{"InvalidParameterCombination", absl::StatusCode::kInvalidArgument},
    CodeInfo{"ValidationError", absl::StatusCode::kInvalidArgument},
    CodeInfo{"InvalidNextToken", absl::StatusCode::kInvalidArgument},
    CodeInfo{"InvalidFormat", absl::StatusCode::kInvalidArgument},
    CodeInfo{"LimitExceeded", absl::StatusCode::kResourceExhausted},
    CodeInfo{"InvalidAction", absl::StatusCode::kUnimplemented},
    CodeInfo{"MissingAction", absl::StatusCode::kInvalidArgument},
    CodeInfo{"Throttling", absl::StatusCode::kUnavailable},
    CodeInfo{"InternalServiceError", absl::StatusCode::kInternal},
    CodeInfo{"RequestEntityTooLarge", absl::StatusCode::kResourceExhausted},
    CodeInfo{"MissingAuthenticationToken", absl::StatusCode::kUnauthenticated},
    CodeInfo{"IncompleteSignature", absl::StatusCode::kUnauthenticated},
    CodeInfo{"InvalidClientTokenId", absl::StatusCode::kUnauthenticated},
    CodeInfo{"SignatureDoesNotMatch", absl::StatusCode::kUnauthenticated},
    CodeInfo{"InvalidParameterException", absl::StatusCode::kInvalidArgument},
    CodeInfo{"ResourceNotFoundException", absl::StatusCode::kNotFound},
    CodeInfo{"ResourceAlreadyExistsException", absl::StatusCode::kAlreadyExists},
    CodeInfo{"LimitExceededException", absl::StatusCode::kResourceExhausted},
    CodeInfo{"OperationAbortedException", absl::StatusCode::kAborted},
    CodeInfo{"ThrottlingException", absl::StatusCode::kUnavailable},
    CodeInfo{"ServiceUnavailableException", absl::StatusCode::kUnavailable},
    CodeInfo{"ValidationException", absl::StatusCode::kInvalidArgument},
    CodeInfo{"ResourceInUse", absl::StatusCode::kAlreadyExists},
    CodeInfo{"ResourceNotFound", absl::StatusCode::kNotFound},
    CodeInfo{"ResourceLimitExceeded", absl::StatusCode::kResourceExhausted},
    CodeInfo{"ConflictException", absl::StatusCode::kAborted},
    CodeInfo{"InternalFailure", absl::StatusCode::kInternal},
};

bool IsAuthCode(std::string_view code) {
  return code == "MissingAuthenticationToken" || code == "IncompleteSignature" ||
         code == "InvalidClientTokenId" || code == "SignatureDoesNotMatch";
}

// The JSON __type of an authentication failure (§3.6).
std::string_view AuthJsonType(std::string_view code) {
  if (code == "MissingAuthenticationToken") return "MissingAuthenticationTokenException";
  if (code == "IncompleteSignature") return "IncompleteSignatureException";
  if (code == "InvalidClientTokenId") return "UnrecognizedClientException";
  return "InvalidSignatureException";
}

// Canonical code -> AWS code, for statuses that carry none.
std::string_view DefaultCode(Service service, absl::StatusCode code) {
  using C = absl::StatusCode;
  switch (service) {
    case Service::kCloudWatch:
      switch (code) {
        case C::kInvalidArgument:
        case C::kOutOfRange:
        case C::kFailedPrecondition:
        case C::kNotFound:
        case C::kAlreadyExists:
          return "InvalidParameterValue";
        case C::kResourceExhausted:
        case C::kUnavailable:
        case C::kDeadlineExceeded:
          return "Throttling";  // botocore retries it
        case C::kUnimplemented:
          return "InvalidAction";
        case C::kUnauthenticated:
        case C::kPermissionDenied:
          return "InvalidClientTokenId";
        default:
          return "InternalServiceError";
      }
    case Service::kLogs:
      switch (code) {
        case C::kInvalidArgument:
        case C::kOutOfRange:
        case C::kFailedPrecondition:
          return "InvalidParameterException";
        case C::kNotFound:
          return "ResourceNotFoundException";
        case C::kAlreadyExists:
          return "ResourceAlreadyExistsException";
        case C::kResourceExhausted:
        case C::kDeadlineExceeded:
          return "ThrottlingException";
        case C::kAborted:
          return "OperationAbortedException";
        case C::kUnimplemented:
          return "InvalidAction";
        case C::kUnauthenticated:
        case C::kPermissionDenied:
          return "InvalidClientTokenId";
        default:
          return "ServiceUnavailableException";
      }
    case Service::kSageMaker:
      switch (code) {
        case C::kInvalidArgument:
        case C::kOutOfRange:
        case C::kFailedPrecondition:
        case C::kNotFound:
          return "ValidationException";
        case C::kAlreadyExists:
          return "ResourceInUse";
        case C::kResourceExhausted:
          return "ResourceLimitExceeded";
        case C::kUnavailable:
        case C::kDeadlineExceeded:
          return "ThrottlingException";
        case C::kAborted:
          return "ConflictException";
        case C::kUnimplemented:
          return "InvalidAction";
        case C::kUnauthenticated:
        case C::kPermissionDenied:
          return "InvalidClientTokenId";
        default:
          return "InternalFailure";
      }
  }
  return "InternalServiceError";
}

// Codes of one service spelled with another service's words (a CloudWatch-style
// "InvalidParameterValue" raised by shared code inside a Logs operation).
std::string_view Translate(Service service, std::string_view code) {
  if (service == Service::kCloudWatch) {
    // ResourceNotFound is CloudWatch's own too (alarms), and stays.
    if (code == "InvalidParameterException" || code == "ValidationException" ||
        code == "ResourceNotFoundException" ||
        code == "ResourceAlreadyExistsException" || code == "ResourceInUse" ||
        code == "ConflictException" || code == "OperationAbortedException") {
      return "InvalidParameterValue";
    }
    if (code == "ThrottlingException" || code == "LimitExceededException" ||
        code == "ResourceLimitExceeded" || code == "ServiceUnavailableException") {
      return "Throttling";
    }
    if (code == "InternalFailure") return "InternalServiceError";
    return code;
  }
  bool logs = service == Service::kLogs;
  if (code == "InvalidParameterValue" || code == "MissingParameter" ||
      code == "InvalidParameterCombination" || code == "ValidationError" ||
      code == "InvalidNextToken" || code == "MissingAction") {
    return logs ? "InvalidParameterException" : "ValidationException";
  }
  if (code == "Throttling") return "ThrottlingException";
  if (code == "InternalServiceError") return logs ? "ServiceUnavailableException" : "InternalFailure";
  if (logs && code == "ResourceNotFound") return "ResourceNotFoundException";
  if (!logs && code == "ResourceNotFoundException") return "ResourceNotFound";
  return code;
}

int QueryStatus(std::string_view code) {
  if (code == "InternalServiceError") return 500;
  if (code == "RequestEntityTooLarge") return 413;
  if (code == "MissingAuthenticationToken" || code == "InvalidClientTokenId" ||
      code == "SignatureDoesNotMatch") {
    return 403;
  }
  return 400;
}

std::string CloudWatchJsonType(std::string_view code) {
  if (code == "InvalidAction" || code == "MissingAction") return "UnknownOperationException";
  if (IsAuthCode(code)) return std::string(AuthJsonType(code));
  if (code == "InvalidParameterValue") return absl::StrFormat("%sInvalidParameterValueException", kCwNs);
  if (code == "MissingParameter") return absl::StrFormat("%sMissingRequiredParameterException", kCwNs);
  if (code == "InvalidParameterCombination") {
    return absl::StrFormat("%sInvalidParameterCombinationException", kCwNs);
  }
  if (code == "InternalServiceError") return absl::StrFormat("%sInternalServiceFault", kCwNs);
  return absl::StrFormat("%s%s", kCwNs, code);
}

}  // namespace

std::string_view ServiceName(Service service) {
  switch (service) {
    case Service::kCloudWatch: return "CloudWatch";
    case Service::kLogs: return "Logs";
    case Service::kSageMaker: return "SageMaker";
  }
  return "?";
}

std::string_view ProtocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kQuery: return "query";
    case Protocol::kJson10: return "json1.0";
    case Protocol::kJson11: return "json1.1";
    case Protocol::kCbor: return "cbor";
  }
  return "?";
}

std::string_view SigningName(Service service) {
  switch (service) {
    case Service::kCloudWatch: return "monitoring";
    case Service::kLogs: return "logs";
    case Service::kSageMaker: return "sagemaker";
  }
  return "?";
}

absl::Status AwsStatus(std::string_view aws_code, std::string_view message) {
  absl::StatusCode canonical = absl::StatusCode::kInvalidArgument;
  for (const CodeInfo& info : kCodes) {
    if (info.code == aws_code) canonical = info.canonical;
  }
  absl::Status status(canonical, absl::string_view(message.data(), message.size()));
  status.SetPayload(absl::string_view(kCodePayload.data(), kCodePayload.size()),
                    absl::Cord(absl::string_view(aws_code.data(), aws_code.size())));
  return status;
}

std::optional<std::string> AwsCodeOf(const absl::Status& status) {
  auto payload =
      status.GetPayload(absl::string_view(kCodePayload.data(), kCodePayload.size()));
  if (payload) return std::string(*payload);
  return std::nullopt;
}

absl::Status NotImplemented(std::string_view operation) {
  return AwsStatus("InvalidAction",
                   absl::StrFormat("The action %s is not implemented by trainwatch; see "
                                   "docs/api.md for the operations it serves.",
                                   operation));
}

absl::Status BackendMissing(std::string_view what) {
  return AwsStatus("InvalidAction",
                   absl::StrFormat("This trainwatch server has no %s attached, so it cannot "
                                   "serve this operation; see docs/api.md for what each server "
                                   "configuration serves.",
                                   what));
}

absl::Status RequestEntityTooLarge(std::string_view message) {
  return AwsStatus("RequestEntityTooLarge", message);
}

namespace {

// The AWS code a query error (query/errors.h) is answered with, per service.
std::string_view QueryErrorCode(Service service, query::ErrorKind kind) {
  if (service == Service::kLogs) return "InvalidParameterException";
  if (service == Service::kSageMaker) return "ValidationException";
  switch (kind) {
    case query::ErrorKind::kInvalidValue: return "InvalidParameterValue";
    case query::ErrorKind::kInvalidCombination: return "InvalidParameterCombination";
    case query::ErrorKind::kMissing: return "MissingParameter";
    case query::ErrorKind::kInvalidQuery: return "ValidationError";
    case query::ErrorKind::kInvalidCursor: return "InvalidNextToken";
  }
  return "InvalidParameterValue";
}

}  // namespace

AwsError ToAwsError(Service service, Protocol protocol, const absl::Status& status) {
  AwsError error;
  std::optional<std::string> attached = AwsCodeOf(status);
  if (!attached) {
    if (std::optional<query::ErrorKind> kind = query::GetErrorKind(status)) {
      attached = std::string(QueryErrorCode(service, *kind));
    }
  }
  std::string code = attached ? *attached : std::string(DefaultCode(service, status.code()));
  code = std::string(Translate(service, code));
  error.message = std::string(status.message());
  if (error.message.empty()) error.message = code;

  if (service == Service::kCloudWatch) {
    error.code = code;
    error.sender = QueryStatus(code) < 500;
    if (protocol == Protocol::kQuery) {
      error.http_status = QueryStatus(code);
      error.json_type = CloudWatchJsonType(code);
    } else {
      error.json_type = CloudWatchJsonType(code);
      error.http_status = IsAuthCode(code) ? 400 : QueryStatus(code);
      error.query_error = absl::StrFormat("%s;%s", code, error.sender ? "Sender" : "Receiver");
    }
    return error;
  }

  // Logs and SageMaker: JSON 1.1 only; the code is the __type.
  if (IsAuthCode(code)) {
    error.code = std::string(AuthJsonType(code));
    error.http_status = 400;
  } else if (code == "InvalidAction" || code == "MissingAction") {
    error.code = "UnknownOperationException";
    error.http_status = 400;
  } else {
    error.code = code;
    if (code == "RequestEntityTooLarge") {
      error.http_status = 413;
    } else if (code == "ServiceUnavailableException") {
      error.http_status = 503;
    } else if (code == "InternalFailure") {
      error.http_status = 500;
    } else {
      error.http_status = 400;
    }
  }
  error.json_type = error.code;
  error.sender = error.http_status < 500;
  return error;
}

HttpResponse EncodeError(Service service, Protocol protocol, const AwsError& error,
                         std::string_view request_id) {
  HttpResponse response;
  response.status = error.http_status;
  response.headers.Add("x-amzn-RequestId", std::string(request_id));
  switch (protocol) {
    case Protocol::kQuery: {
      XmlWriter xml;
      xml.Open("ErrorResponse", "xmlns=\"http://monitoring.amazonaws.com/doc/2010-08-01/\"");
      xml.Open("Error");
      xml.Element("Type", error.sender ? "Sender" : "Receiver");
      xml.Element("Code", error.code);
      xml.Element("Message", error.message);
      xml.Close("Error");
      xml.Element("RequestId", request_id);
      xml.Close("ErrorResponse");
      response.headers.Add("Content-Type", "text/xml");
      response.body = xml.Take();
      break;
    }
    case Protocol::kJson10:
    case Protocol::kJson11: {
      if (!error.query_error.empty()) response.headers.Add("x-amzn-query-error", error.query_error);
      nlohmann::ordered_json body;
      body["__type"] = error.json_type;
      body["message"] = error.message;
      response.headers.Add("Content-Type", protocol == Protocol::kJson10
                                               ? "application/x-amz-json-1.0"
                                               : "application/x-amz-json-1.1");
      response.body = body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      break;
    }
    case Protocol::kCbor: {
      response.headers.Add("smithy-protocol", "rpc-v2-cbor");
      if (!error.query_error.empty()) response.headers.Add("x-amzn-query-error", error.query_error);
      response.headers.Add("Content-Type", "application/cbor");
      CborWriter cbor;
      cbor.MapHeader(2);
      cbor.Text("__type");
      cbor.Text(error.json_type);
      cbor.Text("message");
      cbor.Text(error.message);
      response.body = cbor.Take();
      break;
    }
  }
  (void)service;
  return response;
}

HttpResponse ErrorResponse(Service service, Protocol protocol, const absl::Status& status,
                           std::string_view request_id) {
  return EncodeError(service, protocol, ToAwsError(service, protocol, status), request_id);
}

}  // namespace trainwatch::api
