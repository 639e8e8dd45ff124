#include "app/api_backends.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/logs/logs.h"
#include "app/job_access.h"
#include "job/runner_identity.h"
#include "util/log.h"
#include "api/cloudwatch/statistics.h"
#include "api/errors.h"
#include "query/errors.h"
#include "query/filter_pattern.h"
#include "query/metrics.h"
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

absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir,
                                                        util::Clock* clock) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.clock = clock;
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

absl::StatusOr<std::unique_ptr<store::Db>> OpenForServer(const std::string& data_dir,
                                                         util::Clock* clock) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.clock = clock;
  options.mode = store::OpenMode::kWriterIfFree;
  options.catch_up_min_interval_ms = 250;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (absl::IsNotFound(db.status())) {
    options.mode = store::OpenMode::kWriter;  // a new folder: create it
    db = store::Db::Open(options);
    if (absl::IsFailedPrecondition(db.status())) return OpenFollower(data_dir, clock);
  }
  return db;
}

RunnerContacts::RunnerContacts(util::Clock* clock, int64_t timeout_ms)
    : clock_(clock), timeout_ms_(timeout_ms), since_ms_(clock->NowMs()) {}

void RunnerContacts::Heard(std::string_view job, int host) {
  const int64_t now_ms = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  heard_ms_[{absl::AsciiStrToLower(std::string(job)), host}] = now_ms;
}

bool RunnerContacts::Silent(std::string_view job, int host) const {
  const int64_t now_ms = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = heard_ms_.find({absl::AsciiStrToLower(std::string(job)), host});
  const int64_t last_ms = it == heard_ms_.end() ? since_ms_ : std::max(it->second, since_ms_);
  return now_ms - last_ms >= timeout_ms_;
}

absl::StatusOr<bool> StoreAgentBackend::Heartbeat(const api::AgentHeartbeat& heartbeat) {
  absl::StatusOr<std::optional<model::JobRecord>> job = ingest_.GetJob(heartbeat.job);
  if (!job.ok()) return job.status();
  const model::JobRecord* host =
      job->has_value() ? model::FindHost(**job, heartbeat.host) : nullptr;
  if (host == nullptr) {
    return absl::NotFoundError(absl::StrFormat("training job \"%s\" has no host %d",
                                               heartbeat.job, heartbeat.host));
  }
  if (!(host->runner == heartbeat.runner)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "host %d of training job \"%s\" is run by pid %d on %s, not by this runner",
        heartbeat.host, heartbeat.job, host->runner.pid, host->runner.hostname));
  }
  if (contacts_ != nullptr) contacts_->Heard(heartbeat.job, heartbeat.host);
  return host->stop_requested_ms.has_value();
}

absl::StatusOr<bool> StoreAgentBackend::Deliver(const api::AgentBatch& batch) {
  const store::Delivery delivery{batch.agent, batch.seq};
  switch (batch.kind) {
    case api::AgentBatch::Kind::kSamples: return ingest_.Put(batch.samples, delivery);
    case api::AgentBatch::Kind::kLogs: return ingest_.PutLogs(batch.logs, delivery);
    case api::AgentBatch::Kind::kCreateJob: return ingest_.CreateJob(batch.job, delivery);
    case api::AgentBatch::Kind::kUpdateJob: return ingest_.UpdateJob(batch.job, delivery);
  }
  return absl::InvalidArgumentError("unknown agent batch kind");
}

namespace {

// query's errors carry the AWS code as an ErrorKind; keep it for the api.
absl::Status WithAwsCode(const absl::Status& s) {
  if (s.ok()) return s;
  std::optional<query::ErrorKind> kind = query::GetErrorKind(s);
  if (!kind) return s;
  return api::AwsStatus(query::ErrorKindName(*kind), api::MessageOf(s));
}

}  // namespace

absl::Status StoreMetricsBackend::Put(const model::SampleBatch& batch) {
  if (ingest_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this server follows %s, which %s writes; metrics reach it through that writer",
        db_.data_dir(), db_.WriterDescription()));
  }
  return ingest_->Put(batch);
}

