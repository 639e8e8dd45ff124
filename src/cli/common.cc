#include <unistd.h>

#include <string>

#include "absl/strings/str_format.h"
#include "app/data_dir.h"
#include "cli/commands.h"

namespace trainwatch::cli {

void AddDataOption(CLI::App* cmd, GlobalOptions* options) {
  cmd->add_option("--data", options->data_dir,
                  "data folder (default: $TRAINWATCH_DATA, else ~/.local/share/trainwatch)");
}

std::string DataDir(const GlobalOptions& options) { return app::ResolveDataDir(options.data_dir); }

int ReportError(const absl::Status& status, int exit_code) {
  std::string line = absl::StrFormat("trainwatch: error: %s\n", std::string(status.message()));
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  return exit_code;
}

}  // namespace trainwatch::cli
