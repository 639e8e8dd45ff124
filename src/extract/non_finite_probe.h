#pragma once
// Internal to src/extract: a definition's regex with its value group widened
// to the words scripts print for non-finite values, so that `loss: nan`
// reaches the rules even when the definition says `loss: ([0-9.]+)`, which
// cannot match it (docs/rules.md, "NaN and infinities").
//
//   "loss: ([0-9.eE+-]+) acc" -> "loss: ((?i:[-+]?(?:nan|inf(?:inity)?))) acc"
//
// Only capture group 1 changes; the rest of the pattern must still match, so
// the probe finds nan where the definition would have found the number.

#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::extract {

// The probe pattern, or nullopt when the pattern has no capturing group that
// a scan can delimit (an escape at the end, unbalanced brackets).
std::optional<std::string> NonFiniteProbePattern(std::string_view pattern);

// Whether `line` holds "nan" or "inf" in any case: the cheap test before a
// probe is run.
bool MayHoldNonFinite(std::string_view line);

}  // namespace trainwatch::extract
