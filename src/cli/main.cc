// trainwatch: watch machine-learning training jobs. See README.md.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "rules/params.h"

namespace {

// CLI11 gives an option that wants a value the next argument, whatever it is:
// `metrics mnist-7 --metric --all` would look for a metric named "--all". A
// value that is one of the command's own options is a value left out.
// `attached`: the values given as --option=VALUE, which say plainly that
// they are values (`logs --filter=--timestamps` looks for that text).
void CheckNoOptionTookAnOption(const CLI::App& app, const std::set<std::string>& attached) {
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) continue;  // a command's words after "--" are its own
    for (const std::string& value : option->results()) {
      if (value.size() > 1 && value[0] == '-' && !attached.contains(value) &&
          app.get_option_no_throw(value) != nullptr) {
        throw CLI::ValidationError(option->get_name(),
                                   "needs a value, and " + value + " is an option: give the value "
                                   "after " + option->get_name());
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) CheckNoOptionTookAnOption(*sub, attached);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainwatch::cli;
  CLI::App root{
      "trainwatch: run a training job, keep its logs, turn its log lines into metrics live,\n"
      "profile the machine underneath, and answer questions about all of it."};
  // "Usage: trainwatch run ...", however it was called.
  root.name("trainwatch");
  root.require_subcommand(1);
  root.set_version_flag("--version", std::string("trainwatch ") + VersionString());
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
  // Before any command's callback runs (they run the commands).
  std::set<std::string> attached;
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    const std::string_view arg = argv[i];
    const size_t equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string_view::npos) {
      attached.emplace(arg.substr(equals + 1));
    }
  }
  root.parse_complete_callback([&root, &attached] { CheckNoOptionTookAnOption(root, attached); });
  // CLI11 says "A subcommand is required" of a mistyped one.
  // `trainwatch help [COMMAND [SUBCOMMAND...]]`: that command's --help.
  std::vector<char*> help_args;
  if (argc > 1 && std::string(argv[1]) == "help") {
    CLI::App* app = &root;
    for (int i = 2; i < argc; ++i) {
      try {
        app = app->get_subcommand(argv[i]);
      } catch (const CLI::OptionNotFound&) {
        std::vector<std::string> names;
        for (const CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
          names.push_back(sub->get_name());
        }
        std::fprintf(stderr, "trainwatch: help: no command \"%s\"%s%s\n", argv[i],
                     app == &root ? "" : (" under " + app->get_name()).c_str(),
                     names.empty() ? ""
                                   : ("; did you mean \"" +
                                      trainwatch::rules::NearestFirst(argv[i], names).front() +
                                      "\"?")
                                         .c_str());
        return 2;
      }
    }
    static char help_flag[] = "--help";
    help_args.push_back(argv[0]);
    for (int i = 2; i < argc; ++i) help_args.push_back(argv[i]);
    help_args.push_back(help_flag);
    argc = static_cast<int>(help_args.size());
    argv = help_args.data();
  }
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
    }
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::vector<std::string> nearest = trainwatch::rules::NearestFirst(argv[1], names);
      std::fprintf(stderr,
                   "trainwatch: no command \"%s\"; did you mean \"%s\"? Commands: %s "
                   "(trainwatch --help says what each does)\n",
                   argv[1], nearest.front().c_str(), absl::StrJoin(names, ", ").c_str());
      return 2;
    }
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
