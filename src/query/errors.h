#pragma once
// What kind of bad input a query error is, in neutral terms.
//
// Every error a query function returns is an absl::Status whose code says
// the broad kind (InvalidArgument for bad input, NotFound for something
// missing) and whose message is meant for the user. Bad input also carries
// an ErrorKind payload: GetErrorKind(status) returns it, and each protocol
// maps it to its own error shape (the api layer, api/errors.h: CloudWatch's
// InvalidParameterValue, Logs' InvalidParameterException, SageMaker's
// ValidationException, ...) without parsing messages.

#include <optional>
#include <string_view>

#include "absl/status/status.h"

namespace trainwatch::query {

enum class ErrorKind {
  kInvalidValue,        // a parameter's value is malformed or out of its range
  kInvalidCombination,  // parameters that do not go together, or an answer too large to give
  kMissing,             // a required parameter is absent
  kInvalidQuery,        // one query of a batch of queries is malformed
  kInvalidCursor,       // a pagination cursor that is not this query's (query/cursor.h)
};

// "InvalidValue", "InvalidCombination", "Missing", "InvalidQuery", "InvalidCursor".
std::string_view ErrorKindName(ErrorKind kind);

// InvalidArgument with `kind` attached.
absl::Status MakeError(ErrorKind kind, std::string_view message);
// The attached kind, or nullopt.
std::optional<ErrorKind> GetErrorKind(const absl::Status& status);

}  // namespace trainwatch::query
