#include "store/log_store.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::store {
namespace logkeys {

std::string Group(std::string_view group) {
  std::string k = "g";
  coding::PutOrderedString(&k, group);
  return k;
}
std::string GroupPrefix() { return "g"; }

// Value: creation time, then the retention in days (absent: none; older
// binaries read the creation time only).
std::string EncodeGroup(const LogGroupInfo& info) {
  std::string v;
  coding::PutVarintSigned(&v, info.creation_ms);
  if (info.retention_days) coding::PutVarint64(&v, static_cast<uint64_t>(*info.retention_days));
  return v;
}

bool DecodeGroup(std::string_view key, std::string_view value, LogGroupInfo* info) {
  if (key.empty() || key[0] != 'g') return false;
  key.remove_prefix(1);
  if (!coding::GetOrderedString(&key, &info->name)) return false;
  if (!coding::GetVarintSigned(&value, &info->creation_ms)) return false;
  info->retention_days.reset();
  if (!value.empty()) {
    uint64_t days;
    if (!coding::GetVarint64(&value, &days) || days == 0 || days > 100000) return false;
    info->retention_days = static_cast<int>(days);
  }
  return true;
}

std::string Stream(std::string_view group, std::string_view stream) {
  std::string k = StreamPrefix(group);
  coding::PutOrderedString(&k, stream);
  return k;
}

std::string StreamPrefix(std::string_view group) {
  std::string k = "s";
  coding::PutOrderedString(&k, group);
  return k;
}

std::string EventPrefix(uint64_t stream_id) {
  std::string k = "e";
  coding::PutBig64(&k, stream_id);
  return k;
}

std::string Event(uint64_t stream_id, LogPosition pos) {
  std::string k = EventPrefix(stream_id);
  coding::PutOrderedI64(&k, pos.t_ms);
  coding::PutBig64(&k, pos.seq);
  return k;
}

bool DecodeEventKey(std::string_view key, uint64_t* stream_id, LogPosition* pos) {
  if (key.size() != 25 || key[0] != 'e') return false;
  *stream_id = coding::GetBig64(key.data() + 1);
  pos->t_ms = coding::GetOrderedI64(key.data() + 9);
  pos->seq = coding::GetBig64(key.data() + 17);
  return true;
}

std::string EncodeStream(const LogStreamInfo& info) {
  std::string v;
  coding::PutVarint64(&v, 1);  // version
  coding::PutVarint64(&v, info.id);
  coding::PutVarintSigned(&v, info.creation_ms);
  uint64_t flags = (info.first_event_ms ? 1 : 0) | (info.last_event_ms ? 2 : 0) |
                   (info.last_ingestion_ms ? 4 : 0);
  coding::PutVarint64(&v, flags);
  if (info.first_event_ms) coding::PutVarintSigned(&v, *info.first_event_ms);
  if (info.last_event_ms) coding::PutVarintSigned(&v, *info.last_event_ms);
  if (info.last_ingestion_ms) coding::PutVarintSigned(&v, *info.last_ingestion_ms);
  coding::PutVarint64(&v, info.event_count);
  coding::PutVarint64(&v, info.stored_bytes);
  return v;
}

bool DecodeStream(std::string_view key, std::string_view value, LogStreamInfo* info) {
  if (key.empty() || key[0] != 's') return false;
  key.remove_prefix(1);
  if (!coding::GetOrderedString(&key, &info->group)) return false;
  if (!coding::GetOrderedString(&key, &info->stream)) return false;
  uint64_t version, flags;
  if (!coding::GetVarint64(&value, &version) || version != 1) return false;
  if (!coding::GetVarint64(&value, &info->id)) return false;
  if (!coding::GetVarintSigned(&value, &info->creation_ms)) return false;
  if (!coding::GetVarint64(&value, &flags)) return false;
  int64_t t;
  info->first_event_ms.reset();
  info->last_event_ms.reset();
  info->last_ingestion_ms.reset();
  if (flags & 1) {
    if (!coding::GetVarintSigned(&value, &t)) return false;
    info->first_event_ms = t;
  }
  if (flags & 2) {
    if (!coding::GetVarintSigned(&value, &t)) return false;
    info->last_event_ms = t;
  }
  if (flags & 4) {
    if (!coding::GetVarintSigned(&value, &t)) return false;
    info->last_ingestion_ms = t;
  }
  return coding::GetVarint64(&value, &info->event_count) &&
         coding::GetVarint64(&value, &info->stored_bytes);
}

bool DecodeEvent(std::string_view key, std::string_view value, StoredLogEvent* event) {
  uint64_t stream_id;
  if (!DecodeEventKey(key, &stream_id, &event->pos)) return false;
  if (!coding::GetVarintSigned(&value, &event->ingestion_ms)) return false;
  event->message.assign(value.data(), value.size());
  return true;
}

}  // namespace logkeys

