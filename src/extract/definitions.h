#pragma once
// Metric definitions: SageMaker's MetricDefinitions ({"Name", "Regex"} pairs)
// read from JSON or from "--metric NAME=REGEX" flags, and the rules of
// spec/extraction.md "Definitions" that a list must pass before anything runs.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::extract {

// SageMaker's limits (spec/aws-api.md §5.3).
inline constexpr size_t kMaxDefinitions = 40;
inline constexpr size_t kMaxDefinitionNameChars = 255;
inline constexpr size_t kMaxDefinitionRegexChars = 500;

// SageMaker's MetricDefinitions JSON: a list of {"Name": ..., "Regex": ...}
// (other keys ignored). For convenience an object holding that list under
// "MetricDefinitions" (a CreateTrainingJob AlgorithmSpecification) or under
// "AlgorithmSpecification"."MetricDefinitions" (a whole CreateTrainingJob or
// DescribeTrainingJob document) is accepted too.
// Checks the shape only (ValidateDefinitions checks the rules).
// InvalidArgument naming the definition (its Name, or its position when the
// name is missing) and the reason; for text that is not JSON, the parser's
// message with the byte offset.
absl::StatusOr<std::vector<model::MetricDefinition>> ParseDefinitionsJson(std::string_view json);

// "--metric NAME=REGEX", split at the first '=' (a regex may contain '=',
// a name may not). InvalidArgument when there is no '='.
absl::StatusOr<model::MetricDefinition> ParseMetricFlag(std::string_view name_eq_regex);

// All rules of spec/extraction.md: 0..40 definitions; Name 1..255 characters
// and unique; Regex 1..500 characters, compiles in RE2 and has at least one
// capture group. Constructs RE2 lacks (lookaround, backreferences, atomic
// groups, possessive quantifiers, \Z ...) are named in the error. The first
// broken rule is reported: InvalidArgument "metric definition \"NAME\": ..."
// ("metric definition #N" when the name is empty, N counting from 1).
absl::Status ValidateDefinitions(const std::vector<model::MetricDefinition>& defs);

// How errors name definition `index` of `defs`: "\"NAME\"" or "#N".
std::string DefinitionLabel(const std::vector<model::MetricDefinition>& defs, size_t index);

}  // namespace trainwatch::extract
