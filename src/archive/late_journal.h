#pragma once
// LateJournal: the data that comes for a job's window after an archive pass
// read that window (a sample stamped long ago, an agent's spool delivered
// late, PutMetricData for a job archived complete). A server that archives
// keeps it here, in the data folder, until the next pass writes it to the
// archive as a late segment (archive::WriteLateSegment), which readers add
// to the job's data (docs/format/archive.md).
//
// It watches the server's ingest (a model::IngestObserver) and knows, per
// job, the pass's frontier: the time before which a pass has read, or is
// reading, the job's data. A sample of one of the job's series (JobOfSeries)
// or an event of one of its log streams ("<job>/..." in the training jobs'
// group) stamped before its job's frontier is appended to
// <dir>/journal.jsonl, and on disk (fdatasync), before the writer is
// answered.
//
// An archive pass (app::Archiver) drives it:
//   1. PlanJobArchive for each job: where its pass reads, [from, cut);
//   2. at a quiet point of the ingest (ingest::Ingest::AtQuietPoint), with
//      nothing between its store write and its observers, BeginPass(plans)
//      and the pass pins its read of the store (query::StoreReader::Pinned):
//      each job's frontier becomes its cut, and what the journal held from
//      `from` on is dropped (on disk by SaveDrops, before the pass writes), as
//      the pinned read has it. So what
//      the pass reads came before that point, and what comes after is
//      journaled: the segments and the journal never hold the same datum;
//   3. EndJob(job, archived_to, ok) once the job's pass ended (or did not
//      run: then at its `from`): its frontier becomes where the pass got to, and
//      what was journaled at or after that is dropped (it is in the store,
//      and the next pass reads it). Where it got to is kept (ReadTo; on disk
//      with every rewrite, so with every late segment): a window without
//      data gets no segment, and the next plan must not read again a window
//      whose late data is archived;
//   4. TakeLate() gives the journaled data of the jobs whose pass ended
//      without an error, each job's as a drain with an id of its own
//      (persisted before it is returned), written as the late segment of
//      that id; Written(ids) forgets them. A drain that a crash interrupted
//      is given again, with the same id: WriteLateSegment leaves a late
//      segment that is complete, so nothing is written twice. The data of a
//      job whose pass failed stays: a pass that failed before the archive
//      had the job's record (job.json) is read again from its last segment,
//      and BeginPass then drops what that read takes.
// Until its first BeginPass (a server that just started), every job's
// frontier is the end of time: everything that reaches this server is
// journaled, and BeginPass drops what the pass reads itself. So nothing that
// came to the server before its first pass is missed. (What `trainwatch run`
// wrote to the folder while no server held it is in the store, and a pass
// reads it from there unless it is stamped before where an earlier pass read
// the job to: see docs/archive.md, Limits.)
//
// What is lost: a late datum whose store write was durable when the process
// died (kill -9, power loss) before the journal's was; data once the
// journal holds max_bytes (counted in stats().dropped, with a warning), or
// cannot be written (a warning); late data for windows that another writer
// (`trainwatch archive` by hand) archived past this journal's frontier.
// The journal fills that far only when a server starts while its archive
// cannot be read (it then keeps everything until the first pass).
//
// Thread-safe.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "archive/job_archive.h"
#include "model/sinks.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::archive {

struct LateDrain {
  std::string job;
  std::string id;  // the late segment's: "<ms, 13 digits>-<8 hex digits>"
  LateData data;
};

struct LateJournalOptions {
  util::Clock* clock = &util::SystemClock::Get();  // ingestion times, drain ids
  // The archive it keeps late data for (its address). A journal kept for
  // another one is emptied when opened (with a warning): the new archive
  // reads every job's data from the start.
  std::string target;
  int64_t max_bytes = 256LL << 20;                 // of journal.jsonl
};

class LateJournal final : public model::IngestObserver {
 public:
  static constexpr int64_t kEndOfTime = std::numeric_limits<int64_t>::max();

