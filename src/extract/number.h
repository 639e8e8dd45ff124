#pragma once
// The value grammar of spec/extraction.md "Matching and values": what a
// capture group must hold to become a datapoint.

#include <optional>
#include <string_view>

namespace trainwatch::extract {

// Strips ASCII white space (space, \t, \n, \v, \f, \r) from both ends of
// `text`, then accepts exactly
//
//   [+-]? ( digits ( "." digits? )? | "." digits ) ( [eE] [+-]? digits )?
//
// (digits = [0-9]+) whose value is finite as a double, correctly rounded
// (subnormals are fine; a value too small for a subnormal rounds to a signed
// zero, as strtod does). nullopt for anything else: empty, "nan", "inf",
// "1,234.5", "0x1p-3", "1_000", "1e999", non-ASCII digits, inner spaces.
std::optional<double> ParseMetricValue(std::string_view text);

// The non-finite values ParseMetricValue refuses, as training scripts print
// them: [+-]?(nan|inf|infinity) in any case, ASCII white space around
// stripped ("nan", "-nan", "Inf", "+INFINITY"). nullopt for anything else.
std::optional<double> ParseNonFiniteValue(std::string_view text);

// True for the ASCII white space that ParseMetricValue strips.
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace trainwatch::extract
