#include "job/job_name.h"

#include <cctype>
#include <string_view>

#include "absl/strings/str_format.h"
#include "util/time_parse.h"

namespace trainwatch::job {
namespace {

constexpr size_t kMaxBase = 39;  // 39 + 1 + 23 = 63, SageMaker's maximum

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string GenerateJobName(const std::vector<std::string>& command, int64_t now_ms) {
  std::string_view source;
  for (size_t i = 1; i < command.size() && source.empty(); ++i) {
    if (EndsWith(command[i], ".py") || EndsWith(command[i], ".sh")) source = command[i];
  }
  if (source.empty() && !command.empty()) source = command[0];
  source = Basename(source);
  size_t dot = source.rfind('.');
  if (dot != std::string_view::npos && dot > 0) source = source.substr(0, dot);

  std::string base;
  for (char c : source) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      base += c;
    } else if (!base.empty() && base.back() != '-') {
      base += '-';
    }
    if (base.size() >= kMaxBase) break;
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.empty()) base = "job";

  // FormatIso8601Ms gives "2025-01-15T10:30:00Z" or "...00.250Z".
  const int64_t seconds = now_ms >= 0 ? now_ms / 1000 : (now_ms - 999) / 1000;
  const int64_t millis = now_ms - seconds * 1000;
  std::string iso = util::FormatIso8601Ms(seconds * 1000);  // "YYYY-MM-DDTHH:MM:SSZ"
  std::string stamp = iso.substr(0, 10) + "-" + iso.substr(11, 2) + "-" + iso.substr(14, 2) +
                      "-" + iso.substr(17, 2);
  return absl::StrFormat("%s-%s-%03d", base, stamp, millis);
}

}  // namespace trainwatch::job
