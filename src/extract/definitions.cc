#include "extract/definitions.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "extract/regex.h"
#include "extract/text.h"
#include "nlohmann/json.hpp"

namespace trainwatch::extract {
namespace {

using nlohmann::json;

std::string Position(size_t index) { return absl::StrFormat("#%d", index + 1); }

constexpr std::string_view kShape = "{\"Name\": ..., \"Regex\": ...}";

// The member `key` of `obj` as a string; `label` names the definition.
absl::StatusOr<std::string> StringMember(const json& obj, const char* key, const char* lower_key,
                                         const std::string& label) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    std::string hint;
    if (obj.contains(lower_key)) {
      hint = absl::StrFormat(" (keys are case-sensitive: \"%s\", not \"%s\")", key, lower_key);
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "metric definition %s: no \"%s\"%s; each definition is %s", label, key, hint, kShape));
  }
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "metric definition %s: \"%s\" must be a string, got %s", label, key, it->type_name()));
  }
  return it->get<std::string>();
}

}  // namespace

std::string DefinitionLabel(const std::vector<model::MetricDefinition>& defs, size_t index) {
  const std::string& name = defs[index].name;
  if (name.empty()) return Position(index);
  return absl::StrFormat("\"%s\"", QuoteForMessage(name, 80));
}

absl::StatusOr<std::vector<model::MetricDefinition>> ParseDefinitionsJson(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    size_t close = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
      what = what.substr(close + 2);
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "metric definitions are not valid JSON (%s); expected a list of %s objects", what, kShape));
  }
  const json* list = &doc;
  if (doc.is_object()) {
    if (doc.contains("MetricDefinitions")) {
      list = &doc["MetricDefinitions"];
    } else if (doc.contains("AlgorithmSpecification") &&
               doc["AlgorithmSpecification"].is_object() &&
               doc["AlgorithmSpecification"].contains("MetricDefinitions")) {
      list = &doc["AlgorithmSpecification"]["MetricDefinitions"];
    }
  }
  if (!list->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("metric definitions: expected a JSON list of %s objects, got %s", kShape,
                        list == &doc && doc.is_object() ? "an object without \"MetricDefinitions\""
                                                        : std::string("a ") + list->type_name()));
  }
  std::vector<model::MetricDefinition> defs;
  defs.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    if (!item.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metric definition %s: expected an object %s, got %s", Position(i),
                          kShape, item.type_name()));
    }
    model::MetricDefinition def;
    auto name = StringMember(item, "Name", "name", Position(i));
    if (!name.ok()) return name.status();
    def.name = *std::move(name);
    std::string label =
        def.name.empty() ? Position(i) : absl::StrFormat("\"%s\"", QuoteForMessage(def.name, 80));
    auto regex = StringMember(item, "Regex", "regex", label);
    if (!regex.ok()) return regex.status();
    def.regex = *std::move(regex);
    defs.push_back(std::move(def));
  }
  return defs;
}

absl::StatusOr<model::MetricDefinition> ParseMetricFlag(std::string_view name_eq_regex) {
  size_t eq = name_eq_regex.find('=');
  if (eq == std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--metric \"%s\": expected NAME=REGEX, e.g. --metric 'train:loss=loss: ([0-9.]+)'",
        QuoteForMessage(name_eq_regex)));
  }
  model::MetricDefinition def;
  def.name = std::string(name_eq_regex.substr(0, eq));
  def.regex = std::string(name_eq_regex.substr(eq + 1));
  return def;
}

absl::Status ValidateDefinitions(const std::vector<model::MetricDefinition>& defs) {
  if (defs.size() > kMaxDefinitions) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d metric definitions; at most %d are allowed (SageMaker's limit per training job)",
        defs.size(), kMaxDefinitions));
  }
  std::vector<std::string> problems;
  std::map<std::string_view, size_t> first_with_name;
  for (size_t i = 0; i < defs.size(); ++i) {
    const model::MetricDefinition& def = defs[i];
    std::string label = DefinitionLabel(defs, i);
    auto problem = [&](const std::string& what) {
      problems.push_back(absl::StrFormat("metric definition %s: %s", label, what));
    };
    size_t name_chars = CountCharacters(def.name);
    if (name_chars == 0) {
      problem("empty \"Name\"; give each definition a name of 1 to 255 characters");
    } else if (name_chars > kMaxDefinitionNameChars) {
      problem(absl::StrFormat("\"Name\" is %d characters long; at most %d are allowed", name_chars,
                              kMaxDefinitionNameChars));
    } else if (auto [it, inserted] = first_with_name.emplace(def.name, i); !inserted) {
      problem(
          absl::StrFormat("the name is used twice (definitions #%d and #%d); names must be "
                          "unique",
                          it->second + 1, i + 1));
    }
    size_t regex_chars = CountCharacters(def.regex);
    if (regex_chars == 0) {
      problem(
          "empty \"Regex\"; give a regex with one capture group around the value, e.g. "
          "\"loss: ([0-9.]+)\"");
      continue;
    }
    if (regex_chars > kMaxDefinitionRegexChars) {
      problem(absl::StrFormat("\"Regex\" is %d characters long; at most %d are allowed",
                              regex_chars, kMaxDefinitionRegexChars));
      continue;
    }
    auto re = CompileMetricRegex(def.regex);
    if (!re.ok()) {
      problem(std::string(re.status().message()));
      continue;
    }
    if ((*re)->NumberOfCapturingGroups() < 1) {
      problem(
          absl::StrFormat("regex \"%s\" has no capture group; put the value in parentheses, e.g. "
                          "\"loss: ([0-9.]+)\" (the value is capture group 1)",
                          QuoteForMessage(def.regex)));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

}  // namespace trainwatch::extract
