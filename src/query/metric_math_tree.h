#pragma once
// What metric_math.cc's parser gives its evaluator: the expression as a tree.
// Internal to query/: use MetricMath (query/metric_math.h).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::query::internal {

struct MathNode {
  enum Kind { kNumber, kString, kWord, kId, kCall, kUnary, kBinary } kind = kNumber;
  double number = 0;
  std::string text;  // string literal, bare word, Id, function name (upper), operator
  std::vector<MathNode> args;
  size_t column = 0;
};

// The tree of `text`, the Ids it names (each once, in order) and whether it
// uses METRICS(); InvalidArgument naming what is wrong and its column.
absl::StatusOr<MathNode> ParseMath(std::string_view text, std::vector<std::string>* references,
                                   bool* uses_metrics);

// InvalidArgument "<what> (column N)".
absl::Status MathError(std::string_view what, size_t column);

}  // namespace trainwatch::query::internal
