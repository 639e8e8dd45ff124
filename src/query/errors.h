#pragma once
// How query errors tell the api layer which AWS error to answer with.
//
// Every error a query function returns is an absl::Status whose code says
// the broad kind (InvalidArgument for bad input, NotFound for a missing log
// group or stream) and whose message is meant for the user. Where AWS has
// several error codes for bad input, the status also carries an ErrorKind
// payload: GetErrorKind(status) returns it, so the api maps, e.g.,
// kInvalidParameterCombination to CloudWatch's InvalidParameterCombination
// (spec/aws-api.md §2.7) without parsing messages.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace trainwatch::query {

enum class ErrorKind {
  kInvalidParameterValue,        // CloudWatch InvalidParameterValue
  kInvalidParameterCombination,  // CloudWatch InvalidParameterCombination
  kMissingParameter,             // CloudWatch MissingParameter
  kValidationError,              // CloudWatch GetMetricData ValidationError
  kInvalidNextToken,             // CloudWatch GetMetricData InvalidNextToken
  kInvalidParameterException,    // Logs InvalidParameterException
  kResourceNotFound,             // Logs ResourceNotFoundException
  kValidationException,          // SageMaker ValidationException
};

std::string_view ErrorKindName(ErrorKind kind);

// InvalidArgument (NotFound for kResourceNotFound) with `kind` attached.
absl::Status MakeError(ErrorKind kind, std::string_view message);
// The attached kind, or nullopt.
std::optional<ErrorKind> GetErrorKind(const absl::Status& status);

}  // namespace trainwatch::query
