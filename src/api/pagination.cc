#include "api/pagination.h"

#include "absl/strings/str_format.h"
#include "api/errors.h"

namespace trainwatch::api {

absl::StatusOr<nlohmann::json> DecodeToken(CursorKind kind, const CursorBinding& binding,
                                           std::string_view token, std::string_view aws_code,
                                           std::string_view prefix, size_t max_chars) {
  absl::StatusOr<nlohmann::json> position = query::DecodeCursor(kind, binding, token, max_chars);
  if (position.ok()) return position;
  return AwsStatus(aws_code, absl::StrFormat("%s: %s.", prefix, MessageOf(position.status())));
}

CursorBinding MetricListingBinding(const query::ListMetricsQuery& query,
                                   std::string_view activity) {
  CursorBinding binding;
  binding.Add(activity);
  binding.Add(query.ns ? "n=" + *query.ns : "").Add(query.metric ? "m=" + *query.metric : "");
  for (const query::DimensionFilter& f : query.dimensions) {
    binding.Add(f.name).Add(f.value ? "=" + *f.value : "*");
  }
  return binding;
}

}  // namespace trainwatch::api
