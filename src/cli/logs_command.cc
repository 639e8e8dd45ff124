// trainwatch logs NAME: the lines a training job printed, as stored; --follow
// keeps printing new lines until the job ends.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/archiver.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "model/log_event.h"
#include "query/filter_pattern.h"
#include "query/store_reader.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct LogsFlags {
  std::string name;
  bool follow = false;
  std::string filter;
  std::string start;
  std::string end;
  bool timestamps = false;
  int poll_ms = 200;
  int host = 0;  // 0: the first host
  int64_t tail = -1;  // -n: the last N lines only; -1: every line
};

bool WriteAll(const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(STDOUT_FILENO, text.data() + off, text.size() - off);
    if (n <= 0) return false;  // stdout closed (e.g. `| head`): stop quietly
    off += static_cast<size_t>(n);
  }
  return true;
}

int RunLogs(const LogsFlags& flags, const GlobalOptions& options) {
  const std::string data_dir = DataDir(options);
  auto pattern = query::FilterPattern::Parse(flags.filter);
  if (!pattern.ok()) return ReportError(pattern.status());
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  const int64_t now_ms = (*db)->clock().NowMs();
  query::LogReadQuery request;
  request.forward = true;
  request.limit = 10000;
  if (!flags.start.empty()) {
    auto t = ParseTimeFlag("--start", flags.start, now_ms);
    if (!t.ok()) return ReportError(t.status());
    request.start_ms = *t;
  }
  if (!flags.end.empty()) {
    auto t = ParseTimeFlag("--end", flags.end, now_ms);
    if (!t.ok()) return ReportError(t.status());
    request.end_ms = *t;
  }

  if (request.start_ms && request.end_ms && *request.end_ms <= *request.start_ms) {
    return ReportError(RangeOutOfOrder(*request.start_ms, *request.end_ms, true, "", true, ""));
  }
  auto job = app::LoadJob(**db, flags.name);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.name, data_dir));
  request.stream.group = std::string(model::kTrainingJobsLogGroup);
  request.stream.stream = (*job)->log_stream;
  if (flags.host > 0 || !(*job)->hosts.empty()) {
    const model::JobRecord* host = flags.host > 0 ? model::FindHost(**job, flags.host)
                                                  : &(*job)->hosts.front();
    if (host == nullptr) {
      std::vector<std::string> ran;
      for (const model::JobRecord& h : model::HostRecords(**job)) {
        ran.push_back(absl::StrFormat("%d", h.host_index));
      }
      return ReportError(absl::NotFoundError(absl::StrFormat(
          "training job \"%s\" has no host %d; it ran on host%s %s (--host N)", (*job)->name,
          flags.host, ran.size() > 1 ? "s" : "", absl::StrJoin(ran, ", "))));
    }
    if (flags.host == 0) {
      std::fprintf(stderr, "trainwatch: job %s ran on %d hosts; this is algo-%d's output (--host N "
                   "for another's)\n", (*job)->name.c_str(), static_cast<int>((*job)->hosts.size()),
                   host->host_index);
    }
    request.stream.stream = host->log_stream;
  }

  bool job_done = model::IsTerminal((*job)->status);
  query::StoreReader reader(**db);
  // A job archived complete prints whole, whatever log retention has dropped since.
  app::ReadersWithArchive readers(&reader, &reader, &reader, data_dir,
                                  app::FindRecordedArchive(data_dir));
  bool printed = false;
  // Nothing printed for a narrowed read: say so, rather than look empty.
  auto done = [&] {
    if (!printed && (!flags.start.empty() || !flags.end.empty() || !flags.filter.empty())) {
      std::fprintf(stderr,
                   "trainwatch: no line of job %s is in the range or matches the filter "
                   "(--start, --end, --filter); `trainwatch logs %s` prints every line\n",
                   flags.name.c_str(), flags.name.c_str());
    }
    return 0;
  };
  auto format = [&](const query::StoredLogEvent& event) {
    std::string line;
    if (flags.timestamps) line = util::FormatIso8601Ms(event.position.t_ms) + " ";
    line += event.message;
    line += '\n';
    return line;
  };
  if (flags.tail >= 0) {
    // The last N lines (that match): read back from the stream's end, a page
    // at a time, then print them in order and follow on from that end.
    query::LogReadQuery back = request;
    back.forward = false;
    back.limit = flags.filter.empty() ? static_cast<size_t>(std::clamp<int64_t>(flags.tail, 1, 10000))
                                      : 10000;
    std::vector<std::string> newest_first;
    std::optional<query::LogPosition> end;
    while (static_cast<int64_t>(newest_first.size()) < flags.tail || !end) {
      absl::StatusOr<std::vector<query::StoredLogEvent>> page =
          readers.logs().ReadLogStream(back);
      if (absl::IsNotFound(page.status())) break;  // no line yet
      if (!page.ok()) return ReportError(page.status(), 1);
      if (page->empty()) break;  // the stream's start
      if (!end) {
        end = page->back().position;
        end->seq += 1;
      }
      for (auto it = page->rbegin();
           it != page->rend() && static_cast<int64_t>(newest_first.size()) < flags.tail; ++it) {
        if (pattern->Matches(it->message)) newest_first.push_back(format(*it));
      }
      back.from = page->front().position;
    }
    std::string out;
    for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) out += *it;
    if (!out.empty() && !WriteAll(out)) return 0;
    printed = !out.empty() || flags.tail == 0;
    if (!flags.follow) return done();
    if (end) request.from = end;
  }
  while (true) {
    absl::StatusOr<std::vector<query::StoredLogEvent>> page =
        readers.logs().ReadLogStream(request);
    if (!page.ok()) {
      // The stream appears with the job's first line.
      if (absl::IsNotFound(page.status()) && flags.follow && !job_done) {
        page = std::vector<query::StoredLogEvent>{};
      } else if (absl::IsNotFound(page.status())) {
        return done();  // the job printed nothing
      } else {
        return ReportError(page.status(), 1);
      }
    }
    std::string out;
    for (const query::StoredLogEvent& event : *page) {
      if (pattern->Matches(event.message)) out += format(event);
    }
    if (!out.empty() && !WriteAll(out)) return 0;
    printed = printed || !out.empty();
    if (!page->empty()) {
      // Resume just after the last event read; more may be there right away.
      request.from = page->back().position;
      request.from->seq += 1;
      continue;
    }
    // An empty page: the end of what is stored now.
    if (!flags.follow || job_done) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(flags.poll_ms));
    auto latest = app::LoadJob(**db, flags.name);
    if (!latest.ok()) return ReportError(latest.status(), 1);
    // Once the job is terminal every line is stored: one more pass, then stop.
    if (latest->has_value() && model::IsTerminal((*latest)->status)) job_done = true;
  }
}

}  // namespace

void RegisterLogsCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* cmd = root.add_subcommand("logs", "print the lines a training job printed");
  cmd->add_option("name", flags->name, "the job's name")->required();
  cmd->add_flag("-f,--follow", flags->follow,
                "keep printing new lines as the job prints them, until it ends");
  cmd->add_option("--filter", flags->filter,
                  "only lines matching a CloudWatch Logs filter pattern: terms (all must "
                  "appear), \"phrases\", ?any -none, %regex%");
  cmd->add_option("--start", flags->start, "from this time (ISO-8601, epoch seconds, now-10m)");
  cmd->add_option("--end", flags->end, "until this time (exclusive)");
  cmd->add_option("-n,--tail", flags->tail,
                  "only the last N lines (that match --filter, within --start/--end); with "
                  "--follow, then the new ones")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  cmd->add_flag("-t,--timestamps", flags->timestamps, "prefix each line with its time");
  cmd->add_option("--host", flags->host,
                  "for a job run on several hosts: host N's output (default: the first host's)")
      ->check(CLI::Range(1, model::kMaxJobHosts))
      ->type_name("N");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch logs mnist-7\n"
      "  trainwatch logs mnist-7 --follow\n"
      "  trainwatch logs mnist-7 -n 50 --follow        # the last 50 lines, then the new ones\n"
      "  trainwatch logs mnist-7 --filter '?Error ?Traceback' --timestamps\n"
      "  trainwatch logs mnist-7 --filter '%[Ee]rror|[Nn]a[Nn]%' --start now-10m");
  cmd->callback([flags, options, exit_code] { *exit_code = RunLogs(*flags, *options); });
}

}  // namespace trainwatch::cli
