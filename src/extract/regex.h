#pragma once
// Internal to src/extract: how metric regexes are compiled. RE2 stays out of
// the public headers, so that layers above see none of it.

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "re2/re2.h"

namespace trainwatch::extract {

// UTF-8, case-sensitive, leftmost-first (Perl) semantics; \d \s \w \b are
// ASCII-only in RE2's Perl syntax. Errors are reported by us, not logged.
RE2::Options MetricRegexOptions();

// Compiles `pattern`. InvalidArgument "regex \"...\" ...: REASON" where
// REASON names RE2-unsupported constructs in words and says what to do.
absl::StatusOr<std::unique_ptr<RE2>> CompileMetricRegex(std::string_view pattern);

}  // namespace trainwatch::extract
