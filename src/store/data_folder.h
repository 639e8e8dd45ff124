#pragma once
// The data folder on disk and who may write it.
//
//   <data>/
//     writer.lock       held (flock) by the one process that writes; it holds
//                       "pid=<pid>\ncommand=<command line>\nsince_ms=<t>\n"
//     db/               the RocksDB database (with RocksDB's own LOCK)
//     readers/<pid>-<n>/  scratch folder of each read-only follower, removed
//                       when it closes (and, if it died, by the next writer)
//     retention.conf    optional retention rules (store/retention.h)
//
// The writer lock is an advisory flock, released by the kernel when its
// holder dies (kill -9 included), so a crashed writer never blocks the folder.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace trainwatch::store {

struct DataFolderPaths {
  std::string root;
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
