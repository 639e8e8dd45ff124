#include "store/log_store.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "store/coding.h"
#include "util/status_macros.h"

namespace trainwatch::store {
namespace logkeys {

std::string Group(std::string_view group) {
  std::string k = "g";
  coding::PutOrderedString(&k, group);
  return k;
}
std::string GroupPrefix() { return "g"; }

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

absl::StatusOr<LogStreamInfo*> LogWriter::Stream(const model::LogStreamId& id, int64_t now_ms,
                                                 kv::WriteBatch* batch) {
  auto it = streams_.find(id);
  if (it != streams_.end()) return &it->second;
  LogStreamInfo info;
  const std::string key = logkeys::Stream(id.group, id.stream);
  TW_ASSIGN_OR_RETURN(std::optional<std::string> stored, kv_->Get(kv::Cf::kLogs, key));
  if (stored) {
    if (!logkeys::DecodeStream(key, *stored, &info)) {
      return absl::DataLossError(absl::StrFormat(
          "log stream \"%s\" of group \"%s\" has an unreadable record", id.stream, id.group));
    }
  } else {
    auto g = groups_.find(id.group);
    if (g == groups_.end()) {
      const std::string gkey = logkeys::Group(id.group);
      TW_ASSIGN_OR_RETURN(std::optional<std::string> group, kv_->Get(kv::Cf::kLogs, gkey));
      if (!group) {
        std::string v;
        coding::PutVarintSigned(&v, now_ms);
        batch->Put(kv::Cf::kLogs, gkey, v);
      }
      groups_[id.group] = true;
    }
    info.group = id.group;
    info.stream = id.stream;
    info.id = stream_ids_.Next(batch);
    info.creation_ms = now_ms;
  }
  return &streams_.emplace(id, std::move(info)).first->second;
}

absl::Status LogWriter::Prepare(const model::LogBatch& logs, int64_t ingestion_ms,
                                kv::WriteBatch* batch) {
  TW_ASSIGN_OR_RETURN(LogStreamInfo * info, Stream(logs.stream, ingestion_ms, batch));
  if (logs.events.empty()) {
    batch->Put(kv::Cf::kLogs, logkeys::Stream(info->group, info->stream),
               logkeys::EncodeStream(*info));
    return absl::OkStatus();
  }
  std::string value;
  for (const model::LogEvent& e : logs.events) {
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
