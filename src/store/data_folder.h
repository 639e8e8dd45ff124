#pragma once
// The data folder on disk and who may write it.
//
//   <data>/
//     format            "trainwatch-data-format <N>\n": the data format of the
//                       folder (kDataFormatVersion below), written when a writer
//                       first opens it and checked at every open
//     writer.lock       held (flock) by the one process that writes; it holds
//                       "pid=<pid>\ncommand=<command line>\nsince_ms=<t>\n"
//     db/               the RocksDB database (with RocksDB's own LOCK)
//     readers/<pid>-<n>/  scratch folder of each read-only follower, removed
//                       when it closes (and, if it died, by the next writer)
//     retention.conf    optional retention rules (store/retention.h)
//
// The writer lock is an advisory flock, released by the kernel when its
// holder dies (kill -9 included), so a crashed writer never blocks the folder.
//
// The format version is a plain file rather than a record in the database so
// that it can be read before RocksDB opens anything (a folder of another format
// may have other column families, and a primary open rewrites the MANIFEST and
// replays the WAL: refusing must leave the folder untouched), and so that a
// person or a script can tell which trainwatch a folder needs with `cat`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainwatch::store {

// The data format this build writes: the layout of the data folder and of
// the records in db/ (docs/format/store.md). Change it when folders written
// by this build would be misread by builds of the previous number, or the
// other way round; keep tests/testdata/format_v<N> for every number this
// build still reads (the test that opens it fails when a change breaks them).
//   1: the first.
//   2: head records may hold decimal lane sections (store/head.cc); format 1
//      records read the same.
inline constexpr int kDataFormatVersion = 2;
// The oldest format this build still reads. A writer opening a folder of an
// older format than kDataFormatVersion marks it kDataFormatVersion before
// writing (builds that read only the older format then refuse it, rather
// than misread what it writes).
inline constexpr int kOldestDataFormatVersion = 1;

struct DataFolderPaths {
  std::string root;
  std::string format;        // root/format
  std::string db;            // root/db
  std::string writer_lock;   // root/writer.lock
  std::string readers;       // root/readers
  std::string retention;     // root/retention.conf
  explicit DataFolderPaths(std::string root_dir);
};

// Who holds the writer lock, as written in the lock file.
struct WriterInfo {
  int64_t pid = 0;
  std::string command;
  int64_t since_ms = 0;
};

// The exclusive writer lock of a data folder. Destroying it releases the lock.
class WriterLock {
 public:
  // Creates `root` (and parents) when missing, then takes the lock without
  // waiting. FailedPrecondition when another process (or another WriterLock in
  // this process) holds it: the message names the holder's pid and command
  // and says what to do. `command` is recorded for the next one to see.
  static absl::StatusOr<std::unique_ptr<WriterLock>> Acquire(const DataFolderPaths& paths,
                                                             const std::string& command,
                                                             int64_t now_ms);
  ~WriterLock();
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  explicit WriterLock(int fd) : fd_(fd) {}
  int fd_;
};

// The folder's data format, from its format file: nullopt when there is none
// (a new folder, or one written before the file existed: format 1 when it has
// a db/). DataLoss naming the file when its first line is not
// "trainwatch-data-format <N>".
absl::StatusOr<std::optional<int>> ReadDataFormat(const DataFolderPaths& paths);

// The folder's format when this build can open it (kOldestDataFormatVersion
// to kDataFormatVersion), nullopt when there is none (a new folder, or one
// from before the file: format 1). FailedPrecondition for any other format,
// naming the folder's format, the ones this build reads and what to do.
// Reads only.
absl::StatusOr<std::optional<int>> CheckDataFormat(const DataFolderPaths& paths);

// Writes the format file ("trainwatch-data-format <kDataFormatVersion>"),
// atomically (a temporary file renamed over it) and durably. Writers only,
// under the lock, before RocksDB creates db/ in a new folder.
absl::Status WriteDataFormat(const DataFolderPaths& paths);

// Reads the lock file's contents (best effort; empty fields when unreadable).
WriterInfo ReadWriterInfo(const DataFolderPaths& paths);

// A fresh scratch folder for a read-only follower: readers/<pid>-<n>.
absl::StatusOr<std::string> MakeReaderScratch(const DataFolderPaths& paths);

// Removes reader scratch folders whose process is gone (called by writers).
void RemoveStaleReaderScratch(const DataFolderPaths& paths);

// The command line of this process ("trainwatch run --name x ..."), from
// /proc/self/cmdline; "pid <n>" when unreadable.
std::string CurrentCommandLine();

}  // namespace trainwatch::store
