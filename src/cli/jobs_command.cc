// trainwatch jobs: the training jobs of a data folder, newest first.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "query/jobs.h"
#include "query/store_reader.h"

namespace trainwatch::cli {
namespace {

struct JobsFlags {
  std::string status;
  std::string name_contains;
  int limit = 20;
};

int RunJobs(const JobsFlags& flags, const GlobalOptions& options) {
  auto db = app::OpenForRead(DataDir(options));
  if (!db.ok()) return ReportError(db.status());
  query::ListJobsRequest request;
  if (!flags.status.empty()) {
    request.status = model::ParseJobStatus(flags.status);
    if (!request.status) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--status \"%s\": want InProgress, Completed, Failed, Stopping or Stopped",
          flags.status)));
    }
  }
  if (flags.limit < 1) {
    return ReportError(absl::InvalidArgumentError("--limit must be at least 1"));
  }
  // Jobs whose runner died are recorded as Failed before the status filter
  // applies, so the filter and the table show them as they are.
  auto all = query::StoreReader(**db).ListJobs();
  if (!all.ok()) return ReportError(all.status(), 1);
  for (model::JobRecord& job : *all) app::ReconcileJob(**db, &job);
  request.name_contains = flags.name_contains;
  request.sort_by = query::JobSortBy::kCreationTime;
  request.descending = true;
  request.unbounded = true;
  auto listed = query::ListJobs(*std::move(all), request);
  if (!listed.ok()) return ReportError(listed.status(), 1);
  std::vector<model::JobRecord> jobs = std::move(listed->jobs);
  if (static_cast<int>(jobs.size()) > flags.limit) jobs.resize(static_cast<size_t>(flags.limit));
  if (jobs.empty()) {
    std::fprintf(stderr, "no training jobs%s in %s\n",
                 flags.status.empty() && flags.name_contains.empty() ? "" : " match",
                 (*db)->data_dir().c_str());
    return 0;
  }
  std::string text = FormatJobTable(jobs, (*db)->clock().NowMs());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void RegisterJobsCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<JobsFlags>();
  CLI::App* cmd = root.add_subcommand("jobs", "list training jobs, newest first");
  cmd->add_option("--status", flags->status,
                  "only jobs in this status: InProgress, Completed, Failed, Stopping, Stopped");
  cmd->add_option("--name-contains", flags->name_contains,
                  "only jobs whose name contains this (ignoring case)");
  cmd->add_option("--limit", flags->limit, "at most this many jobs (default 20)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch jobs\n"
      "  trainwatch jobs --status InProgress\n"
      "  trainwatch jobs --name-contains mnist --limit 5");
  cmd->callback([flags, options, exit_code] { *exit_code = RunJobs(*flags, *options); });
}

}  // namespace trainwatch::cli
