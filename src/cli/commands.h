#pragma once
// The subcommands of the `trainwatch` binary. Each lives in its own
// <name>_command.cc and registers itself on the root CLI::App; its callback
// stores the process exit status in `*exit_code`.
//
// Exit status conventions: 0 success; 1 the operation failed (the job failed,
// the query found nothing that was asked for); 2 usage or input error (bad
// flag, bad definition, unknown job, job exists, data folder held by another
// writer). `run` exits with the training command's own status (128+signal if
// killed).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/job_record.h"

namespace trainwatch::cli {

struct GlobalOptions {
  std::string data_dir;  // --data; resolved with app::ResolveDataDir
};

// Adds "--data DIR" to a subcommand.
void AddDataOption(CLI::App* cmd, GlobalOptions* options);
// The data folder the user means (--data, $TRAINWATCH_DATA, the per-user default).
std::string DataDir(const GlobalOptions& options);

// Prints "trainwatch: error: <message>" on stderr and returns `exit_code`.
int ReportError(const absl::Status& status, int exit_code = 2);

// The metric definitions of --definitions FILE (SageMaker's MetricDefinitions
// JSON) and of each --metric 'NAME=REGEX', in that order; errors name the file
// or the flag and say what to change.
absl::StatusOr<std::vector<model::MetricDefinition>> MetricDefinitionsOf(
    const std::string& definitions_file, const std::vector<std::string>& metric_flags);

// util::ParseTimeMs of a time flag's value; an error names the flag.
absl::StatusOr<int64_t> ParseTimeFlag(std::string_view flag, const std::string& text,
                                      int64_t now_ms);
// "--start must be before --end", with both times; a bound not given is
// named by its default (`default_start`, `default_end`: "the job's end").
absl::Status RangeOutOfOrder(int64_t start_ms, int64_t end_ms, bool start_given,
                             std::string_view default_start, bool end_given,
                             std::string_view default_end);

void RegisterVersionCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterArchiveCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterExtractCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterDescribeCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterJobsCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterLogsCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterStopCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterImportCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterAdminCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterRunCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterMetricsCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterReportCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterRulesCommand(CLI::App& root, GlobalOptions* options, int* exit_code);
void RegisterServerCommand(CLI::App& root, GlobalOptions* options, int* exit_code);

}  // namespace trainwatch::cli
