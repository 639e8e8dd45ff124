#include "query/errors.h"

#include "absl/strings/cord.h"

namespace trainwatch::query {
namespace {

constexpr char kPayloadUrl[] = "trainwatch.query.ErrorKind";

constexpr std::pair<ErrorKind, std::string_view> kNames[] = {
    {ErrorKind::kInvalidValue, "InvalidValue"},
    {ErrorKind::kInvalidCombination, "InvalidCombination"},
    {ErrorKind::kMissing, "Missing"},
    {ErrorKind::kInvalidQuery, "InvalidQuery"},
    {ErrorKind::kInvalidCursor, "InvalidCursor"},
};

}  // namespace

std::string_view ErrorKindName(ErrorKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "Unknown";
}

absl::Status MakeError(ErrorKind kind, std::string_view message) {
  absl::Status s = absl::InvalidArgumentError(std::string(message));
  s.SetPayload(kPayloadUrl, absl::Cord(std::string(ErrorKindName(kind))));
  return s;
}

std::optional<ErrorKind> GetErrorKind(const absl::Status& status) {
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload) return std::nullopt;
  std::string name(*payload);
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

}  // namespace trainwatch::query
