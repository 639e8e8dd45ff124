// Fuzz target: splitting must agree with a byte-at-a-time reference whatever
// the read boundaries, and never lose or invent bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/line_splitter.h"
#include "util/check.h"

namespace {

std::vector<std::string> Reference(std::string_view in) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '\n' || c == '\r') {
      out.push_back(cur);
      cur.clear();
      have = false;
      if (c == '\r' && i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      cur.push_back(c);
      have = true;
    }
  }
  if (have) out.push_back(cur);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte chooses the read size, the rest is the stream.
  size_t piece = 1 + data[0] % 17;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainwatch::capture::LineSplitter splitter;
  std::vector<std::string> got;
  auto on_line = [&](std::string_view l) { got.emplace_back(l); };
  for (size_t i = 0; i < in.size(); i += piece) splitter.Feed(in.substr(i, piece), on_line);
  splitter.Finish(on_line);
  TW_CHECK(got == Reference(in));
  return 0;
}
