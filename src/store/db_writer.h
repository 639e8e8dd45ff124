#pragma once
// Db::Writer: one write waiting in Db's group commit queue (db.h, Submit).
// Private to Db's implementation files (db.cc, db_commit.cc).

#include <condition_variable>
#include <functional>
#include <string>
#include <vector>

#include "store/db.h"
#include "util/mutex.h"

namespace trainwatch::store {

struct Db::Writer {
  enum class Kind {
    kSamples, kLogs, kCreateJob, kUpdateJob, kRuleStatuses, kStopRequest, kMaintain, kSealAll,
    kStats, kCall
  } kind;
  std::function<absl::Status(kv::WriteBatch*)> call;
  const model::SampleBatch* samples = nullptr;
  // samples' keys, Canonical(): the batch's own canonical_keys, or made by
  // the writer's own thread before it queues (the leader's work is what
  // every writer waits for) and kept in canonical_made.
  const std::vector<std::string>* canonical = nullptr;
  std::vector<std::string> canonical_made;
  const model::LogBatch* logs = nullptr;
  const model::JobRecord* job = nullptr;
  // kUpdateJob: write only if the stored record is still as read (UpdateJobIfUnchanged).
  const model::JobRecord* as_read = nullptr;
  int64_t stop_ms = 0;  // kStopRequest
  HeadStats* stats = nullptr;
  const Delivery* delivery = nullptr;
  bool duplicate = false;  // set for a delivery seen before: nothing written
  absl::Status status;
  bool done = false;
  std::condition_variable cv;
};

}  // namespace trainwatch::store