  // Opens (creating) the journal in `dir` and reads what it holds. A line
  // cut short at the end (a crash while appending) is dropped; another
  // unreadable line is an error naming the file and line.
  static absl::StatusOr<std::unique_ptr<LateJournal>> Open(const std::string& dir,
                                                           LateJournalOptions options = {});
  ~LateJournal() override;

  void OnSamples(const model::SampleBatch& batch) override;
  void OnLogs(const model::LogBatch& batch) override;

  struct PlannedJob {
    std::string job;
    int64_t from_ms = 0;  // the pass reads from here ...
    int64_t cut_ms = 0;   // ... to here (kEndOfTime: archived complete)
  };
  // At a quiet point of the ingest, before the pass pins its read (see
  // above). `unplanned`: jobs whose plan failed (the archive could not be
  // read); what is stamped before the end of their last pass of this process
  // is journaled, or, without one, everything, until a pass plans them.
  // Other jobs (new since the pass listed them) are not journaled.
  // Data journaled for no job of either list is dropped (the store has it).
  // In memory: SaveDrops() writes it down.
  void BeginPass(const std::vector<PlannedJob>& planned, const std::vector<std::string>& unplanned);
  // After BeginPass's quiet point (writes are not held for it), before the
  // pass writes a segment: rewrites the journal when BeginPass dropped
  // something, so that a restart does not find there what the pass reads
  // itself. On an error the pass must not write (its jobs' EndJob at their
  // `from`).
  absl::Status SaveDrops();
  // The job's pass ended: its data before `archived_to_ms` is archived
  // (kEndOfTime: the job is archived complete). Rewrites the journal when it
  // drops something. `pass_ok`: false when the pass failed; the job's late
  // data then waits for a pass that does not (TakeLate leaves it).
  absl::Status EndJob(const std::string& job, int64_t archived_to_ms, bool pass_ok = true);
  // The journaled data of the jobs whose pass ended, one drain a job, with
  // those given before and not Written yet.
  absl::StatusOr<std::vector<LateDrain>> TakeLate();
  // The drains' late segments are complete in the archive (one rewrite).
  absl::Status Written(const std::vector<std::string>& ids);
  // Where the last pass read the job to (for its next plan; kept in the
  // journal across restarts); 0 when none did.
  int64_t ReadTo(const std::string& job) const;

  struct Stats {
    int64_t rows = 0;      // journaled and not yet written (drains included)
    int64_t events = 0;
    int64_t bytes = 0;     // of journal.jsonl
    int64_t dropped = 0;   // rows and events not journaled: the journal was full
    int64_t written = 0;   // rows and events written to late segments
  };
  Stats stats() const;

 private:
  LateJournal(std::string dir, LateJournalOptions options, int fd);
  // One journal line's worth: a job's data, and the drain it went to ("":
  // none yet).
  struct Entry {
    std::string job;
    std::string drain;
    LateData data;
  };
  static std::string EncodeLine(const Entry& entry);
  absl::Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends and syncs one line; false when the journal is full or cannot
  // be written (then nothing of the line stays).
  bool Append(const Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AppendLine(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The journal line of where a pass read a job to.
  static std::string ReadToLine(const std::string& job, int64_t read_to_ms);
  // Writes the whole journal anew (atomically) from pending_ and drains_.
  absl::Status Rewrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The frontier of `job` now.
  int64_t FrontierOf(const std::string& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the job's pending rows and events stamped at or after `from_ms`;
  // whether it dropped any.
  bool DropFrom(const std::string& job, int64_t from_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Journal(Entry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const LateJournalOptions options_;
  mutable util::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);  // journal.jsonl, for appending (-1: it could not be opened)
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // a BeginPass came
  bool unsaved_drops_ ABSL_GUARDED_BY(mu_) = false;  // BeginPass dropped what the file has
  std::map<std::string, int64_t> frontier_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> read_to_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> ended_ ABSL_GUARDED_BY(mu_);  // EndJob(ok) since the last BeginPass
  std::map<std::string, LateData> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LateDrain> drains_ ABSL_GUARDED_BY(mu_);  // by id
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t written_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainwatch::archive