absl::Status Counter::Load(const kv::Kv& kv) {
  TW_ASSIGN_OR_RETURN(std::optional<std::string> v, kv.Get(kv::Cf::kMeta, key_));
  if (v && v->size() == 8) {
    next_ = coding::GetBig64(v->data());
  } else {
    next_ = 1;
  }
  hwm_ = next_;
  return absl::OkStatus();
}

uint64_t Counter::Reserve(uint64_t n, kv::WriteBatch* batch) {
  if (next_ + n > hwm_) {
    hwm_ = next_ + n + reserve_;
    std::string v;
    coding::PutBig64(&v, hwm_);
    batch->Put(kv::Cf::kMeta, key_, v);
  }
  uint64_t first = next_;
  next_ += n;
  return first;
}

absl::Status LogWriter::Load() {
  TW_RETURN_IF_ERROR(seq_.Load(*kv_));
  return stream_ids_.Load(*kv_);
}

absl::StatusOr<std::optional<LogGroupInfo>*> LogWriter::Group(std::string_view group) {
  auto it = groups_.find(group);
  if (it != groups_.end()) return &it->second;
  const std::string key = logkeys::Group(group);
  TW_ASSIGN_OR_RETURN(std::optional<std::string> stored, kv_->Get(kv::Cf::kLogs, key));
  std::optional<LogGroupInfo> info;
  if (stored) {
    info.emplace();
    if (!logkeys::DecodeGroup(key, *stored, &*info)) {
      return absl::DataLossError(
          absl::StrFormat("log group \"%s\" has an unreadable record", group));
    }
  }
  if (!info) ++remembered_misses_;
  return &groups_.emplace(std::string(group), std::move(info)).first->second;
}

absl::StatusOr<std::optional<LogStreamInfo>*> LogWriter::FindStream(const model::LogStreamId& id) {
  auto it = streams_.find(id);
  if (it != streams_.end()) return &it->second;
  const std::string key = logkeys::Stream(id.group, id.stream);
  TW_ASSIGN_OR_RETURN(std::optional<std::string> stored, kv_->Get(kv::Cf::kLogs, key));
  std::optional<LogStreamInfo> info;
  if (stored) {
    info.emplace();
    if (!logkeys::DecodeStream(key, *stored, &*info)) {
      return absl::DataLossError(absl::StrFormat(
          "log stream \"%s\" of group \"%s\" has an unreadable record", id.stream, id.group));
    }
  }
  if (!info) ++remembered_misses_;
  return &streams_.emplace(id, std::move(info)).first->second;
}

void LogWriter::ForgetMisses() {
  if (remembered_misses_ <= kMaxRememberedMisses) return;
  std::erase_if(streams_, [](const auto& e) { return !e.second.has_value(); });
  std::erase_if(groups_, [](const auto& e) { return !e.second.has_value(); });
  remembered_misses_ = 0;
}

void LogWriter::PutGroup(const LogGroupInfo& info, kv::WriteBatch* batch) {
  batch->Put(kv::Cf::kLogs, logkeys::Group(info.name), logkeys::EncodeGroup(info));
}

