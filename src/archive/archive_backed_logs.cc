#include "archive/archive_backed_logs.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "model/log_event.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::archive {
namespace {

// A page as the data folder's reader fills one: at most `limit` events and,
// past the first, `max_bytes` of messages plus overhead.
class Page {
 public:
  explicit Page(const query::LogReadQuery& q) : limit_(q.limit), max_bytes_(q.max_bytes) {}
  bool Take(const query::StoredLogEvent& e) {
    const size_t size = e.message.size() + query::kLogEventOverheadBytes;
    if (events.size() >= limit_ || (!events.empty() && bytes_ + size > max_bytes_)) return false;
    bytes_ += size;
    events.push_back(e);
    return true;
  }
  size_t bytes() const { return bytes_; }
  std::vector<query::StoredLogEvent> events;

 private:
  size_t limit_;
  size_t max_bytes_;
  size_t bytes_ = 0;
};

bool InRange(const query::LogReadQuery& q, int64_t t_ms) {
  return (!q.start_ms || t_ms >= *q.start_ms) && (!q.end_ms || t_ms < *q.end_ms);
}

}  // namespace

std::shared_ptr<const std::vector<query::StoredLogEvent>> ArchiveBackedLogsReader::ArchivedStream(
    const model::LogStreamId& stream) {
  if (stream.group != model::kTrainingJobsLogGroup) return nullptr;
  // A job's streams are "<job>/algo-<n>-<epoch s>" (job names hold no '/').
  const size_t slash = stream.stream.find('/');
  if (slash == std::string::npos || slash == 0) return nullptr;
  const std::string job = stream.stream.substr(0, slash);
  if (!archive_->ServesJob(jobs_, job)) return nullptr;
  absl::StatusOr<std::shared_ptr<const ArchivedLogs>> logs = archive_->LoadLogs(job);
  if (!logs.ok()) {
    util::LogOnce("archive-read-logs",
                  absl::StrFormat("reading job %s's logs from the archive: %s; answering from the "
                                  "data folder alone",
                                  job, logs.status().message()));
    return nullptr;
  }
  auto it = (*logs)->streams.find(stream.stream);
  if (it == (*logs)->streams.end()) return nullptr;
  // Shares ownership of the whole set (the reader's cache may drop it).
  return std::shared_ptr<const std::vector<query::StoredLogEvent>>(*logs, &it->second);
}

absl::StatusOr<std::vector<query::StoredLogEvent>> ArchiveBackedLogsReader::ReadLogStream(
    const query::LogReadQuery& q) {
  // Only a group with a retention loses events: the folder has all the
  // others' (and the archive is not asked).
  if (q.stream.group != model::kTrainingJobsLogGroup) return local_->ReadLogStream(q);
  absl::StatusOr<std::optional<int>> retention = local_->LogGroupRetention(q.stream.group);
  if (!retention.ok() || !retention->has_value()) return local_->ReadLogStream(q);
  // The folder's first event: the archive's events before it are the ones
  // retention dropped (all of them when the folder has none left). A stream
  // the folder does not have (deleted, or never written) is not found.
  query::LogReadQuery first;
  first.stream = q.stream;
  first.limit = 1;
  TW_ASSIGN_OR_RETURN(std::vector<query::StoredLogEvent> head, local_->ReadLogStream(first));
  std::shared_ptr<const std::vector<query::StoredLogEvent>> archived = ArchivedStream(q.stream);
  if (archived == nullptr) return local_->ReadLogStream(q);
  const int64_t boundary_ms = head.empty() ? INT64_MAX : head.front().position.t_ms;
  const auto older_end = std::lower_bound(
      archived->begin(), archived->end(), boundary_ms,
      [](const query::StoredLogEvent& e, int64_t t) { return e.position.t_ms < t; });
  if (older_end == archived->begin()) return local_->ReadLogStream(q);
  const query::LogPosition last_archived = (older_end - 1)->position;
  // `from` in the archive's part: the folder's events all come after it.
  const bool from_in_archive = q.from && *q.from <= last_archived;
  auto with_stream = [&](query::StoredLogEvent e) {
    e.stream = q.stream.stream;
    return e;
  };

  Page page(q);
  if (q.forward) {
    auto it = archived->begin();
    if (q.from) {
      it = std::lower_bound(archived->begin(), older_end, *q.from,
                            [](const query::StoredLogEvent& e, const query::LogPosition& p) {
                              return e.position < p;
                            });
    }
    for (; it != older_end; ++it) {
      if (!InRange(q, it->position.t_ms)) continue;
      if (!page.Take(with_stream(*it))) return std::move(page.events);
    }
    query::LogReadQuery rest = q;
    if (from_in_archive) rest.from.reset();
    rest.limit = q.limit - page.events.size();
    if (rest.limit == 0) return std::move(page.events);
    rest.max_bytes = q.max_bytes - std::min(q.max_bytes, page.bytes());
    TW_ASSIGN_OR_RETURN(std::vector<query::StoredLogEvent> local, local_->ReadLogStream(rest));
    for (const query::StoredLogEvent& e : local) {
      if (!page.Take(e)) break;
    }
    return std::move(page.events);
  }

  // Backward: the folder's events before `from` first; the archive's only
  // once the folder has none left before them.
  std::vector<query::StoredLogEvent> newer;
  if (!from_in_archive) {
    TW_ASSIGN_OR_RETURN(newer, local_->ReadLogStream(q));
    if (newer.empty()) {
      // Nothing of the folder's before `from`: the archive's part follows.
    } else {
      for (auto e = newer.rbegin(); e != newer.rend() && page.Take(*e); ++e) {
      }
      if (page.events.size() == q.limit) return newer;
      // Whether the folder has more before this page (it stopped at
      // max_bytes) or reached its start.
      query::LogReadQuery probe = q;
      probe.limit = 1;
      probe.from = newer.front().position;
      TW_ASSIGN_OR_RETURN(std::vector<query::StoredLogEvent> before, local_->ReadLogStream(probe));
      if (!before.empty()) return newer;
    }
  }
  auto end = older_end;
  if (from_in_archive) {
    end = std::lower_bound(archived->begin(), older_end, *q.from,
                           [](const query::StoredLogEvent& e, const query::LogPosition& p) {
                             return e.position < p;
                           });
  }
  std::vector<query::StoredLogEvent> older;
  for (auto it = end; it != archived->begin();) {
    --it;
    if (!InRange(q, it->position.t_ms)) continue;
    if (!page.Take(with_stream(*it))) break;
    older.push_back(page.events.back());
  }
  std::reverse(older.begin(), older.end());
  older.insert(older.end(), std::make_move_iterator(newer.begin()),
               std::make_move_iterator(newer.end()));
  return older;
}

}  // namespace trainwatch::archive
