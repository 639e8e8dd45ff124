#include "query/cursor.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "query/errors.h"

namespace trainwatch::query {
namespace {

constexpr char kMagic[] = {'t', 'w'};
constexpr uint8_t kVersion = 1;
// magic, version, kind, binding hash, checksum.
constexpr size_t kHeaderBytes = 2 + 1 + 1 + 8 + 8;

uint64_t Fnv1a64(std::string_view data, uint64_t hash = 14695981039346656037ull) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

void PutU64(uint64_t v, std::string* out) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetU64(std::string_view s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

// The checksum covers everything but itself.
uint64_t Checksum(std::string_view head, std::string_view position) {
  return Fnv1a64(position, Fnv1a64(head));
}

absl::Status Refused(std::string_view why) {
  return MakeError(ErrorKind::kInvalidCursor, why);
}

}  // namespace

std::string_view CursorKindName(CursorKind kind) {
  switch (kind) {
    case CursorKind::kListMetrics: return "ListMetrics";
    case CursorKind::kMetricData: return "GetMetricData";
    case CursorKind::kLogGroups: return "DescribeLogGroups";
    case CursorKind::kLogStreams: return "DescribeLogStreams";
    case CursorKind::kLogEvents: return "GetLogEvents";
    case CursorKind::kFilteredLogEvents: return "FilterLogEvents";
    case CursorKind::kJobs: return "ListTrainingJobs";
    case CursorKind::kAlarms: return "DescribeAlarms";
    case CursorKind::kAlarmHistory: return "DescribeAlarmHistory";
  }
  return "an unknown listing";
}

CursorBinding& CursorBinding::Add(std::string_view part) {
  text_ += absl::StrFormat("%d:", part.size());
  text_.append(part.data(), part.size());
  return *this;
}

CursorBinding& CursorBinding::Add(int64_t part) { return Add(absl::StrFormat("%d", part)); }

std::string EncodeCursor(CursorKind kind, const CursorBinding& binding,
                         const nlohmann::json& position) {
  std::string raw(kMagic, sizeof(kMagic));
  raw.push_back(static_cast<char>(kVersion));
  raw.push_back(static_cast<char>(kind));
  PutU64(Fnv1a64(binding.text()), &raw);
  const std::string payload =
      position.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  PutU64(Checksum(raw, payload), &raw);
  raw += payload;
  std::string out;
  absl::WebSafeBase64Escape(raw, &out);
  return out;
}

absl::StatusOr<nlohmann::json> DecodeCursor(CursorKind kind, const CursorBinding& binding,
                                            std::string_view text, size_t max_chars) {
  constexpr char kNotOurs[] =
      "it is not a token this trainwatch issued (cut, altered or from elsewhere); pass the "
      "token of the previous response unchanged, or leave it out to start from the first page";
  std::string raw;
  if (text.size() > max_chars ||
      !absl::WebSafeBase64Unescape(absl::string_view(text.data(), text.size()), &raw) ||
      raw.size() < kHeaderBytes || std::memcmp(raw.data(), kMagic, sizeof(kMagic)) != 0) {
    return Refused(kNotOurs);
  }
  const uint8_t version = static_cast<uint8_t>(raw[2]);
  if (version != kVersion) {
    return Refused(absl::StrFormat(
        "it is a token of format version %d, and this trainwatch reads version %d; leave it out "
        "to start from the first page",
        version, kVersion));
  }
  std::string_view view(raw);
  const std::string_view head = view.substr(0, kHeaderBytes - 8);
  const std::string_view payload = view.substr(kHeaderBytes);
  if (GetU64(view.substr(kHeaderBytes - 8)) != Checksum(head, payload)) return Refused(kNotOurs);
  const auto issued_by = static_cast<CursorKind>(static_cast<uint8_t>(raw[3]));
  if (issued_by != kind) {
    return Refused(absl::StrFormat(
        "it is a token of %s, not of %s; pass the token this operation returned",
        CursorKindName(issued_by), CursorKindName(kind)));
  }
  if (GetU64(view.substr(4)) != Fnv1a64(binding.text())) {
    return Refused(
        "it was issued for a request with other parameters; send it with the same parameters "
        "as the request that returned it, or leave it out to start from the first page");
  }
  nlohmann::json position = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (position.is_discarded()) return Refused(kNotOurs);
  return position;
}

}  // namespace trainwatch::query
