#pragma once
// AWS's generic validation message (SageMaker, and CloudWatch Logs' input
// checks), spec/aws-api.md §7:
//   "2 validation errors detected: Value 'my_job' at 'trainingJobName' failed
//    to satisfy constraint: Member must satisfy regular expression pattern:
//    ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; Value null at 'roleArn' failed to
//    satisfy constraint: Member must not be null"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <map>
#include <optional>

#include "absl/status/status.h"
#include "api/input.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {

class ValidationErrors {
 public:
  // Value <value> at '<path>' failed to satisfy constraint: <constraint>
  void Add(std::string_view path, const nlohmann::json* value, std::string_view constraint);
  // Shortcuts for AWS's constraint texts.
  void NotNull(std::string_view path);
  void MaxLength(std::string_view path, const nlohmann::json& value, int64_t n);
  void MinLength(std::string_view path, const nlohmann::json& value, int64_t n);
  void MinValue(std::string_view path, const nlohmann::json& value, int64_t n);
  void MaxValue(std::string_view path, const nlohmann::json& value, int64_t n);
  void Pattern(std::string_view path, const nlohmann::json& value, std::string_view pattern);
  void Enum(std::string_view path, const nlohmann::json& value,
            const std::vector<std::string_view>& allowed);
  // A free-text problem, appended as is.
  void Free(std::string message);

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // "N validation error(s) detected: a; b" (at most 20 listed).
  std::string Message() const;
  // AwsStatus(code, Message()), or OK when empty.
  absl::Status ToStatus(std::string_view code) const;

 private:
  std::vector<std::string> items_;
};

// Reads members of a JSON request, recording problems in AWS's generic format
// instead of failing at the first (paths come from the Node, PathStyle::kCamelJson).
class FieldReader {
 public:
  explicit FieldReader(ValidationErrors* errors) : errors_(errors) {}

  // nullopt when absent (recorded if `required`) or invalid (recorded).
  // `pattern_ok` checks the value; `pattern_text` is quoted in the message.
  std::optional<std::string> String(const Node& node, bool required, int64_t min_len,
                                    int64_t max_len, bool (*pattern_ok)(std::string_view) = nullptr,
                                    std::string_view pattern_text = {});
  std::optional<std::string> Enum(const Node& node, bool required,
                                  const std::vector<std::string_view>& allowed);
  std::optional<int64_t> Int(const Node& node, bool required, int64_t min, int64_t max);
  std::optional<bool> Bool(const Node& node);
  std::optional<int64_t> TimestampMs(const Node& node);
  // A list of `min`-`max` items (absent: nullopt, recorded if required).
  std::optional<std::vector<Node>> List(const Node& node, bool required, int64_t min,
                                        int64_t max);
  // A string map of at most `max_entries` with key/value length limits.
  std::optional<std::map<std::string, std::string>> Map(const Node& node, int64_t max_entries,
                                                        int64_t max_key, int64_t max_value);

  ValidationErrors& errors() { return *errors_; }

 private:
  ValidationErrors* errors_;
};

}  // namespace trainwatch::api
