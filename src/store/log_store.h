#pragma once
// Log storage: groups -> streams -> events (the CloudWatch Logs analogue).
//
// Keys in the logs column family (layout: docs/format/store.md):
//   "g" group                              -> group record (creation time, retention)
//   "s" group stream                       -> stream record (id, times, counts)
//   "e" stream-id t_ms seq                 -> event (ingestion time, message)
// (strings order-preserving escaped, numbers big-endian). Events of a stream
// sort by (t_ms, seq): by timestamp, and in arrival order among equal
// timestamps. seq is unique and increasing across the whole database, so it
// also serves as CloudWatch's eventId and as a resume position.
//
// The writer side (LogWriter) is used by Db's write path only; readers use
// the functions on ReadView (store/read_view.h).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "model/log_event.h"
#include "store/kv/kv.h"

namespace trainwatch::store {

struct LogGroupInfo {
  std::string name;
  int64_t creation_ms = 0;
  // Events older than this many days are deleted (PlanLogExpiry);
  // absent: kept for ever.
  std::optional<int> retention_days;
};

struct LogStreamInfo {
  std::string group;
  std::string stream;
  uint64_t id = 0;
  int64_t creation_ms = 0;
  // Absent while the stream has no events.
  std::optional<int64_t> first_event_ms;
  std::optional<int64_t> last_event_ms;
  std::optional<int64_t> last_ingestion_ms;
  uint64_t event_count = 0;
  uint64_t stored_bytes = 0;  // message bytes
};

// A position among a stream's events; events order by (t_ms, seq).
struct LogPosition {
  int64_t t_ms = 0;
  uint64_t seq = 0;
  friend bool operator==(const LogPosition&, const LogPosition&) = default;
  friend auto operator<=>(const LogPosition&, const LogPosition&) = default;
};

struct StoredLogEvent {
  LogPosition pos;
  int64_t ingestion_ms = 0;
  std::string message;
};

namespace logkeys {
std::string Group(std::string_view group);
std::string GroupPrefix();
std::string EncodeGroup(const LogGroupInfo& info);
bool DecodeGroup(std::string_view key, std::string_view value, LogGroupInfo* info);
std::string Stream(std::string_view group, std::string_view stream);
std::string StreamPrefix(std::string_view group);  // every stream of the group
std::string Event(uint64_t stream_id, LogPosition pos);
std::string EventPrefix(uint64_t stream_id);
bool DecodeEventKey(std::string_view key, uint64_t* stream_id, LogPosition* pos);
std::string EncodeStream(const LogStreamInfo& info);
bool DecodeStream(std::string_view key, std::string_view value, LogStreamInfo* info);
bool DecodeEvent(std::string_view key, std::string_view value, StoredLogEvent* event);
}  // namespace logkeys

// Sequence numbers handed out by the writer, with their high-water mark kept
// in the meta column family so they never repeat after a restart.
class Counter {
 public:
  Counter(std::string meta_key, uint64_t reserve) : key_(std::move(meta_key)), reserve_(reserve) {}
  // Loads the high-water mark (first value after a restart).
  absl::Status Load(const kv::Kv& kv);
  // The next value; adds the new high-water mark to `batch` when needed.
  uint64_t Next(kv::WriteBatch* batch) { return Reserve(1, batch); }
  // The first of `n` consecutive values.
  uint64_t Reserve(uint64_t n, kv::WriteBatch* batch);
  uint64_t peek() const { return next_; }

