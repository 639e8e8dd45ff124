#pragma once
// The archive, wired (docs/archive.md): where it is (a folder or
// s3://BUCKET/PREFIX), and passes over a data folder's jobs
// (archive::ArchiveJob), once (`trainwatch archive`) or every few minutes in
// `trainwatch server --archive`.
//
//   auto target = app::OpenArchive("s3://runs/team-a", {.endpoint = "http://127.0.0.1:4568"});
//   app::Archiver archiver(&reader, &reader, &reader, target->get(), {});
//   archiver.Start();   // a pass now, then every interval

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "archive/archive_backed_logs.h"
#include "archive/archive_reader.h"
#include "archive/job_archive.h"
#include "archive/late_journal.h"
#include "ingest/ingest.h"
#include "model/object_store.h"
#include "query/reader.h"
#include "query/store_reader.h"
#include "store/db.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::app {

struct ArchiveTargetOptions {
  // The S3-compatible service of an s3:// target ("http://127.0.0.1:4568");
  // empty: $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL, then AWS S3.
  std::string endpoint;
  int64_t part_bytes = 16LL << 20;  // multipart above this
  // For reading back: a folder must exist (it is not created nor written),
  // and S3 is tried twice with short timeouts (a reader must not hang on an
  // archive that is down).
  bool for_reading = false;
};

// The S3 endpoint an s3:// archive uses: `endpoint`, else
// $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else "" (AWS S3).
std::string ResolveS3Endpoint(const std::string& endpoint);

// s3://BUCKET[/PREFIX] or a folder path (file:///path too). InvalidArgument
// for an address it cannot use; sends nothing (a wrong credential shows at
// the first write).
absl::StatusOr<std::unique_ptr<model::ObjectStore>> OpenArchive(
    const std::string& url, const ArchiveTargetOptions& options = {});

// The archive a data folder's jobs are read back from, kept in
// <data>/archive.json ({"url": ..., "endpoint": ...}) so that every reader of
// the folder finds it: the server's --archive, or the first `trainwatch
// archive` when the server has none. A folder is recorded by its absolute
// path, an s3:// archive with the endpoint it was written through.
struct RecordedArchive {
  std::string url;
  std::string endpoint;
};
absl::Status RecordArchive(const std::string& data_dir, const RecordedArchive& archive);
// As RecordArchive records it: a folder's absolute path, S3's endpoint resolved.
RecordedArchive NormalizedArchive(const RecordedArchive& archive);
// nullopt when the folder was never archived (or the file is unreadable:
// then a warning).
std::optional<RecordedArchive> FindRecordedArchive(const std::string& data_dir);

// A read command's metrics and logs readers: the data folder's, with the
// jobs archived complete in the folder's recorded archive added
// (archive::ArchiveBackedMetricsReader: raw reads and charts of every sample
// the archive holds; archive::ArchiveBackedLogsReader: a stream's events
// that log retention dropped). Without a recorded archive, or one that
// cannot be opened (a warning), they are the folder's own.
class ReadersWithArchive {
 public:
  // `jobs`: the folder's job records (a running job is not looked for).
  ReadersWithArchive(query::MetricsReader* metrics, query::LogsReader* logs,
                     query::JobsReader* jobs, const std::string& data_dir,
                     const std::optional<RecordedArchive>& archive);
  ~ReadersWithArchive();
  query::MetricsReader& metrics() { return *metrics_; }
  query::LogsReader& logs() { return *logs_; }

 private:
  std::unique_ptr<model::ObjectStore> store_;
  std::unique_ptr<archive::ArchiveReader> archived_;
  std::unique_ptr<archive::ArchiveBackedMetricsReader> backed_metrics_;
  std::unique_ptr<archive::ArchiveBackedLogsReader> backed_logs_;
  query::MetricsReader* metrics_;
  query::LogsReader* logs_;
};

struct ArchiverOptions {
  int64_t interval_ms = 10 * 60'000;  // between passes (server)
  int64_t settle_ms = 5 * 60'000;     // archive::ArchiveOptions::settle_ms
  util::Clock* clock = &util::SystemClock::Get();
  // The server's ingest, its late-data journal (subscribed to that ingest)
  // and its store reader, when this process writes the data folder: then
  // data that comes for a window after a pass read it is archived too, as a
  // late segment (archive/late_journal.h). All three or none.
  ingest::Ingest* ingest = nullptr;
  archive::LateJournal* late = nullptr;
  query::StoreReader* store = nullptr;
  // The data folder's writer, when this process is it: its retention then
  // never drops raw samples the archive has not taken (store::Db::
  // SetRetentionHold). Everything is held until the first pass over every
  // job; after each, from where it stopped reading the oldest job not
  // archived complete, and at most the settle time back from now. A pass
  // with a failure keeps the earlier hold.
  store::Db* hold = nullptr;
};

// Archives a data folder's jobs. Pass() is one pass over the jobs given;
// Start() runs a pass now and then every interval on a thread of its own,
// logging what it wrote and what failed (a failed job is tried again at the
// next pass; nothing local is deleted either way). Thread-safe.
class Archiver {
 public:
  // Everything given must outlive this.
  Archiver(query::MetricsReader* metrics, query::LogsReader* logs, query::JobsReader* jobs,
           model::ObjectStore* store, ArchiverOptions options);
  ~Archiver();  // stops the thread

  struct PassResult {
    std::vector<archive::JobArchivePass> jobs;  // the jobs that were written to
    std::vector<absl::Status> failures;         // one per job that failed
    bool stopped = false;                       // `stop` ended it early
  };
  // `names`: those jobs (NotFound for one that does not exist); empty: all.
  // `progress` is called after each segment; `stop` ends the pass before
  // the next segment (the hold then stays where it was).
  absl::StatusOr<PassResult> Pass(
      const std::vector<std::string>& names,
      const std::function<void(const archive::JobArchivePass&)>& progress = nullptr,
      std::stop_token stop = {});

  void Start();

  // For /metrics: passes, segments and bytes written, failures.
  struct Counts {
    int64_t passes = 0;
    int64_t segments = 0;
    int64_t bytes = 0;
    int64_t failures = 0;
    int64_t last_pass_ms = 0;
    // Late data (ArchiverOptions::late): segments written, rows and events
    // journaled and not yet written, and those the full journal dropped.
    int64_t late_segments = 0;
    int64_t late_pending = 0;
    int64_t late_dropped = 0;
  };
  Counts counts() const;

 private:
  query::MetricsReader* const metrics_;
  query::LogsReader* const logs_;
  query::JobsReader* const jobs_;
  // Writes the journal's late data as late segments (after a pass).
  void WriteLate(int64_t now_ms, PassResult* result);
  // The earliest creation time of the jobs the store has and `listed` (a
  // pass's jobs) has not (INT64_MAX: none; 0 when they cannot be listed).
  int64_t FirstNewJobMs(const std::vector<model::JobRecord>& listed);

  model::ObjectStore* const store_;
  const ArchiverOptions options_;
  util::Mutex pass_mu_;  // one pass at a time
  mutable util::Mutex mu_;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;  // last: stops first
};

}  // namespace trainwatch::app
