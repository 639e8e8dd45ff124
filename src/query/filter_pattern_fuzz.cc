// Fuzz target: FilterLogEvents' filter patterns. The input's first line is
// the pattern; the rest is a message it is matched against (and a JSON and a
// space-delimited line besides). Parsing never crashes, and a pattern either
// parses or says "Invalid filter pattern".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "query/filter_pattern.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t newline = input.find('\n');
  std::string_view pattern = input.substr(0, newline);
  std::string_view message = newline == std::string_view::npos ? "" : input.substr(newline + 1);
  auto parsed = trainwatch::query::FilterPattern::Parse(pattern);
  if (!parsed.ok()) {
    TW_CHECK(parsed.status().message().find("Invalid filter pattern") != std::string_view::npos);
    return 0;
  }
  (void)parsed->Matches(message);
  (void)parsed->Matches(R"({"loss": 0.5, "phase": "train", "tags": ["a", {"b": null}], "ok": true})");
  (void)parsed->Matches(R"(2024-05-01 ERROR [rank 3] "out of memory" 17)");
  return 0;
}
