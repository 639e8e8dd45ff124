#include "api/input.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_format.h"
#include "util/time_parse.h"

namespace trainwatch::api {
namespace {

std::string Describe(const nlohmann::json& v) {
  if (v.is_string()) return QuoteValue(v.get_ref<const std::string&>());
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return QuoteValue(text);
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return false;
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  if (negative) v = -v;
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) {
    return false;
  }
  *out = static_cast<int64_t>(v);
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  // strtod accepts leading spaces and hexadecimal floats; the wire has neither.
  if (s.empty() || s.size() > 400) return false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 'x' ||
        c == 'X' || c == '\0') {
      return false;
    }
  }
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return false;
  *out = v;
  return true;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string QuoteValue(std::string_view value) {
  if (value.size() > 100) return absl::StrFormat("'%s...'", std::string(value.substr(0, 100)));
  return absl::StrFormat("'%s'", std::string(value));
}

std::string LowerCamel(std::string_view name) {
  std::string out(name);
  if (!out.empty() && out[0] >= 'A' && out[0] <= 'Z') out[0] = static_cast<char>(out[0] - 'A' + 'a');
  return out;
}

std::optional<int64_t> ParseIso8601Ms(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!Digits(s, 0, 4, &year) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &month) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &minute) || s[16] != ':' ||
      !Digits(s, 17, 2, &second)) {
    return std::nullopt;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] || hour > 23 ||
      minute > 59 || second > 60) {
    return std::nullopt;
  }
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month == 2 && day == 29 && !leap) return std::nullopt;
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0 || digits > 9) return std::nullopt;
    for (size_t d = digits; d < 3; ++d) millis *= 10;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh)) return std::nullopt;
    size_t m = pos + 3;
    if (m < s.size() && s[m] == ':') ++m;
    if (!Digits(s, m, 2, &om) || oh > 23 || om > 59) return std::nullopt;
    offset_s = sign * (oh * 3600 + om * 60);
    pos = m + 2;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t days = util::DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return seconds * 1000 + millis;
}

std::string Node::MemberPath(std::string_view member) const {
  std::string name = style_ == PathStyle::kCamelJson ? LowerCamel(member) : std::string(member);
  return path_.empty() ? name : path_ + "." + name;
}

Node Node::operator[](std::string_view member) const {
  const nlohmann::json* child = nullptr;
  if (present() && value_->is_object()) {
    auto it = value_->find(member);
    if (it != value_->end()) child = &*it;
  }
  return Node(child, syntax_, style_, MemberPath(member));
}

absl::Status Node::TypeError(std::string_view expected) const {
  return absl::InvalidArgumentError(absl::StrFormat(
      "The value %s for parameter %s is not valid: expected %s.", Describe(*value_), path_,
      expected));
}

absl::Status Node::ExpectStructure() const {
  if (value_->is_object()) return absl::OkStatus();
  return TypeError("a structure");
}

absl::StatusOr<std::vector<Node>> Node::List() const {
  std::vector<Node> items;
  if (!present()) return items;
  if (syntax_ == Syntax::kQuery && value_->is_string() &&
      value_->get_ref<const std::string&>().empty()) {
    return items;
  }
  if (!value_->is_array()) return TypeError("a list");
  items.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    std::string p = style_ == PathStyle::kQuery ? absl::StrFormat("%s.member.%d", path_, i + 1)
                                                : absl::StrFormat("%s.%d.member", path_, i + 1);
    items.push_back(Node(&(*value_)[i], syntax_, style_, std::move(p)));
  }
  return items;
}

absl::StatusOr<std::string> Node::String() const {
  if (!value_->is_string()) return TypeError("a string");
  return value_->get<std::string>();
}

absl::StatusOr<double> Node::Double() const {
  if (value_->is_number()) return value_->get<double>();
  if (!value_->is_string()) return TypeError("a number");
  const std::string& s = value_->get_ref<const std::string&>();
  if (syntax_ == Syntax::kJson) {
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    return TypeError("a number");
  }
  double v;
  if (!ParseDouble(s, &v)) return TypeError("a number");
  return v;
}

absl::StatusOr<int64_t> Node::Int() const {
  if (value_->is_number_integer()) {
    if (value_->is_number_unsigned() &&
        value_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return TypeError("an integer");
    }
    return value_->get<int64_t>();
  }
  if (value_->is_number_float()) {
    double d = value_->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      return static_cast<int64_t>(d);
    }
    return TypeError("an integer");
  }
  if (syntax_ == Syntax::kQuery && value_->is_string()) {
    int64_t v;
    if (ParseInt(value_->get_ref<const std::string&>(), &v)) return v;
  }
  return TypeError("an integer");
}

absl::StatusOr<bool> Node::Bool() const {
  if (value_->is_boolean()) return value_->get<bool>();
  if (syntax_ == Syntax::kQuery && value_->is_string()) {
    const std::string& s = value_->get_ref<const std::string&>();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return TypeError("true or false");
}

absl::StatusOr<int64_t> Node::TimestampMs() const {
  if (value_->is_number()) {
    double seconds = value_->get<double>();
    if (value_->is_number_integer() && !value_->is_number_unsigned()) {
      int64_t s = value_->get<int64_t>();
      if (s > -9000000000000LL && s < 9000000000000LL) return s * 1000;
    } else if (std::isfinite(seconds) && std::fabs(seconds) < 9.0e12) {
      return static_cast<int64_t>(std::llround(seconds * 1000.0));
    }
    return TypeError("a timestamp (epoch seconds)");
  }
  if (value_->is_string()) {
    if (auto ms = ParseIso8601Ms(value_->get_ref<const std::string&>())) return *ms;
  }
  return TypeError("a timestamp (ISO 8601, e.g. 2025-01-15T12:00:00Z)");
}

absl::StatusOr<std::map<std::string, std::string>> Node::StringMap() const {
  std::map<std::string, std::string> out;
  if (syntax_ == Syntax::kQuery && value_->is_string() &&
      value_->get_ref<const std::string&>().empty()) {
    return out;
  }
  if (!value_->is_object()) return TypeError("a map of strings");
  for (const auto& [key, value] : value_->items()) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "The value %s for key %s of parameter %s is not valid: expected a string.",
          Describe(value), QuoteValue(key), path_));
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace trainwatch::api