LogStreamInfo* LogWriter::AddStream(const model::LogStreamId& id, int64_t now_ms,
                                    kv::WriteBatch* batch) {
  LogStreamInfo info;
  info.group = id.group;
  info.stream = id.stream;
  info.id = stream_ids_.Next(batch);
  info.creation_ms = now_ms;
  batch->Put(kv::Cf::kLogs, logkeys::Stream(id.group, id.stream), logkeys::EncodeStream(info));
  std::optional<LogStreamInfo>& slot = streams_[id];
  slot = std::move(info);
  return &*slot;
}

absl::StatusOr<LogStreamInfo*> LogWriter::Stream(const model::LogStreamId& id, int64_t now_ms,
                                                 kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogStreamInfo>* stream, FindStream(id));
  if (stream->has_value()) return &**stream;
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(id.group));
  if (!group->has_value()) {
    *group = LogGroupInfo{id.group, now_ms, std::nullopt};
    PutGroup(**group, batch);
  }
  return AddStream(id, now_ms, batch);
}

absl::StatusOr<LogChange> LogWriter::CreateGroup(std::string_view name, int64_t now_ms,
                                                 kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(name));
  if (group->has_value()) return LogChange::kExists;
  *group = LogGroupInfo{std::string(name), now_ms, std::nullopt};
  PutGroup(**group, batch);
  return LogChange::kDone;
}

absl::StatusOr<LogChange> LogWriter::CreateStream(const model::LogStreamId& id, int64_t now_ms,
                                                  kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(id.group));
  if (!group->has_value()) return LogChange::kNoGroup;
  TW_ASSIGN_OR_RETURN(std::optional<LogStreamInfo>* stream, FindStream(id));
  if (stream->has_value()) return LogChange::kExists;
  AddStream(id, now_ms, batch);
  return LogChange::kDone;
}

void LogWriter::DeleteStreamRecords(const LogStreamInfo& info, kv::WriteBatch* batch) {
  // Stream ids are never reused, so the events go with one range delete.
  batch->Delete(kv::Cf::kLogs, logkeys::Stream(info.group, info.stream));
  batch->DeleteRange(kv::Cf::kLogs, logkeys::EventPrefix(info.id),
                     logkeys::EventPrefix(info.id + 1));
}

absl::StatusOr<LogChange> LogWriter::DeleteStream(const model::LogStreamId& id,
                                                  kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(id.group));
  if (!group->has_value()) return LogChange::kNoGroup;
  TW_ASSIGN_OR_RETURN(std::optional<LogStreamInfo>* stream, FindStream(id));
  if (!stream->has_value()) return LogChange::kNoStream;
  DeleteStreamRecords(**stream, batch);
  stream->reset();
  ++remembered_misses_;
  return LogChange::kDone;
}

absl::StatusOr<LogChange> LogWriter::DeleteGroup(std::string_view name, kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(name));
  if (!group->has_value()) return LogChange::kNoGroup;
  // The group's streams: those stored, and those created since (in the
  // table only, when this commit created them).
  std::vector<model::LogStreamId> ids;
  {
    const std::string prefix = logkeys::StreamPrefix(name);
    kv::ReadOptions ro;
    ro.lower_bound = prefix;
    ro.upper_bound = coding::PrefixSuccessor(prefix);
    auto it = kv_->NewIterator(kv::Cf::kLogs, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LogStreamInfo info;
      if (!logkeys::DecodeStream(it->key(), it->value(), &info)) {
        return absl::DataLossError(
            absl::StrFormat("a log stream record of group \"%s\" is unreadable", name));
      }
      ids.push_back({info.group, info.stream});
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  for (auto it = streams_.lower_bound({std::string(name), ""});
       it != streams_.end() && it->first.group == name; ++it) {
    ids.push_back(it->first);
  }
  for (const model::LogStreamId& id : ids) {
    TW_ASSIGN_OR_RETURN(std::optional<LogStreamInfo>* stream, FindStream(id));
    if (!stream->has_value()) continue;
    DeleteStreamRecords(**stream, batch);
    stream->reset();
  ++remembered_misses_;
  }
  batch->Delete(kv::Cf::kLogs, logkeys::Group(name));
  group->reset();
  ++remembered_misses_;
  return LogChange::kDone;
}

absl::StatusOr<LogChange> LogWriter::SetRetention(std::string_view name, std::optional<int> days,
                                                  kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(name));
  if (!group->has_value()) return LogChange::kNoGroup;
  (*group)->retention_days = days;
  PutGroup(**group, batch);
  return LogChange::kDone;
}

