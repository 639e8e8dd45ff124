#pragma once
// The JSON ({...}) and space-delimited ([...]) forms of CloudWatch Logs
// filter patterns (query/filter_pattern.h describes them), and what they
// share with the unstructured form. Internal to query/: use FilterPattern.

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace trainwatch::query::internal {

class StructuredPattern {
 public:
  virtual ~StructuredPattern() = default;
  virtual bool Matches(std::string_view message) const = 0;
};

// `pattern` starts with '{' or '[' (after spaces). InvalidArgument "Invalid
// filter pattern: ..." naming what is wrong and its column.
absl::StatusOr<std::shared_ptr<const StructuredPattern>> ParseStructuredPattern(
    std::string_view pattern);

// InvalidArgument "Invalid filter pattern: <what> in "<pattern>"".
absl::Status InvalidPattern(std::string_view what, std::string_view pattern);
// A %regex% body compiled, after AWS's alphabet check.
absl::StatusOr<std::unique_ptr<re2::RE2>> CompileFilterRegex(std::string_view re,
                                                             std::string_view pattern);

}  // namespace trainwatch::query::internal
