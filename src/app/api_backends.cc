#include "app/api_backends.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/strings/str_format.h"
#include "api/logs/logs.h"
#include "app/job_access.h"
#include "job/runner_identity.h"
#include "query/filter_pattern.h"
#include "store/read_view.h"

namespace trainwatch::app {
namespace {

api::LogPosition ToApi(store::LogPosition p) {
  return {p.t_ms, static_cast<int64_t>(std::min<uint64_t>(
                      p.seq, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))};
}

store::LogPosition ToStore(api::LogPosition p) {
  return {p.t_ms, static_cast<uint64_t>(std::max<int64_t>(p.seq, 0))};
}

api::LogStreamInfo ToApi(const store::LogStreamInfo& s) {
  return {s.stream, s.creation_ms, s.first_event_ms, s.last_event_ms, s.last_ingestion_ms};
}

// Reassembles the pattern text from its parsed form, for query's matcher.
std::string PatternText(const api::LogFilter& f) {
  if (f.regex) return "%" + *f.regex + "%";
  std::string out;
  auto add = [&](std::string_view prefix, const std::string& term) {
    std::string quoted;
    for (char c : term) {
      if (c == '"' || c == '\\') quoted.push_back('\\');
      quoted.push_back(c);
    }
    if (!out.empty()) out.push_back(' ');
    out += absl::StrFormat("%s\"%s\"", prefix, quoted);
  };
  for (const std::string& t : f.all_of) add("", t);
  for (const std::string& t : f.any_of) add("?", t);
  for (const std::string& t : f.none_of) add("-", t);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kReader;
  options.background_thread = false;
  // Catching up with the writer on every request would cost more than it
  // shows; a quarter second behind is live enough.
  options.catch_up_min_interval_ms = 250;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (absl::IsNotFound(db.status())) {
    // Nothing written here yet: create the folder as a writer would, let go.
    store::DbOptions create = options;
    create.mode = store::OpenMode::kWriter;
    absl::StatusOr<std::unique_ptr<store::Db>> created = store::Db::Open(create);
    if (!created.ok() && !absl::IsFailedPrecondition(created.status())) return created.status();
    if (created.ok()) created->reset();
    db = store::Db::Open(options);
  }
  return db;
}

absl::Status StoreLogsBackend::CreateLogGroup(const std::string& group, int64_t) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<int64_t>> existing = view->GetLogGroup(group);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) return absl::AlreadyExistsError("log group exists");
  return absl::OkStatus();
}

absl::Status StoreLogsBackend::CreateLogStream(const model::LogStreamId& stream, int64_t) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<store::LogStreamInfo>> existing =
      view->GetLogStream(stream.group, stream.stream);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) return absl::AlreadyExistsError("log stream exists");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<api::LogGroupInfo>> StoreLogsBackend::ListLogGroups(
    const std::string& prefix) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  std::vector<api::LogGroupInfo> out;
  absl::Status s = view->ForEachLogGroup([&](std::string_view group, int64_t creation_ms) {
    if (group.substr(0, prefix.size()) == prefix) {
      out.push_back({std::string(group), creation_ms, std::nullopt, 0});
    }
    return true;
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<api::LogStreamInfo>> StoreLogsBackend::ListLogStreams(
    const std::string& group, const std::string& prefix) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<int64_t>> exists = view->GetLogGroup(group);
  if (!exists.ok()) return exists.status();
  if (!exists->has_value()) return absl::NotFoundError(api::logs::kGroupNotFound);
  std::vector<api::LogStreamInfo> out;
  absl::Status s = view->ForEachLogStream(group, prefix, "", /*descending=*/false,
                                          [&](store::LogStreamInfo&& info) {
                                            out.push_back(ToApi(info));
                                            return true;
                                          });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::string> StoreLogsBackend::PutLogEvents(const model::LogBatch& batch, int64_t) {
  if (!db_.writable()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this server follows %s, which %s writes; log events reach it through that writer",
        db_.data_dir(), db_.WriterDescription()));
  }
  if (absl::Status s = db_.PutLogs(batch); !s.ok()) return s;
  return absl::StrFormat("%056d", db_.clock().NowMs());
}

absl::StatusOr<std::vector<api::StoredLogEvent>> StoreLogsBackend::ReadLogStream(
    const api::LogReadQuery& q) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<int64_t>> group = view->GetLogGroup(q.stream.group);
  if (!group.ok()) return group.status();
  if (!group->has_value()) return absl::NotFoundError(api::logs::kGroupNotFound);
  absl::StatusOr<std::optional<store::LogStreamInfo>> stream =
      view->GetLogStream(q.stream.group, q.stream.stream);
  if (!stream.ok()) return stream.status();
  if (!stream->has_value()) return absl::NotFoundError(api::logs::kStreamNotFound);
  std::unique_ptr<store::LogCursor> cursor = view->NewLogCursor(**stream);
  std::vector<api::StoredLogEvent> out;
  size_t bytes = 0;
  auto take = [&](const store::StoredLogEvent& e) {
    size_t size = e.message.size() + 26;
    if (out.size() >= q.limit || (!out.empty() && bytes + size > q.max_bytes)) return false;
    bytes += size;
    out.push_back({q.stream.stream, ToApi(e.pos), e.ingestion_ms, e.message});
    return true;
  };
  if (q.forward) {
    store::LogPosition from = q.from ? ToStore(*q.from) : store::LogPosition{INT64_MIN, 0};
    if (q.start_ms && from < store::LogPosition{*q.start_ms, 0}) from = {*q.start_ms, 0};
    for (cursor->Seek(from); cursor->Valid(); cursor->Next()) {
      if (q.end_ms && cursor->position().t_ms >= *q.end_ms) break;
      absl::StatusOr<store::StoredLogEvent> e = cursor->event();
      if (!e.ok()) return e.status();
      if (!take(*e)) break;
    }
  } else {
    // Strictly before `from` (the stream's end when absent), newest first.
    if (!q.from) {
      cursor->SeekToLast();
    } else if (q.from->seq > 0) {
      cursor->SeekForPrev({q.from->t_ms, static_cast<uint64_t>(q.from->seq) - 1});
    } else {
      cursor->SeekForPrev({q.from->t_ms - 1, std::numeric_limits<uint64_t>::max()});
    }
    for (; cursor->Valid(); cursor->Prev()) {
      int64_t t = cursor->position().t_ms;
      if (q.end_ms && t >= *q.end_ms) continue;
      if (q.start_ms && t < *q.start_ms) break;
      absl::StatusOr<store::StoredLogEvent> e = cursor->event();
      if (!e.ok()) return e.status();
      if (!take(*e)) break;
    }
    std::reverse(out.begin(), out.end());
  }
  if (absl::Status s = cursor->status(); !s.ok()) return s;
  return out;
}