namespace {

// The expired events of one stream, read from `kv`: nullopt when there is
// nothing to change (no event before the cutoff, and the recorded first time
// is not stale).
absl::StatusOr<std::optional<LogExpiry>> PlanStream(const kv::Kv& kv, const LogStreamInfo& info,
                                                    int retention_days, int64_t cutoff_ms) {
  const std::string prefix = logkeys::EventPrefix(info.id);
  kv::ReadOptions ro;
  ro.lower_bound = prefix;
  ro.upper_bound = coding::PrefixSuccessor(prefix);
  ro.fill_cache = false;
  auto it = kv.NewIterator(kv::Cf::kLogs, ro);
  LogExpiry plan;
  plan.stream = {info.group, info.stream};
  plan.stream_id = info.id;
  plan.retention_days = retention_days;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint64_t stream_id;
    LogPosition pos;
    if (!logkeys::DecodeEventKey(it->key(), &stream_id, &pos)) {
      util::LogOnce("log-expiry-unreadable-key",
                    absl::StrFormat("log retention: an event key of stream \"%s\" of group "
                                    "\"%s\" is unreadable; that stream's events are kept",
                                    info.stream, info.group));
      return std::optional<LogExpiry>();
    }
    if (pos.t_ms >= cutoff_ms) {
      plan.first_kept_ms = pos.t_ms;
      break;
    }
    if (!plan.first_deleted_ms) plan.first_deleted_ms = pos.t_ms;
    plan.last_deleted = pos;
    std::string_view value = it->value();
    int64_t ingestion_ms;
    if (coding::GetVarintSigned(&value, &ingestion_ms)) plan.bytes += value.size();
    ++plan.events;
  }
  TW_RETURN_IF_ERROR(it->status());
  return std::optional<LogExpiry>(std::move(plan));
}

}  // namespace

