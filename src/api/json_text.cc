#include "api/json_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "nlohmann/json.hpp"

namespace trainwatch::api {

void AppendJsonDouble(std::string* out, double value) {
  if (!std::isfinite(value)) {
    out->append("null");
    return;
  }
  if (value == 0) {
    out->append(std::signbit(value) ? "-0.0" : "0.0");
    return;
  }
  if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
    // Whole numbers (timestamps, counts) are most of an answer's numbers:
    // their digits directly, in the layout below ("1700000000.0").
    char whole[24];
    auto [end, ec] = std::to_chars(whole, whole + sizeof(whole), static_cast<int64_t>(value));
    (void)ec;  // 24 bytes hold any |value| < 1e15
    out->append(whole, static_cast<size_t>(end - whole));
    out->append(".0");
    return;
  }
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e-4 && magnitude < 1e15) {
    // Most values of an answer (averages, losses, percentages). std::to_chars
    // writes the shorter of fixed and scientific notation; when it is fixed,
    // in this range that is exactly the layout below, written in 44 ns a
    // value instead of 56. Scientific goes on to the layout below.
    char text[32];
    auto [end, ec] = std::to_chars(text, text + sizeof(text), value);
    (void)ec;  // 32 bytes hold any double in this range
    const size_t size = static_cast<size_t>(end - text);
    if (std::string_view(text, size).find('e') == std::string_view::npos) {
      out->append(text, size);
      return;
    }
  }
  // Shortest round-trip digits and exponent ("-d.ddde+XX"), then nlohmann's
  // layout: fixed notation while the decimal point falls within 15 digits
  // (or 4 zeros after it), else scientific with a two-digit exponent.
  char sci[40];
  auto [end, ec] = std::to_chars(sci, sci + sizeof(sci), value, std::chars_format::scientific);
  (void)ec;  // 40 bytes always hold a double
  std::string_view text(sci, static_cast<size_t>(end - sci));
  if (text.front() == '-') {
    out->push_back('-');
    text.remove_prefix(1);
  }
  const size_t e_pos = text.find('e');
  char digits[32];
  int k = 0;
  for (char c : text.substr(0, e_pos)) {
    if (c != '.') digits[k++] = c;
  }
  int exponent = 0;
  std::from_chars(text.data() + e_pos + (text[e_pos + 1] == '+' ? 2 : 1), text.data() + text.size(),
                  exponent);
  const int n = exponent + 1;  // digits before the decimal point
  auto put = [&](int from, int to) { out->append(digits + from, static_cast<size_t>(to - from)); };
  constexpr int kMinExp = -4;
  constexpr int kMaxExp = 15;
  if (k <= n && n <= kMaxExp) {
    put(0, k);
    out->append(static_cast<size_t>(n - k), '0');
    out->append(".0");
  } else if (0 < n && n <= kMaxExp) {
    put(0, n);
    out->push_back('.');
    put(n, k);
  } else if (kMinExp < n && n <= 0) {
    out->append("0.");
    out->append(static_cast<size_t>(-n), '0');
    put(0, k);
  } else {
    out->push_back(digits[0]);
    if (k > 1) {
      out->push_back('.');
      put(1, k);
    }
    const int e = n - 1;
    out->push_back('e');
    out->push_back(e < 0 ? '-' : '+');
    if (std::abs(e) < 10) out->push_back('0');  // at least two exponent digits
    char exp[8];
    auto [exp_end, exp_ec] = std::to_chars(exp, exp + sizeof(exp), std::abs(e));
    (void)exp_ec;
    out->append(exp, static_cast<size_t>(exp_end - exp));
  }
}

void AppendJsonString(std::string* out, std::string_view value) {
  out->append(nlohmann::ordered_json(value).dump(-1, ' ', false,
                                                 nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace trainwatch::api
