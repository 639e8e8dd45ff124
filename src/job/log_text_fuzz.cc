// Fuzz target for the text the runner makes from captured bytes: log event splitting
// (pieces within the limit, nothing lost or invented), the cleaned lines of
// FailureReason (valid UTF-8 without control characters, bounded) and UTF-8 truncation.
#include <cstdint>
#include <string>
#include <string_view>

#include "job/failure_reason.h"
#include "job/lifecycle.h"
#include "job/telemetry_writer.h"
#include "util/check.h"

namespace {

// Strict UTF-8 check (no overlongs, surrogates or code points above U+10FFFF).
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                      : c >= 0xF0 && c <= 0xF4      ? 4
                                                    : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    unsigned char d = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d >= 0xA0) || (c == 0xF0 && d < 0x90) ||
        (c == 0xF4 && d >= 0x90)) {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t max_bytes = size == 0 ? 4 : 4 + data[0] % 29;

  std::string joined;
  for (std::string_view piece : trainwatch::job::SplitLogMessage(input, max_bytes)) {
    TW_CHECK(piece.size() <= max_bytes);
    joined.append(piece);
  }
  TW_CHECK(joined == input);

  std::string clean = trainwatch::job::CleanLine(input);
  TW_CHECK(clean.size() <= 1024);
  TW_CHECK(ValidUtf8(clean));
  for (char c : clean) TW_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F);

  std::string cut = trainwatch::job::TruncateUtf8(clean, max_bytes);
  TW_CHECK(cut.size() <= max_bytes);
  TW_CHECK(ValidUtf8(cut));
  return 0;
}
