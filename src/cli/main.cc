// trainwatch: watch machine-learning training jobs. See README.md.
#include <cstdio>

#include "CLI/CLI.hpp"
#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace trainwatch::cli;
  CLI::App root{
      "trainwatch: run a training job, keep its logs, turn its log lines into metrics live,\n"
      "profile the machine underneath, and answer questions about all of it."};
  root.require_subcommand(1);
  root.footer(
      "Examples:\n"
      "  trainwatch run --name mnist-7 --metric 'train:loss=loss: ([0-9.eE+-]+)' -- python3 "
      "train.py\n"
      "  trainwatch describe mnist-7\n"
      "  trainwatch <command> --help");
  GlobalOptions options;
  int exit_code = 0;
  RegisterVersionCommand(root, &options, &exit_code);
  RegisterExtractCommand(root, &options, &exit_code);
  RegisterRunCommand(root, &options, &exit_code);
  RegisterImportCommand(root, &options, &exit_code);
  RegisterDescribeCommand(root, &options, &exit_code);
  RegisterJobsCommand(root, &options, &exit_code);
  RegisterLogsCommand(root, &options, &exit_code);
  RegisterMetricsCommand(root, &options, &exit_code);
  RegisterAdminCommand(root, &options, &exit_code);
  RegisterArchiveCommand(root, &options, &exit_code);
  RegisterStopCommand(root, &options, &exit_code);
  RegisterRulesCommand(root, &options, &exit_code);
  RegisterReportCommand(root, &options, &exit_code);
  RegisterServerCommand(root, &options, &exit_code);
  // CLI11 prints footers without a final newline.
  root.footer(root.get_footer() + "\n");
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
    sub->footer(sub->get_footer() + "\n");
  }
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = root.exit(e);
    // CLI11 answers --help with 0; every other parse error is a usage error (2).
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