absl::StatusOr<std::vector<LogExpiry>> PlanLogExpiry(const kv::Kv& kv, int64_t now_ms,
                                                     int64_t hold_ms) {
  constexpr int64_t kDayMs = 86400 * 1000LL;
  std::vector<LogExpiry> out;
  std::vector<LogGroupInfo> groups;
  {
    kv::ReadOptions ro;
    ro.lower_bound = logkeys::GroupPrefix();
    ro.upper_bound = coding::PrefixSuccessor(logkeys::GroupPrefix());
    auto it = kv.NewIterator(kv::Cf::kLogs, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LogGroupInfo info;
      if (!logkeys::DecodeGroup(it->key(), it->value(), &info)) {
        util::LogOnce("log-expiry-unreadable-group",
                      "log retention: a log group record is unreadable; its events are kept");
        continue;
      }
      if (info.retention_days) groups.push_back(std::move(info));
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  for (const LogGroupInfo& group : groups) {
    // The hold is the archive's, which takes the training jobs' group only.
    const int64_t cutoff_ms = group.name == model::kTrainingJobsLogGroup
                                  ? std::min(now_ms - *group.retention_days * kDayMs, hold_ms)
                                  : now_ms - *group.retention_days * kDayMs;
    const std::string prefix = logkeys::StreamPrefix(group.name);
    kv::ReadOptions ro;
    ro.lower_bound = prefix;
    ro.upper_bound = coding::PrefixSuccessor(prefix);
    auto it = kv.NewIterator(kv::Cf::kLogs, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LogStreamInfo info;
      if (!logkeys::DecodeStream(it->key(), it->value(), &info)) {
        util::LogOnce("log-expiry-unreadable-stream",
                      absl::StrFormat("log retention: a log stream record of group \"%s\" is "
                                      "unreadable; its events are kept",
                                      group.name));
        continue;
      }
      if (!info.first_event_ms || *info.first_event_ms >= cutoff_ms) continue;
      TW_ASSIGN_OR_RETURN(std::optional<LogExpiry> plan,
                          PlanStream(kv, info, *group.retention_days, cutoff_ms));
      if (plan) out.push_back(*std::move(plan));
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  return out;
}

absl::StatusOr<uint64_t> LogWriter::ApplyExpiry(const std::vector<LogExpiry>& plan,
                                                kv::WriteBatch* batch) {
  uint64_t deleted = 0;
  for (const LogExpiry& e : plan) {
    TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(e.stream.group));
    if (!group->has_value() || (*group)->retention_days != e.retention_days) continue;
    TW_ASSIGN_OR_RETURN(std::optional<LogStreamInfo>* stream, FindStream(e.stream));
    if (!stream->has_value() || (*stream)->id != e.stream_id) continue;
    LogStreamInfo& info = **stream;
    if (e.events > 0) {
      // From the first event's time to just after the last event read, so
      // that successive expiries' range deletes do not nest (see Db::SealJob
      // on what nested ones cost). The start key leaves the sequence number
      // off (kv.cc: InsertHintShape).
      std::string begin = logkeys::EventPrefix(info.id);
      coding::PutOrderedI64(&begin, *e.first_deleted_ms);
      batch->DeleteRange(kv::Cf::kLogs, begin,
                         logkeys::Event(info.id, {e.last_deleted.t_ms, e.last_deleted.seq + 1}));
      info.event_count -= std::min(info.event_count, e.events);
      info.stored_bytes -= std::min(info.stored_bytes, e.bytes);
      deleted += e.events;
    }
    // The first time left: the first event read that is kept; events
    // written since are later than it or the stream's last.
    std::optional<int64_t> first = e.first_kept_ms;
    if (!first && info.event_count > 0) first = info.last_event_ms;
    if (first == info.first_event_ms && e.events == 0) continue;
    info.first_event_ms = first;
    batch->Put(kv::Cf::kLogs, logkeys::Stream(info.group, info.stream),
               logkeys::EncodeStream(info));
  }
  return deleted;
}

absl::Status LogWriter::Prepare(const model::LogBatch& logs, int64_t ingestion_ms,
                                kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(LogStreamInfo * info, Stream(logs.stream, ingestion_ms, batch));
  // Events older than the group's retention are not stored (PutLogEvents
  // reports them as expired; an agent's are dropped here).
  TW_ASSIGN_OR_RETURN(std::optional<LogGroupInfo>* group, Group(logs.stream.group));
  const int64_t oldest_ms = group->has_value() && (*group)->retention_days
                                ? ingestion_ms - *(*group)->retention_days * 86400000LL
                                : INT64_MIN;
  if (logs.events.empty()) {
    batch->Put(kv::Cf::kLogs, logkeys::Stream(info->group, info->stream),
               logkeys::EncodeStream(*info));
    return absl::OkStatus();
  }
  std::string value;
  for (const model::LogEvent& e : logs.events) {
    if (e.t_ms < oldest_ms) continue;
    LogPosition pos{e.t_ms, seq_.Next(batch)};
    value.clear();
    coding::PutVarintSigned(&value, ingestion_ms);
    value.append(e.message);
    batch->Put(kv::Cf::kLogs, logkeys::Event(info->id, pos), value);
    info->first_event_ms = info->first_event_ms ? std::min(*info->first_event_ms, e.t_ms) : e.t_ms;
    info->last_event_ms = info->last_event_ms ? std::max(*info->last_event_ms, e.t_ms) : e.t_ms;
    info->event_count++;
    info->stored_bytes += e.message.size();
  }
  info->last_ingestion_ms = ingestion_ms;
  batch->Put(kv::Cf::kLogs, logkeys::Stream(info->group, info->stream),
             logkeys::EncodeStream(*info));
  return absl::OkStatus();
}

}  // namespace trainwatch::store
