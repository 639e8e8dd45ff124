// Validation shared by the CloudWatch metric operations.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"

namespace trainwatch::api::cloudwatch {
namespace {

constexpr size_t kMaxMessages = 20;

bool PrintableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
}

bool HasNonSpace(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c != ' '; });
}

bool NoControl(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
}

std::optional<std::string> ReadString(const Node& node, Problems* problems) {
  absl::StatusOr<std::string> s = node.String();
  if (!s.ok()) {
    problems->Add("InvalidParameterValue", std::string(s.status().message()));
    return std::nullopt;
  }
  return *std::move(s);
}

}  // namespace

absl::Status Problems::ToStatus() const {
  if (items.empty()) return absl::OkStatus();
  std::vector<std::string> messages;
  for (size_t i = 0; i < items.size() && i < kMaxMessages; ++i) messages.push_back(items[i].second);
  if (items.size() > kMaxMessages) {
    messages.push_back(absl::StrFormat("(and %d more problems)", items.size() - kMaxMessages));
  }
  return AwsStatus(items.front().first, absl::StrJoin(messages, "\n"));
}

std::optional<std::string> ReadNamespace(const Node& node, bool required, Problems* problems,
                                         bool for_write) {
  if (!node.present()) {
    if (required) problems->Add("MissingParameter", "The parameter Namespace is required.");
    return std::nullopt;
  }
  std::optional<std::string> ns = ReadString(node, problems);
  if (!ns) return std::nullopt;
  if (ns->empty() || ns->size() > model::kMaxNameBytes || !PrintableAscii(*ns) ||
      (*ns)[0] == ':') {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is invalid: a namespace is 1-255 "
                                  "printable ASCII characters and does not start with ':'.",
                                  QuoteValue(*ns), node.path()));
    return std::nullopt;
  }
  if (for_write && ns->rfind("AWS/", 0) == 0) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is invalid: namespaces starting "
                                  "with AWS/ are reserved for AWS services.",
                                  QuoteValue(*ns), node.path()));
    return std::nullopt;
  }
  return ns;
}

std::optional<std::string> ReadMetricName(const Node& node, bool required, Problems* problems) {
  if (!node.present()) {
    if (required) {
      problems->Add("MissingParameter",
                    absl::StrFormat("The parameter %s is required.", node.path()));
    }
    return std::nullopt;
  }
  std::optional<std::string> name = ReadString(node, problems);
  if (!name) return std::nullopt;
  if (name->empty() || name->size() > model::kMaxNameBytes || !NoControl(*name)) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is invalid: a metric name is "
                                  "1-255 characters without control characters.",
                                  QuoteValue(*name), node.path()));
    return std::nullopt;
  }
  return name;
}

std::vector<model::Dimension> ReadDimensions(const Node& node, Problems* problems) {
  std::vector<model::Dimension> dims;
  absl::StatusOr<std::vector<Node>> items = node.List();
  if (!items.ok()) {
    problems->Add("InvalidParameterValue", std::string(items.status().message()));
    return dims;
  }
  if (items->size() > model::kMaxDimensions) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The collection %s must not have a size greater than %d.",
                                  node.path(), model::kMaxDimensions));
    return dims;
  }
  size_t before = problems->items.size();
  for (const Node& item : *items) {
    Node name_node = item["Name"];
    Node value_node = item["Value"];
    if (!name_node.present()) {
      problems->Add("MissingParameter",
                    absl::StrFormat("The parameter %s is required.", name_node.path()));
    }
    if (!value_node.present()) {
      problems->Add("MissingParameter",
                    absl::StrFormat("The parameter %s is required.", value_node.path()));
    }
    if (!name_node.present() || !value_node.present()) continue;
    std::optional<std::string> name = ReadString(name_node, problems);
    std::optional<std::string> value = ReadString(value_node, problems);
    if (!name || !value) continue;
    if (name->empty() || name->size() > model::kMaxNameBytes || !PrintableAscii(*name) ||
        !HasNonSpace(*name) || (*name)[0] == ':') {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The value %s for parameter %s is invalid: a dimension name "
                                    "is 1-255 printable ASCII characters, not all spaces, and "
                                    "does not start with ':'.",
                                    QuoteValue(*name), name_node.path()));
      continue;
    }
    if (value->empty() || value->size() > model::kMaxDimensionValueBytes ||
        !PrintableAscii(*value) || !HasNonSpace(*value)) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The value %s for parameter %s is invalid: a dimension value "
                                    "is 1-1024 printable ASCII characters, not all spaces.",
                                    QuoteValue(*value), value_node.path()));
      continue;
    }
    dims.push_back({*std::move(name), *std::move(value)});
  }
  if (problems->items.size() != before) return {};
  std::sort(dims.begin(), dims.end());
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i].name == dims[i - 1].name) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The collection %s must not contain the dimension name %s "
                                    "more than once.",
                                    node.path(), QuoteValue(dims[i].name)));
      return {};
    }
  }
  return dims;
}

std::optional<std::string> ReadUnit(const Node& node, Problems* problems) {
  if (!node.present()) return std::nullopt;
  std::optional<std::string> unit = ReadString(node, problems);
  if (!unit) return std::nullopt;
  if (!IsStandardUnit(*unit)) {
    problems->Add("InvalidParameterValue",
                  absl::StrFormat("The value %s for parameter %s is not a valid unit; see the "
                                  "StandardUnit values (Seconds, Bytes, Percent, Count, None, ...).",
                                  QuoteValue(*unit), node.path()));
    return std::nullopt;
  }
  return unit;
}

absl::StatusOr<int64_t> ReadTimestampMs(const Node& node) {
  absl::StatusOr<int64_t> t = node.TimestampMs();
  if (!t.ok()) return t;
  int64_t seconds = *t / 1000;
  if (*t % 1000 < 0) --seconds;  // down, also before 1970
  return seconds * 1000;
}

void ReadTimeRange(std::string_view operation, const Node& input, int64_t* start_ms,
                   int64_t* end_ms, Problems* problems) {
  bool ok = true;
  for (auto [name, out] : {std::pair{"StartTime", start_ms}, std::pair{"EndTime", end_ms}}) {
    Node node = input[name];
    if (!node.present()) {
      problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", name));
      ok = false;
      continue;
    }
    absl::StatusOr<int64_t> t = ReadTimestampMs(node);
    if (!t.ok()) {
      problems->Add("InvalidParameterValue", std::string(t.status().message()));
      ok = false;
      continue;
    }
    *out = *t;
  }
  if (!ok || *start_ms < *end_ms) return;
  // Equal times, as AWS words its answer to each operation (docs/api.md):
  // GetMetricData with ValidationError, GetMetricStatistics with
  // InvalidParameterValue.
  if (*start_ms == *end_ms) {
    problems->Add(operation == "GetMetricData" ? "ValidationError" : "InvalidParameterValue",
                  "The parameter StartTime must not equal parameter EndTime.");
    return;
  }
  problems->Add("InvalidParameterValue",
                "The parameter StartTime must be less than the parameter EndTime.");
}

}  // namespace trainwatch::api::cloudwatch
