#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "app/data_dir.h"
#include "cli/commands.h"
#include "extract/definitions.h"
#include "util/time_parse.h"

namespace trainwatch::cli {

void AddDataOption(CLI::App* cmd, GlobalOptions* options) {
  cmd->add_option("--data", options->data_dir,
                  "data folder (default: $TRAINWATCH_DATA, else ~/.local/share/trainwatch)")
      ->type_name("DIR");
}

std::string DataDir(const GlobalOptions& options) { return app::ResolveDataDir(options.data_dir); }

int ReportError(const absl::Status& status, int exit_code) {
  std::string line = absl::StrFormat("trainwatch: error: %s\n", std::string(status.message()));
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  return exit_code;
}

absl::StatusOr<int64_t> ParseTimeFlag(std::string_view flag, const std::string& text,
                                      int64_t now_ms) {
  absl::StatusOr<int64_t> t = util::ParseTimeMs(text, now_ms);
  if (!t.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", flag, t.status().message()));
  }
  return t;
}

absl::Status RangeOutOfOrder(int64_t start_ms, int64_t end_ms, bool start_given,
                             std::string_view default_start, bool end_given,
                             std::string_view default_end) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s (%s) must be before %s (%s): give an earlier --start or a later --end",
      start_given ? "--start" : default_start, util::FormatIso8601Ms(start_ms),
      end_given ? "--end" : default_end, util::FormatIso8601Ms(end_ms)));
}

absl::StatusOr<std::vector<model::MetricDefinition>> MetricDefinitionsOf(
    const std::string& definitions_file, const std::vector<std::string>& metric_flags) {
  std::vector<model::MetricDefinition> defs;
  if (!definitions_file.empty()) {
    std::ifstream in(definitions_file, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(absl::StrFormat("cannot read --definitions \"%s\": %s",
                                                 definitions_file, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = extract::ParseDefinitionsJson(text.str());
    if (!parsed.ok()) {
      const bool escape = absl::StrContains(parsed.status().message(), "backslash");
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s%s", definitions_file, parsed.status().message(),
          escape ? " (in JSON a regex's backslash is written twice: \"\\\\d\" for \\d)" : ""));
    }
    defs = *std::move(parsed);
  }
  for (const std::string& flag : metric_flags) {
    auto def = extract::ParseMetricFlag(flag);
    if (!def.ok()) return def.status();
    defs.push_back(*std::move(def));
  }
  return defs;
}

}  // namespace trainwatch::cli
