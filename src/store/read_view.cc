#include "store/read_view.h"

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "store/job_codec.h"
#include "util/status_macros.h"
#include "util/mutex.h"

namespace trainwatch::store {

namespace {
thread_local int catch_up_holds_of_this_thread = 0;
}  // namespace

CatchUpHold::CatchUpHold(util::SharedMutex& mu) : lock_(mu) { ++catch_up_holds_of_this_thread; }

CatchUpHold::~CatchUpHold() {
  if (lock_.owns_lock()) --catch_up_holds_of_this_thread;
}

int CatchUpHold::HeldByThisThread() { return catch_up_holds_of_this_thread; }

ReadView::ReadView(const kv::Kv* kv, std::shared_ptr<const kv::Snapshot> snapshot,
                   CatchUpHold catch_up_hold,
                   std::shared_ptr<const RetentionPolicy> retention, int64_t now_ms,
                   RollupRecordCache* rollup_cache)
    : kv_(kv),
      snapshot_(std::move(snapshot)),
      catch_up_hold_(std::move(catch_up_hold)),
      retention_(std::move(retention)),
      now_ms_(now_ms),
      rollup_cache_(rollup_cache) {}

ReadView ReadView::Fork() const {
  ReadView fork(kv_, snapshot_, CatchUpHold(), retention_, now_ms_, rollup_cache_);
  // Indexed here once rather than by each fork (a failure is the fork's to
  // meet and report when it reads the head).
  if (IndexedHeadLog().ok()) fork.head_log_ = head_log_;
  return fork;
}

ReadView::~ReadView() {
  // Iterators go before the snapshot they read.
  for (auto& it : cached_) it.reset();
}

kv::Iterator* ReadView::Cached(kv::Cf cf) const {
  auto& it = cached_[static_cast<int>(cf)];
  if (!it) it = NewIterator(cf, "", "");
  return it.get();
}

absl::StatusOr<std::optional<std::string>> ReadView::Get(kv::Cf cf, std::string_view key) const {
  return kv_->Get(cf, key, snapshot_.get());
}

std::unique_ptr<kv::Iterator> ReadView::NewIterator(kv::Cf cf, std::string lower,
                                                    std::string upper, bool fill_cache) const {
  kv::ReadOptions ro;
  ro.lower_bound = std::move(lower);
  ro.upper_bound = std::move(upper);
  ro.snapshot = snapshot_.get();
  ro.fill_cache = fill_cache;
  return kv_->NewIterator(cf, ro);
}

// ---- jobs -------------------------------------------------------------------

absl::StatusOr<std::optional<model::JobRecord>> ReadView::GetJob(std::string_view name) const {
  // The job's key and its hosts' keys (JobHostKey): [key, key + "\x02").
  const std::string key = JobKey(name);
  std::string end = key;
  end.push_back(static_cast<char>(kJobHostSeparator + 1));
  std::vector<model::JobRecord> hosts;
  auto it = NewIterator(kv::Cf::kJobs, key, end);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    TW_ASSIGN_OR_RETURN(model::JobRecord job, DecodeJob(it->value()));
    hosts.push_back(std::move(job));
  }
  TW_RETURN_IF_ERROR(it->status());
  if (hosts.empty()) return std::optional<model::JobRecord>();
  return std::optional<model::JobRecord>(model::MergeHostRecords(std::move(hosts)));
}

absl::Status ReadView::ForEachJob(const std::function<bool(model::JobRecord&&)>& fn) const {
  auto it = NewIterator(kv::Cf::kJobs, "j", "k");
  std::string job_key;  // of the records in `hosts`
  std::vector<model::JobRecord> hosts;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view key = JobKeyOfHostKey(it->key());
    if (!hosts.empty() && key != job_key) {
      if (!fn(model::MergeHostRecords(std::move(hosts)))) return absl::OkStatus();
      hosts.clear();
    }
    job_key = key;
    TW_ASSIGN_OR_RETURN(model::JobRecord job, DecodeJob(it->value()));
    hosts.push_back(std::move(job));
  }
  TW_RETURN_IF_ERROR(it->status());
  if (!hosts.empty()) fn(model::MergeHostRecords(std::move(hosts)));
  return absl::OkStatus();
}

absl::Status ReadView::ForEachAlarm(const std::function<bool(model::AlarmRecord&&)>& fn) const {
  auto it = NewIterator(kv::Cf::kJobs, std::string(kAlarmKeyPrefix), "b");
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    TW_ASSIGN_OR_RETURN(model::AlarmRecord alarm, model::DecodeAlarmRecord(it->value()));
    if (!fn(std::move(alarm))) return absl::OkStatus();
  }
  return it->status();
}

// ---- logs -------------------------------------------------------------------

