#include "extract/number.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>

namespace trainwatch::extract {
namespace {

constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<double> ParseMetricValue(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end && IsAsciiSpace(*p)) ++p;
  while (end > p && IsAsciiSpace(end[-1])) --end;

  bool negative = false;
  if (p < end && (*p == '+' || *p == '-')) {
    negative = *p == '-';
    ++p;
  }
  const char* mantissa = p;
  // While checking the grammar, collect what the fast path needs: the digits
  // as an integer (while they fit) and where the decimal point was.
  uint64_t digits_value = 0;
  int significant = 0;  // digits from the first non-zero one on
  bool exact = true;    // digits_value holds every significant digit
  // Decimal position of the first non-zero digit, for telling overflow from
  // underflow below: the value is about 0.d * 10^(lead + exponent).
  int64_t lead = 0;
  auto take_digit = [&](char c) {
    if (significant == 0 && c == '0') return;
    if (++significant > 19) {
      exact = false;
      return;
    }
    digits_value = digits_value * 10 + static_cast<uint64_t>(c - '0');
  };
  const char* int_begin = p;
  while (p < end && IsDigit(*p)) {
    take_digit(*p);
    ++p;
  }
  size_t int_digits = static_cast<size_t>(p - int_begin);
  lead = significant;
  size_t frac_digits = 0;
  if (p < end && *p == '.') {
    ++p;
    const char* frac_begin = p;
    while (p < end && IsDigit(*p)) {
      if (significant == 0 && *p == '0') --lead;
      take_digit(*p);
      ++p;
    }
    frac_digits = static_cast<size_t>(p - frac_begin);
  }
  if (int_digits == 0 && frac_digits == 0) return std::nullopt;
  int64_t exponent = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool exp_negative = false;
    if (p < end && (*p == '+' || *p == '-')) {
      exp_negative = *p == '-';
      ++p;
    }
    if (p == end || !IsDigit(*p)) return std::nullopt;
    while (p < end && IsDigit(*p)) {
      // Saturate: any exponent this large over- or underflows anyway.
      if (exponent < 1'000'000'000) exponent = exponent * 10 + (*p - '0');
      ++p;
    }
    if (exp_negative) exponent = -exponent;
  }
  if (p != end) return std::nullopt;

  double value = 0;
  // Clinger's fast path: an integer below 2^53 and a power of ten up to 1e22
  // are both exact doubles, so one multiplication or division rounds
  // correctly. Most logged values (a few digits) take it.
  int64_t scale = exponent - static_cast<int64_t>(frac_digits);
  if (exact && significant <= 19 && digits_value <= (uint64_t{1} << 53) && scale >= -22 &&
      scale <= 22) {
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    value = static_cast<double>(digits_value);
    value = scale >= 0 ? value * kPow10[scale] : value / kPow10[-scale];
    return negative ? -value : value;
  }
  std::from_chars_result r = std::from_chars(mantissa, end, value, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars reports both directions the same way; only overflow is an
    // error. Underflow rounds to zero, as strtod and Python's float() do.
    if (significant > 0 && lead + exponent > 0) return std::nullopt;
    value = 0.0;
  } else if (r.ec != std::errc() || r.ptr != end) {
    return std::nullopt;
  }
  if (!std::isfinite(value)) return std::nullopt;
  return negative ? -value : value;
}

std::optional<double> ParseNonFiniteValue(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsAsciiSpace(text.back())) text.remove_suffix(1);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  auto is = [&](std::string_view word) {
    if (text.size() != word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if ((text[i] | 0x20) != word[i]) return false;
    }
    return true;
  };
  if (is("nan")) return std::numeric_limits<double>::quiet_NaN();
  if (is("inf") || is("infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

}  // namespace trainwatch::extract
