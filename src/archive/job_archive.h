#pragma once
// Archiving a job: its metrics, profiling samples, tensor statistics and logs
// written to an ObjectStore (a folder or S3) in the open format of
// docs/format/archive.md, a segment (a window of time) at a time.
//
// Each pass over a job (ArchiveJob) writes the window from the end of its
// last complete segment to the pass's cut: for a job that runs, `settle_ms`
// before now (later data may still arrive for the minutes before); for one
// that ended at least `settle_ms` ago (data may still come just after the
// end), 2 h past now (the latest a sample may be stamped), and that segment
// is its last (job.json says "complete"). Windows without data get no
// segment; segments that overlap an earlier one (two writers at once) are
// ignored.
// A segment's objects go first and its manifest.json last: a segment without
// a manifest is incomplete, readers skip it and the next pass writes it
// again. Passes are idempotent: a pass that finds nothing new writes nothing
// but job.json when the job's record changed.
//
// Data that arrives for a window after that window was archived (a sample
// stamped more than settle_ms in the past) is not archived: the settle time
// should exceed how late a job's data comes.

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "model/object_store.h"
#include "query/reader.h"

namespace trainwatch::archive {

inline constexpr int kFormatVersion = 1;

struct ArchiveReaders {
  query::MetricsReader* metrics = nullptr;
  query::LogsReader* logs = nullptr;
};

struct JobArchivePass;

struct ArchiveOptions {
  int64_t now_ms = 0;
  int64_t settle_ms = 5 * 60'000;
  // A segment covers at most this much time (data of a long job archived at
  // once is cut into several).
  int64_t max_window_ms = 3'600'000;
  // Called after each segment written (progress), with the pass so far.
  std::function<void(const JobArchivePass&)> on_segment;
  // Once stop is requested, the pass ends before its next window (the
  // segments written stay; the next pass goes on from there).
  std::stop_token stop;
};

struct JobArchivePass {
  std::string job;
  std::vector<std::string> segments;  // written by this pass, oldest first
  int64_t series = 0;  // summed over its segments
  int64_t samples = 0;
  int64_t log_events = 0;
  int64_t bytes = 0;      // of the objects written (job.json included)
  bool complete = false;  // the job ended and everything of it is archived
  // The job's data before this time is archived (the pass's cut, or the end
  // of the last segment when that is later).
  int64_t archived_to_ms = 0;
  bool skipped = false;   // it was complete already: nothing read or written
  bool interrupted = false;  // ArchiveOptions::stop ended it early
};

// One pass over `job` (see above). Errors name the job and the object.
absl::StatusOr<JobArchivePass> ArchiveJob(const ArchiveReaders& readers,
                                          const model::JobRecord& job, model::ObjectStore* store,
                                          const ArchiveOptions& options);

// The archive's keys (docs/format/archive.md).
std::string JobFolderKey(const std::string& job);    // "jobs/<job>"
std::string SegmentName(int64_t from_ms, int64_t to_ms);  // "<from>-<to>", 13 digits each

// The segments of `job` whose manifest exists, oldest first, as
// (from_ms, to_ms).
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> CompleteSegments(
    model::ObjectStore* store, const std::string& job);

}  // namespace trainwatch::archive
