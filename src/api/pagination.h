#pragma once
// Pagination tokens (spec/aws-api.md §2.5): every NextToken (nextToken,
// nextForwardToken, the native API's `next`) is a query::Cursor
// (query/cursor.h): opaque, versioned, bound to the query that issued it and
// checked. Each operation names its kind of answer and the parameters that
// bind a token; this header adds the api's side: how a refused token is
// answered.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "query/cursor.h"
#include "query/reader.h"

namespace trainwatch::api {

using query::CursorBinding;
using query::CursorKind;

inline std::string EncodeToken(CursorKind kind, const CursorBinding& binding,
                               const nlohmann::json& position) {
  return query::EncodeCursor(kind, binding, position);
}

// The token's position, or the refusal: a status with `aws_code` whose
// message is `prefix` (AWS's sentence naming the parameter, e.g. "The
// parameter NextToken "x" is invalid") followed by why the cursor was
// refused and what to do.
absl::StatusOr<nlohmann::json> DecodeToken(CursorKind kind, const CursorBinding& binding,
                                           std::string_view token, std::string_view aws_code,
                                           std::string_view prefix, size_t max_chars = 8192);

// What binds a metric listing's token (CloudWatch's and the native API's):
// the namespace, metric name and dimension filters, and the activity window
// as the request gave it (`activity`: RecentlyActive, the native `since`; not
// the time it resolves to, which moves between pages).
CursorBinding MetricListingBinding(const query::ListMetricsQuery& query,
                                   std::string_view activity);

}  // namespace trainwatch::api
