#include "rules/params.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/check.h"
#include "util/time_parse.h"

namespace trainwatch::rules {

std::string_view ProfileName(Profile profile) {
  return profile == Profile::kSageMakerCompat ? "sagemaker_compat" : "default";
}

std::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kNumber: return "number";
    case ParamType::kInteger: return "integer";
    case ParamType::kBool: return "true/false";
    case ParamType::kString: return "text";
    case ParamType::kSeconds: return "duration";
    case ParamType::kRegex: return "regex";
  }
  return "?";
}

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
                        absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string FormatBound(double v) { return absl::StrFormat("%g", v); }

// "a number from 0 to 100 (default 50)"
std::string Accepted(const ParamSpec& spec, Profile profile) {
  std::string what;
  switch (spec.type) {
    case ParamType::kNumber: what = "a number"; break;
    case ParamType::kInteger: what = "a whole number"; break;
    case ParamType::kBool: what = "true or false"; break;
    case ParamType::kString: what = "text"; break;
    case ParamType::kSeconds: what = "a duration (90, 90s, 15m, 2h)"; break;
    case ParamType::kRegex: what = "a regular expression (e.g. .*relu_output|fc[0-9]+)"; break;
  }
  if (spec.type == ParamType::kNumber || spec.type == ParamType::kInteger ||
      spec.type == ParamType::kSeconds) {
    const std::string unit = spec.type == ParamType::kSeconds ? " s" : "";
    if (std::isfinite(spec.min) && std::isfinite(spec.max)) {
      what += absl::StrFormat(" from %s to %s%s", FormatBound(spec.min), FormatBound(spec.max),
                              unit);
    } else if (std::isfinite(spec.min)) {
      what += absl::StrFormat(" of at least %s%s", FormatBound(spec.min), unit);
    } else if (std::isfinite(spec.max)) {
      what += absl::StrFormat(" of at most %s%s", FormatBound(spec.max), unit);
    }
  }
  const std::string_view def =
      profile == Profile::kSageMakerCompat && !spec.compat_value.empty() ? spec.compat_value
                                                                          : spec.default_value;
  if (!def.empty()) what += absl::StrFormat(" (default %s)", def);
  return what;
}

}  // namespace

std::vector<std::string> NearestFirst(std::string_view word,
                                      const std::vector<std::string>& candidates) {
  // (not a prefix, distance, position): a word that starts a candidate is
  // its abbreviation ("LowGPU"), however far the whole name is.
  std::vector<std::tuple<bool, size_t, size_t>> order;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const bool prefix = !word.empty() && absl::StartsWithIgnoreCase(candidates[i], absl::string_view(word.data(), word.size()));
    order.emplace_back(!prefix, EditDistance(word, candidates[i]), i);
  }
  std::stable_sort(order.begin(), order.end());
  std::vector<std::string> out;
  for (const auto& [not_prefix, distance, i] : order) out.push_back(candidates[i]);
  return out;
}