namespace {

absl::StatusOr<std::vector<api::StatisticsBucket>> StatisticsFromView(
    const store::ReadView* view, const api::StatisticsQuery& q) {
  std::vector<api::StatisticsBucket> out;
  int64_t periods = api::cloudwatch::RequestedDatapoints(q.start_ms, q.end_ms, q.period_s,
                                                         view->now_ms());
  if (periods > query::kMaxStatisticsDatapoints && q.statistics.size() == 1) {
    // A long GetMetricData query: one statistic, scanned in order, resumable.
    query::GetMetricDataRequest req;
    query::MetricDataQuery mq;
    mq.id = "q";
    mq.ns = q.metric.ns;
    mq.metric = q.metric.metric;
    mq.dimensions = q.metric.dimensions;
    mq.period_s = q.period_s;
    mq.stat = q.statistics[0].name;
    mq.unit = q.unit;
    req.queries = {mq};
    req.start_ms = q.start_ms;
    req.end_ms = q.end_ms;
    req.scan_ascending = !q.descending;
    if (q.resume_after_ms) {
      if (q.descending) {
        req.end_ms = std::min(req.end_ms, *q.resume_after_ms);
      } else {
        req.start_ms = std::max(req.start_ms, *q.resume_after_ms + q.period_s * 1000);
      }
    }
    if (req.start_ms >= req.end_ms) return out;
    req.max_datapoints = static_cast<int64_t>(
        std::min<size_t>(q.max_buckets, static_cast<size_t>(query::kMaxMetricDataDatapoints)));
    absl::StatusOr<query::GetMetricDataResponse> got = query::GetMetricData(*view, req);
    if (!got.ok()) return WithAwsCode(got.status());
    for (const query::MetricDataResult& r : got->results) {
      for (size_t i = 0; i < r.timestamps_ms.size() && i < r.values.size(); ++i) {
        out.push_back({r.timestamps_ms[i], q.unit.value_or("None"), {r.values[i]}});
      }
    }
    if (out.size() > q.max_buckets) out.resize(q.max_buckets);
    return out;
  }
  if (periods > query::kMaxStatisticsDatapoints) {
    return api::InvalidParameterCombination(absl::StrFormat(
        "You have requested up to %d datapoints, which exceeds the limit of %d.", periods,
        query::kMaxStatisticsDatapoints));
  }
  // Plain statistics and percentiles go in separate calls (query takes one
  // kind at a time); the answers are merged per (time, unit).
  query::GetMetricStatisticsRequest base;
  base.ns = q.metric.ns;
  base.metric = q.metric.metric;
  base.dimensions = q.metric.dimensions;
  base.start_ms = q.start_ms;
  base.end_ms = q.end_ms;
  base.period_s = q.period_s;
  base.unit = q.unit;
  query::GetMetricStatisticsRequest plain = base, extended = base;
  for (const api::Statistic& s : q.statistics) {
    (s.kind == api::Statistic::Kind::kPercentile ? extended.extended_statistics
                                                 : plain.statistics)
        .push_back(s.name);
  }
  // A flat list merged by sorting: a 100-query GetMetricData page makes 100
  // of these calls, and a tree node per datapoint showed in its profile.
  std::vector<api::StatisticsBucket> merged;
  for (const query::GetMetricStatisticsRequest* req : {&plain, &extended}) {
    if (req->statistics.empty() && req->extended_statistics.empty()) continue;
    absl::StatusOr<query::GetMetricStatisticsResponse> got =
        query::GetMetricStatistics(*view, *req);
    if (!got.ok()) return WithAwsCode(got.status());
    merged.reserve(merged.size() + got->datapoints.size());
    for (const query::Datapoint& d : got->datapoints) {
      api::StatisticsBucket& b = merged.emplace_back();
      b.t_ms = d.t_ms;
      b.unit = d.unit;
      b.values.resize(q.statistics.size());
      for (size_t i = 0; i < q.statistics.size(); ++i) {
        const api::Statistic& s = q.statistics[i];
        switch (s.kind) {
          case api::Statistic::Kind::kSampleCount: if (d.sample_count) b.values[i] = d.sample_count; break;
          case api::Statistic::Kind::kAverage: if (d.average) b.values[i] = d.average; break;
          case api::Statistic::Kind::kSum: if (d.sum) b.values[i] = d.sum; break;
          case api::Statistic::Kind::kMinimum: if (d.minimum) b.values[i] = d.minimum; break;
          case api::Statistic::Kind::kMaximum: if (d.maximum) b.values[i] = d.maximum; break;
          case api::Statistic::Kind::kPercentile:
            for (const auto& [name, value] : d.extended) {
              if (name == s.name) b.values[i] = value;
            }
            break;
        }
      }
    }
  }
  auto by_time_unit = [](const api::StatisticsBucket& a, const api::StatisticsBucket& b) {
    return a.t_ms != b.t_ms ? a.t_ms < b.t_ms : a.unit < b.unit;
  };
  if (!std::is_sorted(merged.begin(), merged.end(), by_time_unit)) {
    std::stable_sort(merged.begin(), merged.end(), by_time_unit);
  }
  for (api::StatisticsBucket& b : merged) {
    if (!out.empty() && out.back().t_ms == b.t_ms && out.back().unit == b.unit) {
      for (size_t i = 0; i < b.values.size(); ++i) {
        if (b.values[i]) out.back().values[i] = b.values[i];
      }
    } else {
      out.push_back(std::move(b));
    }
  }
  if (q.descending) {
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.t_ms > b.t_ms; });
  }
  if (q.resume_after_ms) {
    std::erase_if(out, [&](const api::StatisticsBucket& b) {
      return q.descending ? b.t_ms >= *q.resume_after_ms : b.t_ms <= *q.resume_after_ms;
    });
  }
  if (out.size() > q.max_buckets) out.resize(q.max_buckets);
  return out;
}

