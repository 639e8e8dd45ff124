// trainwatch archive [JOB...] --to DEST: writes jobs' metrics, profiling
// samples and logs to an archive (a folder or S3-compatible storage) in the
// open format of docs/format/archive.md (docs/archive.md).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>  // std::jthread
#include <vector>

#include "absl/strings/str_format.h"
#include "app/archiver.h"
#include "app/open_store.h"
#include "cli/commands.h"
#include "query/store_reader.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct ArchiveFlags {
  std::vector<std::string> jobs;
  std::string to;
  std::string endpoint;
  std::string settle = "5m";
  int part_mib = 16;
  bool quiet = false;
};

// Ctrl-C (or SIGTERM) ends the pass once the segment being written is
// complete, so that the archive holds no half-sent upload and the next run
// goes on from there; a second one ends the process at once. Made before any
// other thread, which then inherit the blocked signals.
class StopOnSignal {
 public:
  StopOnSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, &old_mask_);
    waiter_ = std::jthread([this] {
      for (int count = 0;;) {
        int sig = 0;
        if (sigwait(&signals_, &sig) != 0 || done_.load()) return;
        if (++count > 1) _exit(128 + sig);
        static constexpr char kNote[] =
            "\ntrainwatch: stopping after this segment (again to stop at once; the next run "
            "goes on from here)\n";
        (void)!::write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
        signal_.store(sig);
        source_.request_stop();
      }
    });
  }
  ~StopOnSignal() {
    done_.store(true);
    pthread_kill(waiter_.native_handle(), SIGTERM);
    waiter_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  std::stop_token token() const { return source_.get_token(); }
  // The exit status of a process the signal ended: 128 + its number.
  int exit_status() const { return 128 + signal_.load(); }

 private:
  sigset_t signals_;
  sigset_t old_mask_;
  std::stop_source source_;
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{SIGINT};
  std::jthread waiter_;
};

int RunArchive(const ArchiveFlags& flags, const GlobalOptions& options) {
  absl::StatusOr<int64_t> settle_ms = util::ParseDurationMs(flags.settle);
  if (!settle_ms.ok()) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrFormat("--settle \"%s\": %s", flags.settle, settle_ms.status().message())));
  }
  StopOnSignal stop_on_signal;  // before the store's threads start
  // The data folder and the jobs named first: a mistake there creates no
  // archive folder.
  auto db = app::OpenForRead(DataDir(options));
  if (!db.ok()) return ReportError(db.status());
  query::StoreReader reader(**db);
  for (const std::string& name : flags.jobs) {
    auto job = reader.GetJob(name);
    if (!job.ok()) return ReportError(job.status(), 1);
    if (!job->has_value()) {
      return ReportError(absl::NotFoundError(absl::StrFormat(
          "no training job \"%s\" in %s (trainwatch jobs lists them)", name, (*db)->data_dir())));
    }
  }
  app::ArchiveTargetOptions target_options;
  target_options.endpoint = flags.endpoint;
  target_options.part_bytes = static_cast<int64_t>(flags.part_mib) << 20;
  auto target = app::OpenArchive(flags.to, target_options);
  // A bad address is a usage error; a folder that cannot be made is not.
  if (!target.ok()) {
    return ReportError(target.status(), absl::IsInvalidArgument(target.status()) ? 2 : 1);
  }
  app::ArchiverOptions archiver_options;
  archiver_options.settle_ms = *settle_ms;
  archiver_options.clock = &(*db)->clock();
  app::Archiver archiver(&reader, &reader, &reader, target->get(), archiver_options);
  auto progress = [&](const archive::JobArchivePass& pass) {
    if (!flags.quiet) {
      std::fprintf(stderr, "  %s: segment %s (%lld samples, %lld log events so far)\n",
                   pass.job.c_str(), pass.segments.back().c_str(),
                   static_cast<long long>(pass.samples), static_cast<long long>(pass.log_events));
    }
  };
  auto pass = archiver.Pass(flags.jobs, progress, stop_on_signal.token());
  if (!pass.ok()) return ReportError(pass.status(), absl::IsNotFound(pass.status()) ? 2 : 1);
  // Readers of the data folder (report, replay, the server) read archived
  // jobs back from the first archive written to, or the server's.
  const std::string data_dir = DataDir(options);
  if (std::optional<app::RecordedArchive> recorded = app::FindRecordedArchive(data_dir)) {
    if (!flags.quiet && recorded->url != app::NormalizedArchive({flags.to, flags.endpoint}).url) {
      std::fprintf(stderr, "note: this data folder reads archived jobs back from %s\n",
                   recorded->url.c_str());
    }
  } else if (!pass->jobs.empty() || pass->failures.empty()) {
    // Only an archive this pass reached: one where every job failed (a
    // mistyped bucket, no network) is not where the folder's jobs are.
    if (absl::Status s = app::RecordArchive(data_dir, {flags.to, flags.endpoint}); !s.ok()) {
      return ReportError(s, 1);
    }
  }
  for (const archive::JobArchivePass& job : pass->jobs) {
    std::printf("%s: %zu segment(s), %lld samples, %lld log events, %lld bytes to %s%s\n",
                job.job.c_str(), job.segments.size(), static_cast<long long>(job.samples),
                static_cast<long long>(job.log_events), static_cast<long long>(job.bytes),
                (*target)->Describe().c_str(), job.complete ? " (complete)" : "");
    if (job.segments.empty() && !job.complete && !flags.quiet) {
      std::fprintf(stderr,
                   "  %s: nothing is --settle old yet (%s): its data is taken once samples can "
                   "no longer arrive for it; --settle 0s takes an ended job at once\n",
                   job.job.c_str(), flags.settle.c_str());
    }
  }
  if (pass->jobs.empty() && pass->failures.empty()) {
    std::printf("nothing new to archive in %s\n", (*target)->Describe().c_str());
  }
  for (const absl::Status& failure : pass->failures) ReportError(failure, 1);
  if (pass->stopped) {
    std::fprintf(stderr, "trainwatch: stopped before archiving everything; run the same command "
                         "again to go on\n");
    return stop_on_signal.exit_status();
  }
  return pass->failures.empty() ? 0 : 1;
}

}  // namespace

void RegisterArchiveCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<ArchiveFlags>();
  CLI::App* cmd = root.add_subcommand(
      "archive", "write jobs' metrics, profiling data and logs to an archive (folder or S3)");
  cmd->add_option("jobs", flags->jobs, "the jobs to archive (default: every job)");
  cmd->add_option("--to", flags->to,
                  "where: a folder, or s3://BUCKET[/PREFIX] (credentials from AWS_ACCESS_KEY_ID, "
                  "AWS_SECRET_ACCESS_KEY, AWS_REGION)")
      ->required();
  cmd->add_option("--endpoint", flags->endpoint,
                  "the S3-compatible service of an s3:// archive, e.g. http://127.0.0.1:9000 "
                  "(default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS S3)");
  cmd->add_option("--settle", flags->settle,
                  "data is archived once it is this old, and a job complete once it ended this "
                  "long ago (later data may still come; default 5m; 0s: at once)");
  cmd->add_option("--part-size", flags->part_mib,
                  "S3: objects larger than this many MiB go up in parts of this size (default "
                  "16, at least 5)");
  cmd->add_flag("-q,--quiet", flags->quiet, "no progress lines on stderr");
  AddDataOption(cmd, options);
  cmd->footer(
      "Each run writes what is new since the last: a segment per job and hour of data, its\n"
      "manifest last, so an interrupted run leaves nothing half-written; Ctrl-C stops once\n"
      "the segment in hand is written, and the next run goes on from there. The format is\n"
      "docs/format/archive.md; python3 -m trainwatch.archive reads it.\n"
      "\n"
      "Examples:\n"
      "  trainwatch archive --to /mnt/archive\n"
      "  trainwatch archive mnist-1 --to s3://my-bucket/trainwatch\n"
      "  trainwatch archive --to s3://runs --endpoint http://127.0.0.1:9000");
  cmd->callback([flags, options, exit_code] { *exit_code = RunArchive(*flags, *options); });
}

}  // namespace trainwatch::cli
