// trainwatch jobs: the training jobs of a data folder, newest first.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "query/jobs.h"

namespace trainwatch::cli {
namespace {

struct JobsFlags {
  std::string status;
  std::string name_contains;
  int limit = 20;
};

// Records jobs whose runner died before listing, so that the status filter and
// the table show them as Failed.
absl::Status ReconcileLiveJobs(store::Db& db) {
  for (model::JobStatus status : {model::JobStatus::kInProgress, model::JobStatus::kStopping}) {
    query::ListJobsRequest request;
    request.status = status;
    request.max_results = 100;
    do {
      auto view = db.View();
      if (!view.ok()) return view.status();
      auto page = query::ListJobs(*view, request);
      if (!page.ok()) return page.status();
      for (model::JobRecord& job : page->jobs) app::ReconcileJob(db, &job);
      request.next_token = page->next_token;
    } while (!request.next_token.empty());
  }
  return absl::OkStatus();
}

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
  if (absl::Status s = ReconcileLiveJobs(**db); !s.ok()) return ReportError(s, 1);
  request.name_contains = flags.name_contains;
  request.sort_by = query::JobSortBy::kCreationTime;
  request.descending = true;
  std::vector<model::JobRecord> jobs;
  while (static_cast<int>(jobs.size()) < flags.limit) {
    request.max_results = std::min(100, flags.limit - static_cast<int>(jobs.size()));
    auto view = (*db)->View();
    if (!view.ok()) return ReportError(view.status(), 1);
    auto page = query::ListJobs(*view, request);
    if (!page.ok()) return ReportError(page.status(), 1);
    for (model::JobRecord& job : page->jobs) {
      app::ReconcileJob(**db, &job);
      jobs.push_back(std::move(job));
    }
    if (page->next_token.empty()) break;
    request.next_token = page->next_token;
  }
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
