#include "cli/commands.h"

namespace trainwatch::cli {

void AddDataOption(CLI::App* cmd, GlobalOptions* options) {
  cmd->add_option("--data", options->data_dir,
                  "data folder (default: $TRAINWATCH_DATA, else ~/.local/share/trainwatch)");
}

}  // namespace trainwatch::cli
