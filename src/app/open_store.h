#pragma once
// Every way a command opens the data folder (store::Db), in one place: the
// CLI and the server name what they need here and never configure the store
// themselves (the store is app's to open, query's to read, ingest's to write).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "store/db.h"
#include "util/clock.h"

namespace trainwatch::app {

// A read command's (`jobs`, `describe`, `logs`, `metrics`, `extract --job`):
// as the writer when nobody writes (so a dead runner's job can be recorded as
// Failed), else as a follower of the writer. NotFound with a message that
// says what to do when the folder holds no trainwatch data.
absl::StatusOr<std::unique_ptr<store::Db>> OpenForRead(const std::string& data_dir);

// `trainwatch run`'s, as the folder's writer, sized for one job (small
// memtables and block cache). The writer lock may be held for a moment by a
// read command that found the folder free; this waits that out (3 s).
absl::StatusOr<std::unique_ptr<store::Db>> OpenForRun(const std::string& data_dir);

// `trainwatch import`'s: the writer, in bulk-load mode (compactions wait for
// --compact or the next writer).
absl::StatusOr<std::unique_ptr<store::Db>> OpenForImport(const std::string& data_dir);

// `trainwatch server`'s, as a follower of whoever writes it (`trainwatch
// run`), never holding the writer lock itself, so runs can start while the
// server serves. An empty or missing folder is initialised first. `clock`
// (default: the system clock) must outlive the Db.
absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir,
                                                        util::Clock* clock = nullptr);

// `trainwatch server`'s: as the folder's writer when nobody holds it (runs
// then send their data through the server: app/remote_sink.h), else as a
// follower of the run that does (OpenFollower).
// `hold_for_archive` (--archive): as the writer, its retention drops no raw
// sample until the archive says what it has taken (app/archiver.h).
absl::StatusOr<std::unique_ptr<store::Db>> OpenForServer(const std::string& data_dir,
                                                         util::Clock* clock = nullptr,
                                                         bool hold_for_archive = false);

// `trainwatch admin compact`: every column family compacted, and what it did.
struct CompactionReport {
  double seconds = 0;
  uint64_t bytes_before = 0;  // the db/ folder's files
  uint64_t bytes_after = 0;
  std::vector<std::pair<std::string, uint64_t>> sst_bytes;  // per column family, after
};
// FailedPrecondition when another process writes the folder; NotFound when
// it holds no data.
absl::StatusOr<CompactionReport> CompactDataFolder(const std::string& data_dir);

}  // namespace trainwatch::app
