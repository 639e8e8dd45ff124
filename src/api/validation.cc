#include "api/validation.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/errors.h"

namespace trainwatch::api {
namespace {

std::string ShowValue(const nlohmann::json* value) {
  if (value == nullptr || value->is_null()) return "null";
  std::string text = value->is_string()
                         ? value->get<std::string>()
                         : value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return absl::StrFormat("'%s'", text);
}

}  // namespace

void ValidationErrors::Add(std::string_view path, const nlohmann::json* value,
                           std::string_view constraint) {
  items_.push_back(absl::StrFormat("Value %s at '%s' failed to satisfy constraint: %s",
                                   ShowValue(value), path, constraint));
}

void ValidationErrors::NotNull(std::string_view path) {
  Add(path, nullptr, "Member must not be null");
}

void ValidationErrors::MaxLength(std::string_view path, const nlohmann::json& value, int64_t n) {
  Add(path, &value, absl::StrFormat("Member must have length less than or equal to %d", n));
}

void ValidationErrors::MinLength(std::string_view path, const nlohmann::json& value, int64_t n) {
  Add(path, &value, absl::StrFormat("Member must have length greater than or equal to %d", n));
}

void ValidationErrors::MinValue(std::string_view path, const nlohmann::json& value, int64_t n) {
  Add(path, &value, absl::StrFormat("Member must have value greater than or equal to %d", n));
}

void ValidationErrors::MaxValue(std::string_view path, const nlohmann::json& value, int64_t n) {
  Add(path, &value, absl::StrFormat("Member must have value less than or equal to %d", n));
}

void ValidationErrors::Pattern(std::string_view path, const nlohmann::json& value,
                               std::string_view pattern) {
  Add(path, &value,
      absl::StrFormat("Member must satisfy regular expression pattern: %s", pattern));
}

void ValidationErrors::Enum(std::string_view path, const nlohmann::json& value,
                            const std::vector<std::string_view>& allowed) {
  std::string list;
  for (std::string_view a : allowed) {
    if (!list.empty()) list += ", ";
    list += a;
  }
  Add(path, &value, absl::StrFormat("Member must satisfy enum value set: [%s]", list));
}

void ValidationErrors::Free(std::string message) { items_.push_back(std::move(message)); }

std::string ValidationErrors::Message() const {
  constexpr size_t kMaxListed = 20;
  std::vector<std::string> listed(items_.begin(),
                                  items_.begin() + std::min(items_.size(), kMaxListed));
  if (items_.size() > kMaxListed) {
    listed.push_back(absl::StrFormat("and %d more", items_.size() - kMaxListed));
  }
  return absl::StrFormat("%d validation error%s detected: %s", items_.size(),
                         items_.size() == 1 ? "" : "s", absl::StrJoin(listed, "; "));
}

absl::Status ValidationErrors::ToStatus(std::string_view code) const {
  if (items_.empty()) return absl::OkStatus();
  return AwsStatus(code, Message());
}

std::optional<std::string> FieldReader::String(const Node& node, bool required, int64_t min_len,
                                               int64_t max_len,
                                               bool (*pattern_ok)(std::string_view),
                                               std::string_view pattern_text) {
  if (!node.present()) {
    if (required) errors_->NotNull(node.path());
    return std::nullopt;
  }
  if (!node.raw().is_string()) {
    errors_->Add(node.path(), &node.raw(), "Member must be a string");
    return std::nullopt;
  }
  const std::string& s = node.raw().get_ref<const std::string&>();
  if (static_cast<int64_t>(s.size()) < min_len) {
    errors_->MinLength(node.path(), node.raw(), min_len);
    return std::nullopt;
  }
  if (static_cast<int64_t>(s.size()) > max_len) {
    errors_->MaxLength(node.path(), node.raw(), max_len);
    return std::nullopt;
  }
  if (pattern_ok != nullptr && !pattern_ok(s)) {
    errors_->Pattern(node.path(), node.raw(), pattern_text);
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> FieldReader::Enum(const Node& node, bool required,
                                             const std::vector<std::string_view>& allowed) {
  if (!node.present()) {
    if (required) errors_->NotNull(node.path());
    return std::nullopt;
  }
  if (node.raw().is_string()) {
    const std::string& s = node.raw().get_ref<const std::string&>();
    for (std::string_view a : allowed) {
      if (a == s) return s;
    }
  }
  errors_->Enum(node.path(), node.raw(), allowed);
  return std::nullopt;
}

std::optional<int64_t> FieldReader::Int(const Node& node, bool required, int64_t min,
                                        int64_t max) {
  if (!node.present()) {
    if (required) errors_->NotNull(node.path());
    return std::nullopt;
  }
  absl::StatusOr<int64_t> v = node.Int();
  if (!v.ok()) {
    errors_->Add(node.path(), &node.raw(), "Member must be an integer");
    return std::nullopt;
  }
  if (*v < min) {
    errors_->MinValue(node.path(), node.raw(), min);
    return std::nullopt;
  }
  if (*v > max) {
    errors_->MaxValue(node.path(), node.raw(), max);
    return std::nullopt;
  }
  return *v;
}

std::optional<bool> FieldReader::Bool(const Node& node) {
  if (!node.present()) return std::nullopt;
  absl::StatusOr<bool> v = node.Bool();
  if (!v.ok()) {
    errors_->Add(node.path(), &node.raw(), "Member must be a boolean");
    return std::nullopt;
  }
  return *v;
}

std::optional<int64_t> FieldReader::TimestampMs(const Node& node) {
  if (!node.present()) return std::nullopt;
  absl::StatusOr<int64_t> v = node.TimestampMs();
  if (!v.ok()) {
    errors_->Add(node.path(), &node.raw(), "Member must be a timestamp");
    return std::nullopt;
  }
  return *v;
}

std::optional<std::vector<Node>> FieldReader::List(const Node& node, bool required, int64_t min,
                                                   int64_t max) {
  if (!node.present()) {
    if (required) errors_->NotNull(node.path());
    return std::nullopt;
  }
  absl::StatusOr<std::vector<Node>> items = node.List();
  if (!items.ok()) {
    errors_->Add(node.path(), &node.raw(), "Member must be a list");
    return std::nullopt;
  }
  if (static_cast<int64_t>(items->size()) < min) {
    errors_->MinLength(node.path(), node.raw(), min);
    return std::nullopt;
  }
  if (static_cast<int64_t>(items->size()) > max) {
    errors_->MaxLength(node.path(), node.raw(), max);
    return std::nullopt;
  }
  return *std::move(items);
}

std::optional<std::map<std::string, std::string>> FieldReader::Map(const Node& node,
                                                                   int64_t max_entries,
                                                                   int64_t max_key,
                                                                   int64_t max_value) {
  if (!node.present()) return std::nullopt;
  absl::StatusOr<std::map<std::string, std::string>> map = node.StringMap();
  if (!map.ok()) {
    errors_->Add(node.path(), &node.raw(), "Member must be a map of strings to strings");
    return std::nullopt;
  }
  if (static_cast<int64_t>(map->size()) > max_entries) {
    errors_->MaxLength(node.path(), node.raw(), max_entries);
    return std::nullopt;
  }
  bool ok = true;
  for (const auto& [k, v] : *map) {
    if (static_cast<int64_t>(k.size()) > max_key || k.empty()) {
      nlohmann::json key = k;
      errors_->Add(node.path() + ".key", &key,
                   k.empty() ? "Member must have length greater than or equal to 1"
                             : absl::StrFormat("Member must have length less than or equal to %d",
                                               max_key));
      ok = false;
    }
    if (static_cast<int64_t>(v.size()) > max_value) {
      nlohmann::json value = v;
      errors_->MaxLength(node.path() + ".value", value, max_value);
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return *std::move(map);
}

}  // namespace trainwatch::api
