#include "extract/regex.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "extract/text.h"

namespace trainwatch::extract {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

constexpr std::string_view kNoLookaround =
    "RE2, the linear-time engine trainwatch uses, has no lookaround; match the surrounding text "
    "instead and capture only the number, e.g. \"loss: ([0-9.]+)\"";

// Says in words what RE2 refused and what to do.
std::string Explain(const RE2& re, std::string_view pattern) {
  const std::string& arg = re.error_arg();
  switch (re.error_code()) {
    case RE2::ErrorBadPerlOp: {
      size_t at = pattern.find(arg);
      std::string_view rest =
          at == std::string_view::npos ? std::string_view(arg) : pattern.substr(at);
      if (StartsWith(rest, "(?=") || StartsWith(rest, "(?!")) {
        return absl::StrFormat("uses lookahead \"%s...)\": %s", rest.substr(0, 3), kNoLookaround);
      }
      if (StartsWith(rest, "(?<=") || StartsWith(rest, "(?<!")) {
        return absl::StrFormat("uses lookbehind \"%s...)\": %s", rest.substr(0, 4), kNoLookaround);
      }
      if (StartsWith(rest, "(?<")) {
        return "uses a named group \"(?<name>...)\", which this RE2 does not read: write it "
               "\"(?P<name>...)\" (or a plain \"(...)\"; the value is capture group 1)";
      }
      if (StartsWith(rest, "(?>")) {
        return "uses an atomic group \"(?>...)\", which RE2 does not support: use a plain group "
               "\"(?:...)\"; RE2 never backtracks, so it is not needed";
      }
      if (StartsWith(rest, "(?#")) return "uses a comment \"(?#...)\", which RE2 does not support";
      if (StartsWith(rest, "(?(")) {
        return "uses a conditional \"(?(...)...)\", which RE2 does not support";
      }
      return absl::StrFormat("uses \"%s\", which RE2 does not support (RE2 error: %s)", arg,
                             re.error());
    }
    case RE2::ErrorBadEscape:
      if (arg.size() == 2 && arg[0] == '\\' && arg[1] >= '1' && arg[1] <= '9') {
        return absl::StrFormat(
            "uses the backreference \"%s\", which RE2 does not support (no backreferences, to "
            "guarantee linear-time matching); repeat the text to match instead",
            arg);
      }
      if (arg == "\\Z") {
        return "uses \"\\Z\", which RE2 does not support: use \"$\" (or \"\\z\"); a line never "
               "includes its terminator";
      }
      return absl::StrFormat(
          "uses the escape \"%s\", which RE2 does not support (see "
          "https://github.com/google/re2/wiki/Syntax)",
          QuoteForMessage(arg));
    case RE2::ErrorRepeatOp:
      if (arg.size() == 2 && arg[1] == '+') {
        return absl::StrFormat(
            "uses the possessive quantifier \"%s\", which RE2 does not support: drop the second "
            "'+' (RE2 never backtracks, so it is not needed)",
            arg);
      }
      break;
    default:
      break;
  }
  return absl::StrFormat("does not compile in RE2: %s", QuoteForMessage(re.error()));
}

}  // namespace

RE2::Options MetricRegexOptions() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingUTF8);
  options.set_case_sensitive(true);
  options.set_longest_match(false);
  options.set_log_errors(false);
  return options;
}

absl::StatusOr<std::unique_ptr<RE2>> CompileMetricRegex(std::string_view pattern) {
  auto re =
      std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), MetricRegexOptions());
  if (!re->ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("regex \"%s\" %s", QuoteForMessage(pattern), Explain(*re, pattern)));
  }
  return re;
}

}  // namespace trainwatch::extract
