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
// Data that arrives for a window after a pass read that window is not in
// its segment. A server that archives catches it as it arrives
// (archive/late_journal.h) and writes it as a late segment
// (WriteLateSegment), which readers add to the job's data.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
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

// What a pass over a job will read, found in the archive: nothing (`skip`:
// archived complete already), or [from_ms, to_ms).
struct JobArchivePlan {
  bool skip = false;
  bool ended = false;  // the job ended at least settle_ms ago: this pass completes it
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  std::vector<std::pair<int64_t, int64_t>> segments;  // the complete ones (CompleteSegments)
  std::optional<std::string> stored_job_json;         // job.json as the archive has it
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

// The same in two steps, for a caller that must know where the pass reads
// before it reads (app::Archiver, for the late data). `read_to_ms`: this
// job's data before it was read by an earlier pass, past its last segment
// when windows had no data (0: not known); the plan starts there.
absl::StatusOr<JobArchivePlan> PlanJobArchive(const model::JobRecord& job,
                                              model::ObjectStore* store,
                                              const ArchiveOptions& options,
                                              int64_t read_to_ms = 0);
// On an error, `*archived_to_ms` (when given) says up to where the job's
// data is archived all the same (the segments written before it).
absl::StatusOr<JobArchivePass> ArchiveJob(const ArchiveReaders& readers,
                                          const model::JobRecord& job, model::ObjectStore* store,
                                          const ArchiveOptions& options,
                                          const JobArchivePlan& plan,
                                          int64_t* archived_to_ms = nullptr);

// ---- late data (docs/format/archive.md, "Late segments")

struct LateEvent {
  int64_t t_ms = 0;
  int64_t ingestion_ms = 0;
  std::string message;
  friend bool operator==(const LateEvent&, const LateEvent&) = default;
};

// A job's data that came after a pass read its window: rows of its series,
// events of its log streams.
struct LateData {
  std::map<model::SeriesKey, std::vector<query::StoredRow>> series;
  std::map<std::string, std::vector<LateEvent>> streams;
  bool empty() const { return series.empty() && streams.empty(); }
  int64_t rows() const;
  int64_t events() const;
};

// Writes `data` as the late segment `id` of `job` (jobs/<job>/late/<id>/),
// objects first and manifest last; a late segment of that id that is
// complete already is left as it is (0 bytes). The bytes written.
absl::StatusOr<int64_t> WriteLateSegment(model::ObjectStore* store, const std::string& job,
                                         const std::string& id, const LateData& data,
                                         int64_t now_ms);
// The ids of the job's complete late segments, in name order.
absl::StatusOr<std::vector<std::string>> CompleteLateSegments(model::ObjectStore* store,
                                                              const std::string& job);

// The job a dimension names: TrainingJobName=NAME, or Host=NAME/algo-N.
std::optional<std::string> JobOfDimension(std::string_view name, std::string_view value);
// The jobs whose archives hold a series (query::JobSeriesQueries): the value
// of TrainingJobName, and NAME of Host=NAME/algo-N when another; none for a
// series of no job.
std::vector<std::string> JobsOfSeries(const model::SeriesKey& key);

// The archive's keys (docs/format/archive.md).
std::string JobFolderKey(const std::string& job);    // "jobs/<job>"
std::string SegmentName(int64_t from_ms, int64_t to_ms);  // "<from>-<to>", 13 digits each

// The segments of `job` whose manifest exists, oldest first, as
// (from_ms, to_ms).
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> CompleteSegments(
    model::ObjectStore* store, const std::string& job);

}  // namespace trainwatch::archive