absl::StatusOr<api::LogFilterPage> StoreLogsBackend::FilterLogEvents(
    const api::LogFilterQuery& q) {
  absl::StatusOr<query::FilterPattern> pattern = query::FilterPattern::Parse(PatternText(q.filter));
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<int64_t>> group = view->GetLogGroup(q.group);
  if (!group.ok()) return group.status();
  if (!group->has_value()) return absl::NotFoundError(api::logs::kGroupNotFound);

  // One cursor per stream, merged by position (seq is unique across the store).
  struct Source {
    std::string stream;
    std::unique_ptr<store::LogCursor> cursor;
  };
  std::vector<Source> sources;
  absl::Status listed = view->ForEachLogStream(
      q.group, q.stream_prefix.value_or(""), "", false, [&](store::LogStreamInfo&& info) {
        if (q.stream_names.empty() || std::find(q.stream_names.begin(), q.stream_names.end(),
                                                info.stream) != q.stream_names.end()) {
          sources.push_back({info.stream, view->NewLogCursor(info)});
        }
        return true;
      });
  if (!listed.ok()) return listed;
  store::LogPosition from{q.start_ms.value_or(INT64_MIN), 0};
  if (q.after) {
    store::LogPosition after = ToStore(*q.after);
    after.seq += 1;
    from = std::max(from, after);
  }
  auto later = [&](size_t a, size_t b) {
    return sources[b].cursor->position() < sources[a].cursor->position();
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < sources.size(); ++i) {
    sources[i].cursor->Seek(from);
    if (sources[i].cursor->Valid()) heap.push(i);
  }
  api::LogFilterPage page;
  size_t bytes = 0, scanned = 0;
  while (!heap.empty()) {
    size_t i = heap.top();
    heap.pop();
    store::LogCursor& c = *sources[i].cursor;
    store::LogPosition pos = c.position();
    if (q.end_ms && pos.t_ms > *q.end_ms) continue;  // this stream is done
    if (++scanned > q.scan_budget) {
      page.next = ToApi({pos.t_ms, pos.seq > 0 ? pos.seq - 1 : 0});
      break;
    }
    absl::StatusOr<store::StoredLogEvent> e = c.event();
    if (!e.ok()) return e.status();
    if (pattern->Matches(e->message)) {
      size_t size = e->message.size() + 26;
      if (page.events.size() >= q.limit || (!page.events.empty() && bytes + size > q.max_bytes)) {
        page.next = page.events.back().position;
        break;
      }
      bytes += size;
      page.events.push_back({sources[i].stream, ToApi(e->pos), e->ingestion_ms, e->message});
    }
    c.Next();
    if (c.Valid()) heap.push(i);
  }
  return page;
}

absl::StatusOr<model::JobRecord> StoreJobsBackend::CreateTrainingJob(const api::TrainingJobSpec&) {
  return absl::UnimplementedError(
      "CreateTrainingJob is not served by this trainwatch server yet; start jobs with "
      "`trainwatch run` (they appear here as training jobs)");
}

absl::StatusOr<std::optional<model::JobRecord>> StoreJobsBackend::GetJob(const std::string& name) {
  return LoadJob(db_, name);
}

absl::StatusOr<std::vector<model::JobRecord>> StoreJobsBackend::ListJobs() {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  std::vector<model::JobRecord> jobs;
  absl::Status s = view->ForEachJob([&](model::JobRecord&& job) {
    jobs.push_back(std::move(job));
    return true;
  });
  if (!s.ok()) return s;
  for (model::JobRecord& job : jobs) ReconcileJob(db_, &job);
  return jobs;
}

absl::Status StoreJobsBackend::StopJob(const std::string& name) {
  absl::StatusOr<std::optional<model::JobRecord>> job = LoadJob(db_, name);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return absl::NotFoundError(name);
  absl::Status s = job::RequestStop(**job);
  if (absl::IsNotFound(s)) {
    // The runner is gone: the job is recorded as Failed, so it cannot be stopped.
    model::JobRecord record = **job;
    ReconcileJob(db_, &record);
    return absl::FailedPreconditionError(std::string(model::JobStatusName(record.status)));
  }
  return s;
}

}  // namespace trainwatch::app
