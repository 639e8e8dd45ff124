// Fuzz target: ParseMetricValue against a reference written differently
// (std::regex for the grammar, strtod for the value): both must refuse the
// same texts and agree on every value to the last bit, sign of zero included.
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>
#include <string>

#include "extract/number.h"
#include "util/check.h"

namespace {

std::optional<double> Reference(std::string text) {
  const char* space = " \t\n\v\f\r";
  size_t b = text.find_first_not_of(space, 0, 6);
  if (b == std::string::npos) return std::nullopt;
  size_t e = text.find_last_not_of(space, std::string::npos, 6);
  text = text.substr(b, e - b + 1);
  static const std::regex grammar("[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?");
  if (!std::regex_match(text, grammar)) return std::nullopt;
  errno = 0;
  double v = std::strtod(text.c_str(), nullptr);  // C locale: '.' is the decimal point
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 400) return 0;  // std::regex recurses per character
  std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<double> got = trainwatch::extract::ParseMetricValue(text);
  std::optional<double> want = Reference(text);
  TW_CHECK(got.has_value() == want.has_value());
  if (got.has_value()) {
    TW_CHECK(std::memcmp(&*got, &*want, sizeof(double)) == 0);
  }
  return 0;
}
