#include "app/job_reports.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"
#include "query/store_reader.h"
#include "report/report.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::app {

std::string JobReportPath(const std::string& data_dir, const std::string& job_name) {
  return data_dir + "/jobs/" + job_name + "/report.html";
}

absl::StatusOr<std::string> WriteJobReport(store::Db& db, const std::string& data_dir,
                                           const std::string& job_name, util::Clock& clock) {
  // Job names are [a-zA-Z0-9-] (SageMaker's): safe as a folder name.
  if (!model::IsValidJobName(job_name)) {
    return absl::InvalidArgumentError("not a job name: \"" + job_name + "\"");
  }
  query::StoreReader reader(db);
  TW_ASSIGN_OR_RETURN(std::optional<model::JobRecord> job, reader.GetJob(job_name));
  if (!job) return absl::NotFoundError("no job named " + job_name);
  report::ReportOptions options;
  options.now_ms = options.generated_ms = clock.NowMs();
  TW_ASSIGN_OR_RETURN(report::JobReport built,
                      report::BuildReport(*job, reader, reader, options));
  const std::string path = JobReportPath(data_dir, job->name);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrFormat("cannot create the folder of %s: %s", path, ec.message()));
  }
  // Written aside and renamed: a reader never sees half a report.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << report::RenderHtml(built);
    out.close();
    if (!out) return absl::UnavailableError("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrFormat("cannot write %s: %s", path, ec.message()));
  }
  return path;
}

JobReports::JobReports(store::Db& db, std::string data_dir, ingest::Ingest* ingest,
                       util::Clock* clock, std::chrono::milliseconds delay)
    : db_(db), data_dir_(std::move(data_dir)), ingest_(ingest), clock_(clock), delay_(delay) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(std::move(stop)); });
  ingest_->Subscribe(this);
}

JobReports::~JobReports() {
  ingest_->Unsubscribe(this);
  thread_.request_stop();
  thread_.join();
  Flush();  // jobs that ended just before the process stops get theirs too
}

void JobReports::OnJob(const model::JobRecord& job) {
  if (!model::IsTerminal(job.status)) return;
  util::MutexLock lock(mu_);
  due_[job.name] = std::chrono::steady_clock::now() + delay_;
  changed_.notify_all();
}

void JobReports::OnRuleStatuses(const std::string& job, int, const std::vector<model::RuleStatus>&) {
  util::MutexLock lock(mu_);
  auto pending = due_.find(job);
  const bool written = std::find(recent_.begin(), recent_.end(), job) != recent_.end();
  if (pending == due_.end() && !written) return;  // a running job's
  due_[job] = std::chrono::steady_clock::now() + delay_;
  changed_.notify_all();
}

std::vector<std::string> JobReports::WriteDue(bool all) {
  std::vector<std::string> names;
  {
    util::MutexLock lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = due_.begin(); it != due_.end();) {
      if (all || it->second <= now) {
        names.push_back(it->first);
        // Listed before it is built: a status that lands meanwhile has it
        // written again.
        if (std::find(recent_.begin(), recent_.end(), it->first) == recent_.end()) {
          recent_.push_back(it->first);
          if (recent_.size() > kRecentReports) recent_.pop_front();
        }
        it = due_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::vector<std::string> written;
  util::MutexLock write(write_mu_);
  for (const std::string& name : names) {
    absl::StatusOr<std::string> path = WriteJobReport(db_, data_dir_, name, *clock_);
    if (path.ok()) {
      written.push_back(*path);
    } else {
      util::LogWarning(absl::StrFormat("report of job %s not written: %s", name,
                                       path.status().message()));
    }
  }
  return written;
}

std::vector<std::string> JobReports::Flush() { return WriteDue(/*all=*/true); }

void JobReports::Loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      util::MutexLock lock(mu_);
      // Until a report is due (or a stop).
      auto next = std::chrono::steady_clock::time_point::max();
      for (const auto& [name, when] : due_) next = std::min(next, when);
      if (next == std::chrono::steady_clock::time_point::max()) {
        lock.Wait(changed_, stop, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !due_.empty();
        });
        continue;
      }
      if (next > std::chrono::steady_clock::now()) {
        lock.WaitUntil(changed_, stop, next,
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return false; });
        continue;
      }
    }
    WriteDue(/*all=*/false);
  }
}

}  // namespace trainwatch::app