absl::StatusOr<std::optional<LogGroupInfo>> ReadView::GetLogGroup(std::string_view group) const {
  const std::string key = logkeys::Group(group);
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, Get(kv::Cf::kLogs, key));
  if (!v) return std::optional<LogGroupInfo>();
  LogGroupInfo info;
  if (!logkeys::DecodeGroup(key, *v, &info)) {
    return absl::DataLossError(absl::StrFormat("log group \"%s\": unreadable record", group));
  }
  return std::optional<LogGroupInfo>(std::move(info));
}

absl::Status ReadView::ForEachLogGroup(std::string_view prefix,
                                       const std::function<bool(LogGroupInfo&&)>& fn) const {
  // Group names are escaped byte-for-byte, so a name prefix is a key prefix
  // once the terminator is left off.
  std::string lower = logkeys::GroupPrefix();
  for (char c : prefix) {
    lower.push_back(c);
    if (c == '\0') lower.push_back('\xff');
  }
  auto it = NewIterator(kv::Cf::kLogs, lower, coding::PrefixSuccessor(lower));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    LogGroupInfo info;
    if (!logkeys::DecodeGroup(it->key(), it->value(), &info)) {
      return absl::DataLossError("a log group record is unreadable");
    }
    if (!fn(std::move(info))) break;
  }
  return it->status();
}

absl::StatusOr<std::optional<LogStreamInfo>> ReadView::GetLogStream(std::string_view group,
                                                                   std::string_view stream) const {
  const std::string key = logkeys::Stream(group, stream);
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, Get(kv::Cf::kLogs, key));
  if (!v) return std::optional<LogStreamInfo>();
  LogStreamInfo info;
  if (!logkeys::DecodeStream(key, *v, &info)) {
    return absl::DataLossError(absl::StrFormat(
        "log stream \"%s\" of group \"%s\": unreadable record", stream, group));
  }
  return std::optional<LogStreamInfo>(std::move(info));
}

absl::Status ReadView::ForEachLogStream(std::string_view group, std::string_view prefix,
                                        std::string_view start_after, bool descending,
                                        const std::function<bool(LogStreamInfo&&)>& fn) const {
  const std::string group_prefix = logkeys::StreamPrefix(group);
  // Stream names are escaped byte-for-byte, so a name prefix is a key prefix
  // once the terminator is left off.
  std::string lower = group_prefix;
  for (char c : prefix) {
    lower.push_back(c);
    if (c == '\0') lower.push_back('\xff');
  }
  std::string upper = coding::PrefixSuccessor(lower);
  auto it = NewIterator(kv::Cf::kLogs, lower, upper);
  if (!descending) {
    if (start_after.empty()) {
      it->SeekToFirst();
    } else {
      // Keys of names > start_after: successor of the full key of start_after.
      it->Seek(logkeys::Stream(group, start_after) + std::string(1, '\0'));
    }
  } else {
    if (start_after.empty()) {
      it->SeekToLast();
    } else {
      it->SeekForPrev(logkeys::Stream(group, start_after));
      if (it->Valid() && it->key() == logkeys::Stream(group, start_after)) it->Prev();
    }
  }
  while (it->Valid()) {
    LogStreamInfo info;
    if (!logkeys::DecodeStream(it->key(), it->value(), &info)) {
      return absl::DataLossError(
          absl::StrFormat("a log stream record of group \"%s\" is unreadable", group));
    }
    if (!fn(std::move(info))) break;
    if (descending) {
      it->Prev();
    } else {
      it->Next();
    }
  }
  return it->status();
}

std::unique_ptr<LogCursor> ReadView::NewLogCursor(const LogStreamInfo& stream) const {
  const std::string prefix = logkeys::EventPrefix(stream.id);
  return std::make_unique<LogCursor>(
      NewIterator(kv::Cf::kLogs, prefix, coding::PrefixSuccessor(prefix)), stream.id);
}

void LogCursor::Seek(LogPosition pos) { it_->Seek(logkeys::Event(stream_id_, pos)); }
void LogCursor::SeekForPrev(LogPosition pos) { it_->SeekForPrev(logkeys::Event(stream_id_, pos)); }
void LogCursor::SeekToFirst() { it_->SeekToFirst(); }
void LogCursor::SeekToLast() { it_->SeekToLast(); }
bool LogCursor::Valid() const { return it_->Valid(); }
void LogCursor::Next() { it_->Next(); }
void LogCursor::Prev() { it_->Prev(); }

absl::StatusOr<StoredLogEvent> LogCursor::event() const {
  StoredLogEvent e;
  if (!logkeys::DecodeEvent(it_->key(), it_->value(), &e)) {
    return absl::DataLossError("a log event record is unreadable");
  }
  return e;
}

LogPosition LogCursor::position() const {
  uint64_t id;
  LogPosition pos;
  logkeys::DecodeEventKey(it_->key(), &id, &pos);
  return pos;
}

}  // namespace trainwatch::store
