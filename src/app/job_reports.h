#pragma once
// JobReports: writes each job's report (report/report.h) into the job's
// folder, <data>/jobs/<name>/report.html, when the job ends, in the process
// that holds the data folder (`trainwatch server`, or `trainwatch run` when
// no server takes its data). It watches ingest for job records that reach a
// terminal status and writes on a thread of its own a moment later (the
// rule engine's final statuses land just after the job's end), never on
// ingest's thread. Rule statuses of an ended job that come later still (a
// busy engine) push the report back, or have it written again.
//
//   app::JobReports reports(db, data_dir, ingest.get());
//   ... the run ends; its rules are flushed ...
//   reports.Flush();   // every report due is written now
//
// A failure to write is logged and the next job goes on.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "ingest/ingest.h"
#include "model/sinks.h"
#include "store/db.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::app {

// <data_dir>/jobs/<name>/report.html
std::string JobReportPath(const std::string& data_dir, const std::string& job_name);

// Builds and writes `job_name`'s report now (HTML), returns its path.
absl::StatusOr<std::string> WriteJobReport(store::Db& db, const std::string& data_dir,
                                           const std::string& job_name, util::Clock& clock);

class JobReports final : public model::IngestObserver {
 public:
  // `db`, `ingest` and `clock` must outlive this; subscribes to `ingest`.
  JobReports(store::Db& db, std::string data_dir, ingest::Ingest* ingest,
             util::Clock* clock = &util::SystemClock::Get(),
             std::chrono::milliseconds delay = std::chrono::seconds(3));
  ~JobReports() override;
  JobReports(const JobReports&) = delete;
  JobReports& operator=(const JobReports&) = delete;

  void OnJob(const model::JobRecord& job) override;
  void OnRuleStatuses(const std::string& job, int host_index,
                      const std::vector<model::RuleStatus>& statuses) override;

  // Writes every report due, without waiting for the delay; returns the
  // paths written (for the run to print).
  std::vector<std::string> Flush();

 private:
  void Loop(std::stop_token stop);
  std::vector<std::string> WriteDue(bool all);

  store::Db& db_;
  const std::string data_dir_;
  ingest::Ingest* const ingest_;
  util::Clock* const clock_;
  const std::chrono::milliseconds delay_;
  util::Mutex write_mu_;  // one report written at a time (the loop or Flush)
  util::Mutex mu_;
  std::condition_variable_any changed_;
  // Jobs that ended, and when their report is due.
  std::map<std::string, std::chrono::steady_clock::time_point> due_ ABSL_GUARDED_BY(mu_);
  // The jobs whose reports were written last, or are being written (at most
  // kRecentReports), whose rule statuses may still change: a change has the
  // report written again.
  static constexpr size_t kRecentReports = 256;
  std::deque<std::string> recent_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;  // last: stops first
};

}  // namespace trainwatch::app