absl::StatusOr<ParamValues> ParseParams(std::string_view rule, std::span<const ParamSpec> specs,
                                        const std::map<std::string, std::string>& given,
                                        Profile profile) {
  for (const auto& [name, value] : given) {
    // Captured through a reference: clang before 16 cannot capture a
    // structured binding (the thread-safety check compiles with clang).
    const std::string& key = name;
    const bool known = std::any_of(specs.begin(), specs.end(),
                                   [&](const ParamSpec& s) { return s.name == key; });
    if (known) continue;
    std::vector<std::string> names;
    for (const ParamSpec& s : specs) names.emplace_back(s.name);
    if (names.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("rule %s has no parameter \"%s\"; it takes no parameters", rule, name));
    }
    const std::vector<std::string> nearest = NearestFirst(name, names);
    return absl::InvalidArgumentError(absl::StrFormat(
        "rule %s has no parameter \"%s\"; did you mean \"%s\"? Its parameters: %s", rule, name,
        nearest.front(), absl::StrJoin(nearest, ", ")));
  }
  ParamValues out;
  out.profile_ = profile;
  for (const ParamSpec& spec : specs) {
    ParamValues::Value v;
    v.type = spec.type;
    auto it = given.find(std::string(spec.name));
    std::string_view text;
    if (it != given.end()) {
      text = it->second;
    } else {
      text = profile == Profile::kSageMakerCompat && !spec.compat_value.empty()
                 ? spec.compat_value
                 : spec.default_value;
    }
    std::string trimmed(text);
    absl::StripAsciiWhitespace(&trimmed);
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("rule %s: %s=\"%s\" %s; give %s", rule, spec.name, text, why,
                          Accepted(spec, profile)));
    };
    if (!trimmed.empty() || spec.type == ParamType::kString || spec.type == ParamType::kRegex) {
      v.has = !trimmed.empty() || it != given.end();
      switch (spec.type) {
        case ParamType::kNumber:
          if (!absl::SimpleAtod(trimmed, &v.number) || !std::isfinite(v.number)) {
            return bad("is not a number");
          }
          break;
        case ParamType::kInteger: {
          int64_t i = 0;
          if (!absl::SimpleAtoi(trimmed, &i)) return bad("is not a whole number");
          v.number = static_cast<double>(i);
          break;
        }
        case ParamType::kBool:
          if (!absl::SimpleAtob(trimmed, &v.flag)) return bad("is not true or false");
          break;
        case ParamType::kString:
          v.text = std::string(text);
          break;
        case ParamType::kRegex:
          try {
            std::regex check(std::string(text), std::regex::ECMAScript);
          } catch (const std::regex_error& e) {
            return bad(absl::StrFormat("is not a regular expression (%s)", e.what()));
          }
          v.text = std::string(text);
          break;
        case ParamType::kSeconds: {
          absl::StatusOr<int64_t> ms = util::ParseDurationMs(trimmed);
          if (!ms.ok()) return bad("is not a duration");
          v.number = static_cast<double>(*ms) / 1000.0;
          break;
        }
      }
      if ((spec.type == ParamType::kNumber || spec.type == ParamType::kInteger ||
           spec.type == ParamType::kSeconds) &&
          (v.number < spec.min || v.number > spec.max)) {
        return bad("is out of range");
      }
    }
    out.values_.emplace_back(std::string(spec.name), std::move(v));
  }
  return out;
}

const ParamValues::Value& ParamValues::Get(std::string_view name, ParamType type) const {
  for (const auto& [n, v] : values_) {
    if (n == name) {
      TW_CHECK(v.type == type);
      return v;
    }
  }
  std::fprintf(stderr, "rule parameter \"%.*s\" is not declared\n", static_cast<int>(name.size()),
               name.data());
  std::abort();
}

double ParamValues::Number(std::string_view name) const {
  return Get(name, ParamType::kNumber).number;
}
int64_t ParamValues::Integer(std::string_view name) const {
  return static_cast<int64_t>(Get(name, ParamType::kInteger).number);
}
bool ParamValues::Bool(std::string_view name) const { return Get(name, ParamType::kBool).flag; }
const std::string& ParamValues::String(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name && v.type == ParamType::kRegex) return v.text;
  }
  return Get(name, ParamType::kString).text;
}
double ParamValues::Seconds(std::string_view name) const {
  return Get(name, ParamType::kSeconds).number;
}
bool ParamValues::Has(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v.has;
  }
  return false;
}

std::vector<std::string> ParamValues::Describe() const {
  std::vector<std::string> out;
  for (const auto& [name, v] : values_) {
    if (!v.has) continue;
    switch (v.type) {
      case ParamType::kBool: out.push_back(name + "=" + (v.flag ? "true" : "false")); break;
      case ParamType::kString:
      case ParamType::kRegex: out.push_back(name + "=" + v.text); break;
      case ParamType::kSeconds: out.push_back(name + "=" + absl::StrFormat("%gs", v.number)); break;
      default: out.push_back(name + "=" + absl::StrFormat("%g", v.number)); break;
    }
  }
  return out;
}

}  // namespace trainwatch::rules
