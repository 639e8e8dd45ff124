#pragma once
// Spool: the agent's durable, bounded FIFO of batches waiting for the server.
//
// A folder holding:
//   lock              flock()ed by the process that owns the spool, so that a
//                     server finding the folder can tell a live agent's spool
//                     from one left behind (and deliver the latter itself);
//   target            the endpoint URL the batches are for, and on a second
//                     line whose server that is (RemoteSinkOptions);
//   <first seq>.seg   append-only segments of records
//                     [u32 length][u32 crc32 of seq+payload][i64 seq][payload],
//                     little-endian; a new segment every 16 MiB;
//   acked             the highest seq the server has taken (text).
// Append returns once the record is on disk (fdatasync): "accepted by a
// durable spool" (model/sinks.h). A torn record at the end of the last
// segment (a crash mid-append) is cut off on open; a record whose checksum
// fails elsewhere is skipped with a warning.
//
// Thread-safe: one appender and one sender may use it at once.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "util/mutex.h"

namespace trainwatch::agent {

class Spool {
 public:
  struct Record {
    int64_t seq = 0;
    std::string payload;
  };

  // Opens (creating) the spool in `dir` and takes its lock; FailedPrecondition
  // when another live process holds it. `max_bytes` bounds the bytes on disk
  // not yet acknowledged.
  static absl::StatusOr<std::unique_ptr<Spool>> Open(const std::string& dir, int64_t max_bytes);
  ~Spool();

  // The seq the next Append will get.
  int64_t next_seq() const;
  // Appends a record with seq next_seq() (its payload must carry that seq if
  // the receiver needs it: `make(seq)` builds it). ResourceExhausted when the
  // spool is full; nothing is written then.
  absl::StatusOr<int64_t> Append(const std::function<std::string(int64_t seq)>& make);

  // The oldest record not acknowledged, waiting up to `wait_ms` for one;
  // nullopt when none came.
  absl::StatusOr<std::optional<Record>> Front(int64_t wait_ms);
  // The server took everything up to `seq`: drops it (whole segments are deleted).
  absl::Status Ack(int64_t seq);

  int64_t acked() const;
  // Records appended and not acknowledged.
  int64_t pending() const;
  int64_t pending_bytes() const;
  const std::string& dir() const { return dir_; }
  // Wakes a Front() that waits (for shutdown).
  void Interrupt();

 private:
  struct Segment {
    int64_t first_seq = 0;
    int64_t last_seq = 0;  // first_seq - 1 while empty
    std::string path;
    int64_t bytes = 0;
    // seq -> offset of the record, for the records not yet acked.
    std::map<int64_t, int64_t> offsets;
  };
  Spool(std::string dir, int64_t max_bytes, int lock_fd);
  absl::Status Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status OpenSegmentForAppend(int64_t first_seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteAcked(int64_t seq);

  const std::string dir_;
  const int64_t max_bytes_;
  int lock_fd_ = -1;
  int append_fd_ = -1;

  mutable util::Mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Segment> segments_ ABSL_GUARDED_BY(mu_);  // by first seq
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t acked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainwatch::agent