// GetStatistics on one read view: the queries of one request share it.
class ViewMetricsReader final : public api::MetricsReader {
 public:
  ViewMetricsReader(store::ReadView view, api::MetricsReader& backend)
      : view_(std::move(view)), backend_(backend) {}
  absl::StatusOr<std::vector<api::StatisticsBucket>> GetStatistics(
      const api::StatisticsQuery& query) override {
    return StatisticsFromView(&view_, query);
  }
  absl::StatusOr<std::vector<api::MetricId>> ListMetrics(
      const api::ListMetricsQuery& query) override {
    return backend_.ListMetrics(query);
  }
  std::unique_ptr<api::MetricsReader> Fork() override {
    return std::make_unique<ViewMetricsReader>(view_.Fork(), backend_);
  }

 private:
  store::ReadView view_;
  api::MetricsReader& backend_;
};

}  // namespace

absl::StatusOr<std::vector<api::StatisticsBucket>> StoreMetricsBackend::GetStatistics(
    const api::StatisticsQuery& query) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  return StatisticsFromView(&*view, query);
}

absl::StatusOr<std::unique_ptr<api::MetricsReader>> StoreMetricsBackend::Snapshot() {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  return std::make_unique<ViewMetricsReader>(std::move(*view), *this);
}

absl::StatusOr<std::vector<api::MetricId>> StoreMetricsBackend::ListMetrics(
    const api::ListMetricsQuery& q) {
  absl::StatusOr<store::ReadView> view = db_.View();
  if (!view.ok()) return view.status();
  std::vector<api::MetricId> found;
  absl::Status s = view->ForEachSeries(
      q.ns.value_or(""), q.metric.value_or(""), "",
      [&](store::SeriesRef&& series, std::string_view) {
        const model::SeriesKey& key = series.key;
        if (q.ns && key.ns != *q.ns) return true;
        if (q.metric && key.metric != *q.metric) return true;
        for (const api::DimensionFilter& f : q.dimensions) {
          const std::string* v = key.FindDimension(f.name);
          if (v == nullptr || (f.value && *v != *f.value)) return true;
        }
        api::MetricId id{key.ns, key.metric, key.dimensions};
        if (q.after && !(*q.after < id)) return true;
        absl::StatusOr<std::optional<store::LastValue>> last = view->GetLastValue(series.id);
        if (!last.ok() || !last->has_value() || (*last)->t_ms < q.active_since_ms) return true;
        found.push_back(std::move(id));
        return true;
      });
  if (!s.ok()) return s;
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (found.size() > q.limit) found.resize(q.limit);
  return found;
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
  if (ingest_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this server follows %s, which %s writes; log events reach it through that writer",
        db_.data_dir(), db_.WriterDescription()));
  }
  if (absl::Status s = ingest_->PutLogs(batch); !s.ok()) return s;
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

absl::StatusOr<model::JobRecord> StoreJobsBackend::CreateTrainingJob(
    const api::TrainingJobSpec& spec) {
  if (local_ == nullptr) {
    return absl::UnimplementedError(
        "this trainwatch server only follows its data folder (a run held it when the server "
        "started), so it cannot start jobs; start them with `trainwatch run`, or restart the "
        "server once no run holds the folder");
  }
  return local_->Start(spec);
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

int StoreJobsBackend::RecordSilentRunners() {
  if (contacts_ == nullptr || !db_.writable()) return 0;
  std::vector<model::JobRecord> running;
  {
    absl::StatusOr<store::ReadView> view = db_.View();
    if (!view.ok()) return 0;
    absl::Status s = view->ForEachJob([&](model::JobRecord&& job) {
      if (!model::IsTerminal(job.status)) running.push_back(std::move(job));
      return true;
    });
    if (!s.ok()) return 0;
  }
  int recorded = 0;
  for (const model::JobRecord& job : running) {
    for (model::JobRecord& host : model::HostRecords(job)) {
      if (model::IsTerminal(host.status) ||
          job::CheckRunner(host.runner) != job::RunnerState::kOnOtherHost ||
          !contacts_->Silent(host.name, host.host_index)) {
        continue;
      }
      job::RecordRunnerSilent(&host, db_.clock().NowMs(), contacts_->timeout_ms());
      if (absl::Status s = db_.UpdateJob(host); !s.ok()) {
        util::LogWarning(absl::StrFormat("job %s: could not record that its runner is silent: %s",
                                         host.name, s.ToString()));
        continue;
      }
      ++recorded;
    }
  }
  return recorded;
}

absl::Status StoreJobsBackend::StopJob(const std::string& name) {
  absl::StatusOr<std::optional<model::JobRecord>> job = LoadJob(db_, name);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return absl::NotFoundError(name);
  if (local_ != nullptr && (*job)->status == model::JobStatus::kInProgress &&
      local_->Stop((*job)->name)) {
    return absl::OkStatus();
  }
  absl::Status s = StopJobHosts(db_, **job);
  if (absl::IsNotFound(s)) {
    // The runner is gone: the job is recorded as Failed, so it cannot be stopped.
    absl::StatusOr<std::optional<model::JobRecord>> latest = LoadJob(db_, name);
    model::JobStatus status = model::JobStatus::kFailed;
    if (latest.ok() && latest->has_value()) status = (*latest)->status;
    return absl::FailedPreconditionError(std::string(model::JobStatusName(status)));
  }
  return s;
}

}  // namespace trainwatch::app
