#include "api/form.h"

#include <map>
#include <optional>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace trainwatch::api {
namespace {

constexpr size_t kMaxDepth = 32;
constexpr size_t kMaxListIndex = 1000000;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> Unescape(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%') {
      int hi = i + 1 < in.size() ? HexValue(in[i + 1]) : -1;
      int lo = i + 2 < in.size() ? HexValue(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "malformed form body: \"%s\" at byte %d is not a %%XX escape; the body must be "
            "application/x-www-form-urlencoded",
            std::string(in.substr(i, 3)), i));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct FormNode {
  std::optional<std::string> value;
  std::map<std::string, FormNode, std::less<>> children;
};

// "1", "2", ... (no sign, no leading zero) -> index; 0 otherwise.
size_t ListIndex(std::string_view s) {
  if (s.empty() || s.size() > 7 || s[0] == '0') return 0;
  size_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n <= kMaxListIndex ? n : 0;
}

absl::StatusOr<nlohmann::json> Convert(const FormNode& node, const std::string& path);

// Children "1".."n" of a member/entry node, in order; InvalidArgument on gaps.
absl::StatusOr<std::vector<const FormNode*>> Indexed(const FormNode& node,
                                                     const std::string& path) {
  std::vector<const FormNode*> items(node.children.size(), nullptr);
  for (const auto& [key, child] : node.children) {
    size_t index = ListIndex(key);
    if (index == 0 || index > items.size() || items[index - 1] != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "parameter %s.%s: list indices must run 1, 2, 3 ... without gaps (found index \"%s\" "
          "among %d items)",
          path, key, key, node.children.size()));
    }
    items[index - 1] = &child;
  }
  if (node.value) {
    return absl::InvalidArgumentError(
        absl::StrFormat("parameter %s is given both as a value and as a list", path));
  }
  return items;
}

absl::StatusOr<nlohmann::json> Convert(const FormNode& node, const std::string& path) {
  if (node.children.empty()) return nlohmann::json(node.value.value_or(""));
  if (node.value) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s is given both as a value and as a structure or list", path));
  }
  auto only = [&](std::string_view key) {
    return node.children.size() == 1 && node.children.begin()->first == key;
  };
  if (node.children.count("member") && !only("member")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s mixes list items (%s.member.N) with other members", path, path));
  }
  if (only("member")) {
    std::string list_path = path + ".member";
    TW_ASSIGN_OR_RETURN(std::vector<const FormNode*> items,
                        Indexed(node.children.begin()->second, list_path));
    nlohmann::json array = nlohmann::json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      TW_ASSIGN_OR_RETURN(nlohmann::json item,
                          Convert(*items[i], absl::StrFormat("%s.%d", list_path, i + 1)));
      array.push_back(std::move(item));
    }
    return array;
  }
  if (only("entry")) {
    std::string map_path = path + ".entry";
    TW_ASSIGN_OR_RETURN(std::vector<const FormNode*> items,
                        Indexed(node.children.begin()->second, map_path));
    nlohmann::json object = nlohmann::json::object();
    for (size_t i = 0; i < items.size(); ++i) {
      std::string entry_path = absl::StrFormat("%s.%d", map_path, i + 1);
      const FormNode& entry = *items[i];
      auto key = entry.children.find("key");
      auto value = entry.children.find("value");
      if (key == entry.children.end() || !key->second.children.empty() ||
          !key->second.value) {
        return absl::InvalidArgumentError(
            absl::StrFormat("map entry %s has no %s.key", entry_path, entry_path));
      }
      if (object.contains(*key->second.value)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "map %s has the key \"%s\" twice", path, *key->second.value));
      }
      nlohmann::json v = "";
      if (value != entry.children.end()) {
        TW_ASSIGN_OR_RETURN(v, Convert(value->second, entry_path + ".value"));
      }
      object[*key->second.value] = std::move(v);
    }
    return object;
  }
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, child] : node.children) {
    TW_ASSIGN_OR_RETURN(nlohmann::json v, Convert(child, path.empty() ? key : path + "." + key));
    object[key] = std::move(v);
  }
  return object;
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeFormPairs(
    std::string_view body) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view item = body.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view raw_key = item.substr(0, eq);
    std::string_view raw_value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    TW_ASSIGN_OR_RETURN(std::string key, Unescape(raw_key));
    TW_ASSIGN_OR_RETURN(std::string value, Unescape(raw_value));
    pairs.emplace_back(std::move(key), std::move(value));
  }
  return pairs;
}

absl::StatusOr<nlohmann::json> DecodeForm(std::string_view body) {
  TW_ASSIGN_OR_RETURN(auto pairs, DecodeFormPairs(body));
  FormNode root;
  for (auto& [key, value] : pairs) {
    FormNode* node = &root;
    size_t depth = 0;
    size_t start = 0;
    while (true) {
      size_t dot = key.find('.', start);
      std::string_view segment = std::string_view(key).substr(
          start, dot == std::string::npos ? std::string::npos : dot - start);
      if (segment.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "parameter name \"%s\" has an empty part; names look like "
            "MetricData.member.1.MetricName",
            key));
      }
      if (++depth > kMaxDepth) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "parameter name \"%.100s...\" is nested deeper than %d levels", key, kMaxDepth));
      }
      auto it = node->children.find(segment);
      if (it == node->children.end()) {
        it = node->children.emplace(std::string(segment), FormNode{}).first;
      }
      node = &it->second;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (node->value) {
      return absl::InvalidArgumentError(
          absl::StrFormat("parameter %s is given more than once", key));
    }
    node->value = std::move(value);
  }
  if (root.children.empty()) return nlohmann::json::object();
  return Convert(root, "");
}

}  // namespace trainwatch::api