 private:
  std::string key_;
  uint64_t reserve_;
  uint64_t next_ = 1;
  uint64_t hwm_ = 1;
};

// One stream's events older than its group's retention, as found by a scan
// outside the write leader (PlanLogExpiry); LogWriter::ApplyExpiry deletes
// them in the leader.
struct LogExpiry {
  model::LogStreamId stream;
  uint64_t stream_id = 0;  // skipped when the stream was deleted or made anew since
  int retention_days = 0;  // skipped when the group's retention changed since
  std::optional<int64_t> first_deleted_ms;  // the events to delete: from here
  LogPosition last_deleted;                 // to here, inclusive
  uint64_t events = 0;
  uint64_t bytes = 0;
  std::optional<int64_t> first_kept_ms;  // the first event left, if any was read
};

// Reads the expired events of every stream of every group with a retention,
// at `now_ms`; events of the training jobs' group (the archive's) at or after
// `hold_ms` are kept whatever the retention (Db::SetRetentionHold). Only reads `kv`: it runs beside the writers.
// Unreadable records are skipped (logged once), so that one cannot stop the
// store.
absl::StatusOr<std::vector<LogExpiry>> PlanLogExpiry(const kv::Kv& kv, int64_t now_ms,
                                                     int64_t hold_ms);

// What a change to a group or stream found: it was made only when kDone.
enum class LogChange {
  kDone,
  kExists,    // a create found the group or stream there already
  kNoGroup,   // the group does not exist
  kNoStream,  // the stream does not exist
};

// The writer side. Not thread-safe: the Db's write leader calls it.
//
// Each method adds its writes to `batch`, which the caller commits together
// with other writers' batches: the in-memory tables below are updated at once
// and are what later calls of the same commit see. Callers must not reuse the
// LogWriter after a failed write of `batch` (the Db stops writing then).
class LogWriter {
 public:
  explicit LogWriter(kv::Kv* kv) : kv_(kv), seq_("log_seq", 1 << 16), stream_ids_("log_stream_id", 256) {}
  absl::Status Load();
  // Adds the events (already validated and split by ingest) to `batch`,
  // creating the group and stream on first use.
  absl::Status Prepare(const model::LogBatch& logs, int64_t ingestion_ms, kv::WriteBatch* batch);

  // CloudWatch Logs' explicit changes. Errors are storage errors; what the
  // change found is the LogChange.
  absl::StatusOr<LogChange> CreateGroup(std::string_view group, int64_t now_ms,
                                        kv::WriteBatch* batch);
  absl::StatusOr<LogChange> CreateStream(const model::LogStreamId& id, int64_t now_ms,
                                         kv::WriteBatch* batch);
  // Deletes the group with its streams and their events.
  absl::StatusOr<LogChange> DeleteGroup(std::string_view group, kv::WriteBatch* batch);
  // Deletes the stream with its events.
  absl::StatusOr<LogChange> DeleteStream(const model::LogStreamId& id, kv::WriteBatch* batch);
  // Sets (nullopt: removes) the group's retention.
  absl::StatusOr<LogChange> SetRetention(std::string_view group, std::optional<int> days,
                                         kv::WriteBatch* batch);
  // Deletes what PlanLogExpiry found, and updates those streams' first event,
  // counts and bytes. Events written since the plan are never in its ranges:
  // Prepare does not store retention-old events. Returns the number deleted.
  absl::StatusOr<uint64_t> ApplyExpiry(const std::vector<LogExpiry>& plan, kv::WriteBatch* batch);
  // Drops what it remembers of groups and streams that do not exist once
  // there are more than kMaxRememberedMisses (requests naming streams that
  // do not exist grew it without bound). Only between writes: a delete in a
  // batch not yet written is known here alone.
  void ForgetMisses();
  static constexpr size_t kMaxRememberedMisses = 4096;
  // Groups and streams remembered (for tests).
  size_t remembered() const { return streams_.size() + groups_.size(); }

 private:
  // The group's record, or nullopt when it does not exist.
  absl::StatusOr<std::optional<LogGroupInfo>*> Group(std::string_view group);
  // The stream's record, or nullopt when it does not exist.
  absl::StatusOr<std::optional<LogStreamInfo>*> FindStream(const model::LogStreamId& id);
  // The stream's record, created (with its group) when missing.
  absl::StatusOr<LogStreamInfo*> Stream(const model::LogStreamId& id, int64_t now_ms,
                                        kv::WriteBatch* batch);
  void PutGroup(const LogGroupInfo& info, kv::WriteBatch* batch);
  LogStreamInfo* AddStream(const model::LogStreamId& id, int64_t now_ms, kv::WriteBatch* batch);
  void DeleteStreamRecords(const LogStreamInfo& info, kv::WriteBatch* batch);
  kv::Kv* kv_;
  Counter seq_;
  Counter stream_ids_;
  // Records read or written since Load; nullopt: known not to exist (deleted,
  // or looked up and missing).
  std::map<model::LogStreamId, std::optional<LogStreamInfo>> streams_;
  std::map<std::string, std::optional<LogGroupInfo>, std::less<>> groups_;
  size_t remembered_misses_ = 0;  // nullopt entries made since the last ForgetMisses (about)
};

}  // namespace trainwatch::store
