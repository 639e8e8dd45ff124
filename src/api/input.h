#pragma once
// Node: a typed, path-aware view of a decoded request (query form tree or
// JSON body), so that each operation decodes its members once for both wire
// protocols.
//
// Query leaves are strings ("60", "true", "2025-01-15T12:00:01Z"); JSON leaves
// are typed (60, true, 1736942401). Node accepts each protocol's spelling:
//   - integers: decimal string / integral JSON number;
//   - doubles: strtod syntax incl. nan/inf (query) / number or the strings
//     "NaN", "Infinity", "-Infinity" (JSON); validation rejects non-finite
//     values with the operation's own message;
//   - timestamps: ISO 8601 with 0-9 fractional digits and Z or an offset
//     (both) / epoch seconds as integer or fraction (JSON);
//   - lists: "member.N" / arrays; a query key with an empty value is an empty list.
// Errors are InvalidArgument quoting the value and naming the parameter by
// its path, which each service maps to its own code.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {

enum class Syntax { kQuery, kJson };

// How parameter paths are spelled in messages:
//   kQuery:     MetricData.member.1.Value (CloudWatch, for both protocols, as AWS does)
//   kCamelJson: algorithmSpecification.metricDefinitions.1.member.regex (SageMaker, Logs)
enum class PathStyle { kQuery, kCamelJson };

class Node {
 public:
  // The root of a request; `root` must outlive every Node derived from it.
  Node(const nlohmann::json& root, Syntax syntax, PathStyle style)
      : value_(&root), syntax_(syntax), style_(style) {}

  bool present() const { return value_ != nullptr && !value_->is_null(); }
  const std::string& path() const { return path_; }
  Syntax syntax() const { return syntax_; }

  // A structure member (absent if this is not a structure or has no such member).
  Node operator[](std::string_view member) const;

  // Requires present(). Absent-list handling is the caller's: List() of an
  // absent node is empty.
  absl::StatusOr<std::vector<Node>> List() const;
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<double> Double() const;
  absl::StatusOr<int64_t> Int() const;
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<int64_t> TimestampMs() const;
  // A map of string -> string (JSON object / query entry.N.key/value).
  absl::StatusOr<std::map<std::string, std::string>> StringMap() const;
  // InvalidArgument unless this is a structure.
  absl::Status ExpectStructure() const;

  // The raw JSON value (for echoing a member back); requires present().
  const nlohmann::json& raw() const { return *value_; }

  // The path a member would have (for messages about absent members).
  std::string MemberPath(std::string_view member) const;

 private:
  Node(const nlohmann::json* value, Syntax syntax, PathStyle style, std::string path)
      : value_(value), syntax_(syntax), style_(style), path_(std::move(path)) {}
  absl::Status TypeError(std::string_view expected) const;

  const nlohmann::json* value_;
  Syntax syntax_;
  PathStyle style_;
  std::string path_;
};

// Strict ISO 8601 date-time as AWS clients send it: YYYY-MM-DDThh:mm:ss with
// 0-9 fractional digits (truncated to ms) and "Z" or "+hh:mm"/"+hhmm".
// nullopt if `text` is anything else.
std::optional<int64_t> ParseIso8601Ms(std::string_view text);

// "train_loss" -> "'train_loss'" with the value shortened to 100 bytes, for
// messages that quote input.
std::string QuoteValue(std::string_view value);

// "TrainingJobName" -> "trainingJobName" (AWS's spelling of member paths).
std::string LowerCamel(std::string_view name);

}  // namespace trainwatch::api
