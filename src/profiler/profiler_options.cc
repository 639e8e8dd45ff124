#include "profiler/profiler_options.h"

#include <cctype>
#include <string>

#include "absl/strings/str_format.h"
#include "util/time_parse.h"

namespace trainwatch::profiler {
namespace {

constexpr char kAllowedText[] = "100ms, 200ms, 500ms, 1s, 5s, 1m or off";

bool Allowed(int64_t ms) {
  for (int64_t a : kAllowedIntervalsMs) {
    if (a == ms) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateProfileInterval(int64_t interval_ms) {
  if (Allowed(interval_ms)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "profile interval %d ms: want one of 100, 200, 500, 1000, 5000, 60000 ms (SageMaker's "
      "ProfilingIntervalInMilliseconds values)",
      interval_ms));
}

absl::StatusOr<int64_t> ParseProfileInterval(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "off") return 0;
  absl::StatusOr<int64_t> ms = util::ParseDurationMs(text);
  if (!ms.ok() || !Allowed(*ms)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--profile-interval \"%s\": want %s (SageMaker's profiling intervals)",
                        std::string(text), kAllowedText));
  }
  return *ms;
}

}  // namespace trainwatch::profiler
