#include "api/wire_time.h"

#include "util/time_parse.h"

namespace trainwatch::api {

std::string FormatIsoMillis(int64_t t_ms) {
  std::string s = util::FormatIso8601Ms(t_ms);
  if (s.find('.') == std::string::npos && !s.empty() && s.back() == 'Z') {
    s.insert(s.size() - 1, ".000");
  }
  return s;
}

}  // namespace trainwatch::api
