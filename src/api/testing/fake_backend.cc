#include "api/testing/fake_backend.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/cloudwatch/statistics.h"
#include "api/logs/logs.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "query/m4.h"
#include "util/mutex.h"
#include "util/status_macros.h"

namespace trainwatch::api::testing {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

// The key has every filtered dimension (with the value, where one is given).
// A function, not a lambda: clang 14 cannot capture structured bindings.
bool MatchesDimensions(const model::SeriesKey& key, const std::vector<DimensionFilter>& filters) {
  return std::all_of(filters.begin(), filters.end(), [&](const DimensionFilter& f) {
    const std::string* v = key.FindDimension(f.name);
    return v != nullptr && (!f.value || *v == *f.value);
  });
}

}  // namespace

void FakeBackend::RejectMetric(const std::string& metric, absl::Status status) {
  util::MutexLock lock(mu_);
  rejected_metrics_[metric] = std::move(status);
}

void FakeBackend::SetJob(const model::JobRecord& job) {
  util::MutexLock lock(mu_);
  jobs_[Lower(job.name)] = job;
}

std::vector<FakeBackend::Observation> FakeBackend::ObservationsForTest(
    const model::SeriesKey& key) const {
  util::MutexLock lock(mu_);
  std::vector<Observation> out;
  auto it = series_.find(key);
  if (it == series_.end()) return out;
  for (const Point& p : it->second.points) {
    out.push_back({p.t_ms, p.count > 0 ? p.sum / p.count : 0, p.count});
  }
  return out;
}

absl::StatusOr<std::optional<query::LastSample>> FakeBackend::LastValue(
    const model::SeriesKey& key) {
  util::MutexLock lock(mu_);
  auto it = series_.find(key);
  if (it == series_.end() || it->second.points.empty()) return std::nullopt;
  // The newest point; of points at the same time, the last stored.
  const Point* newest = nullptr;
  for (const Point& p : it->second.points) {
    if (newest == nullptr || p.t_ms >= newest->t_ms) newest = &p;
  }
  return query::LastSample{newest->t_ms, newest->count > 0 ? newest->sum / newest->count : 0};
}

size_t FakeBackend::PutCallsForTest() const {
  util::MutexLock lock(mu_);
  return put_calls_;
}

absl::Status FakeBackend::PutSeries(const std::string& ns, const std::string& metric,
                                    std::vector<model::Dimension> dims,
                                    std::vector<model::Sample> samples, const std::string& unit) {
  absl::StatusOr<model::SeriesKey> key = model::MakeSeriesKey(ns, metric, std::move(dims), unit);
  if (!key.ok()) return key.status();
  model::SampleBatch b;
  b.series.push_back({*std::move(key), 1, std::move(samples), {}, {}});
  return Put(b);
}

absl::Status FakeBackend::Put(const model::SampleBatch& batch) {
  util::MutexLock lock(mu_);
  ++put_calls_;
  for (const model::SeriesSamples& s : batch.series) {
    auto rejected = rejected_metrics_.find(s.key.metric);
    if (rejected != rejected_metrics_.end()) return rejected->second;
    auto finite = [](double v) { return std::isfinite(v); };
    for (const model::Sample& x : s.samples) {
      if (!finite(x.value)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: value at %d is not finite", s.key.ToString(), x.t_ms));
      }
    }
  }
  for (const model::SeriesSamples& s : batch.series) {
    Series& series = series_[s.key];
    int res = s.storage_resolution_s;
    for (const model::Sample& x : s.samples) {
      series.points.push_back({x.t_ms, 1, x.value, x.value, x.value, true, res});
    }
    for (const model::WeightedSample& w : s.weighted) {
      series.points.push_back({w.t_ms, w.count, w.value * w.count, w.value, w.value, true, res});
    }
    for (const model::StatisticSet& st : s.statistic_sets) {
      series.points.push_back({st.t_ms, st.sample_count, st.sum, st.minimum, st.maximum,
                               st.DescribesIdenticalValues(), res});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StatisticsBucket>> FakeBackend::GetStatistics(
    const StatisticsQuery& q) {
  util::MutexLock lock(mu_);
  std::vector<StatisticsBucket> out;
  if (!cloudwatch::PeriodServable(q.start_ms, q.period_s, q.now_ms)) return out;
  int64_t start = cloudwatch::RoundStartMs(q.start_ms, q.period_s, q.now_ms);
  int64_t step = q.period_s * 1000;
  // (bucket start, unit) -> points; merged units under one empty unit.
  const bool merge = q.merge_units && !q.unit;
  std::map<std::pair<int64_t, std::string>, std::vector<const Point*>> buckets;
  for (const auto& [key, series] : series_) {
    if (key.ns != q.metric.ns || key.metric != q.metric.metric ||
        key.dimensions != q.metric.dimensions || (q.unit && key.unit != *q.unit)) {
      continue;
    }
    for (const Point& p : series.points) {
      if (p.t_ms < start || p.t_ms >= q.end_ms) continue;
      if (p.resolution_s == 60 && q.period_s < 60) continue;
      int64_t b = start + (p.t_ms - start) / step * step;
      buckets[{b, merge ? std::string() : key.unit}].push_back(&p);
    }
  }
  for (const auto& [where, points] : buckets) {
    StatisticsBucket bucket{where.first, where.second, {}};
    double count = 0, sum = 0, min = INFINITY, max = -INFINITY;
    bool exact = true;
    std::vector<std::pair<double, double>> values;  // (value, count)
    for (const Point* p : points) {
      count += p->count;
      sum += p->sum;
      min = std::min(min, p->min);
      max = std::max(max, p->max);
      exact = exact && p->exact && p->min >= 0;
      values.emplace_back(p->min, p->count);
    }
    std::sort(values.begin(), values.end());
    for (const Statistic& s : q.statistics) {
      switch (s.kind) {
        case Statistic::Kind::kSampleCount: bucket.values.push_back(count); break;
        case Statistic::Kind::kAverage: bucket.values.push_back(sum / count); break;
        case Statistic::Kind::kSum: bucket.values.push_back(sum); break;
        case Statistic::Kind::kMinimum: bucket.values.push_back(min); break;
        case Statistic::Kind::kMaximum: bucket.values.push_back(max); break;
        case Statistic::Kind::kPercentile: {
          if (!exact) {
            bucket.values.push_back(std::nullopt);
            break;
          }
          // Nearest rank: the value with rank ceil(p/100 * N); p0 is the minimum.
          double rank = std::max(1.0, std::ceil(s.percentile / 100.0 * count));
          double seen = 0;
          double v = values.back().first;
          for (const auto& [value, c] : values) {
            seen += c;
            if (seen >= rank) {
              v = value;
              break;
            }
          }
          bucket.values.push_back(v);
          break;
        }
      }
    }
    out.push_back(std::move(bucket));
  }
  if (q.descending) {
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.t_ms > b.t_ms;
    });
  }
  if (q.resume_after_ms) {
    std::erase_if(out, [&](const StatisticsBucket& b) {
      return q.descending ? b.t_ms >= *q.resume_after_ms : b.t_ms <= *q.resume_after_ms;
    });
  }
  if (out.size() > q.max_buckets) out.resize(q.max_buckets);
  return out;
}

absl::StatusOr<std::vector<MetricId>> FakeBackend::ListMetrics(const ListMetricsQuery& q) {
  util::MutexLock lock(mu_);
  std::map<MetricId, bool> found;
  for (const auto& entry : series_) {
    const model::SeriesKey& key = entry.first;
    const Series& series = entry.second;
    if (q.ns && key.ns != *q.ns) continue;
    if (q.metric && key.metric != *q.metric) continue;
    bool dims_ok = std::all_of(q.dimensions.begin(), q.dimensions.end(), [&](const auto& f) {
      const std::string* v = key.FindDimension(f.name);
      return v != nullptr && (!f.value || *v == *f.value);
    });
    if (!dims_ok) continue;
    bool active = std::any_of(series.points.begin(), series.points.end(),
                              [&](const Point& p) { return p.t_ms >= q.active_since_ms; });
    if (!active) continue;
    MetricId id{key.ns, key.metric, key.dimensions};
    if (q.after && !(*q.after < id)) continue;
    found[id] = true;
  }
  std::vector<MetricId> out;
  for (const auto& [id, unused] : found) {
    if (out.size() == q.limit) break;
    out.push_back(id);
  }
  return out;
}

absl::StatusOr<std::vector<query::RawSeries>> FakeBackend::ReadRaw(const ListMetricsQuery& q,
                                                                   int64_t start_ms,
                                                                   int64_t end_ms,
                                                                   const SeriesFilter& want) {
  util::MutexLock lock(mu_);
  std::vector<query::RawSeries> out;
  for (const auto& [key, series] : series_) {
    if (q.ns && key.ns != *q.ns) continue;
    if (q.metric && key.metric != *q.metric) continue;
    if (!MatchesDimensions(key, q.dimensions)) continue;
    if (want && !want(key)) continue;
    query::RawSeries raw{key, {}};
    for (const Point& p : series.points) {
      if (p.t_ms >= start_ms && p.t_ms < end_ms) raw.samples.push_back({p.t_ms, p.sum / p.count});
    }
    std::sort(raw.samples.begin(), raw.samples.end(),
              [](const model::Sample& a, const model::Sample& b) { return a.t_ms < b.t_ms; });
    if (!raw.samples.empty()) out.push_back(std::move(raw));
  }
  return out;
}

absl::StatusOr<std::vector<query::SeriesInfo>> FakeBackend::ListSeries(
    const ListMetricsQuery& q) {
  util::MutexLock lock(mu_);
  std::vector<query::SeriesInfo> out;
  for (const auto& [key, series] : series_) {
    if (out.size() == q.limit) break;
    if (q.ns && key.ns != *q.ns) continue;
    if (q.metric && key.metric != *q.metric) continue;
    if (!MatchesDimensions(key, q.dimensions) || series.points.empty()) continue;
    const Point* newest = &series.points[0];
    for (const Point& p : series.points) {
      if (p.t_ms >= newest->t_ms) newest = &p;
    }
    if (newest->t_ms < q.active_since_ms) continue;
    if (q.after && !(*q.after < MetricId{key.ns, key.metric, key.dimensions})) continue;
    out.push_back({key, query::LastSample{newest->t_ms, newest->sum / newest->count}});
  }
  return out;
}

absl::StatusOr<query::ChartAnswer> FakeBackend::Chart(const query::ChartQuery& q) {
  TW_RETURN_IF_ERROR(query::ValidateChartQuery(q));
  util::MutexLock lock(mu_);
  query::ChartAnswer out;
  out.x_kind = q.x;
  out.x_start = q.start_ms;
  out.x_end = q.end_ms;
  std::optional<query::StepMap> steps;
  if (q.x == query::ChartX::kStep) {
    auto job = jobs_.find(Lower(q.job));
    if (job == jobs_.end()) return absl::NotFoundError(absl::StrFormat("no job named %s", q.job));
    if (job->second.step_metric.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("job %s has no step metric", job->second.name));
    }
    std::vector<std::pair<int64_t, int64_t>> points;
    for (const auto& [key, series] : series_) {
      if (key.ns != model::kTrainingJobsNamespace || key.metric != job->second.step_metric ||
          key.dimensions != std::vector<model::Dimension>{{std::string(model::kTrainingJobNameDim),
                                                           job->second.name}}) {
        continue;
      }
      for (const Point& p : series.points) {
        points.emplace_back(p.t_ms, query::StepOfValue(p.sum / p.count));
      }
    }
    steps.emplace(std::move(points));
    std::optional<std::pair<int64_t, int64_t>> span = steps->Span(q.start_ms, q.end_ms);
    if (!span) {
      out.x_start = out.x_end = 0;
      return out;
    }
    out.x_start = span->first;
    out.x_end = span->second;
  }
  out.column = (static_cast<double>(out.x_end) - static_cast<double>(out.x_start)) / q.width;
  std::vector<model::Dimension> dims = q.metric.dimensions;
  std::sort(dims.begin(), dims.end());
  query::M4 m4(out.x_start, out.x_end, q.width);
  auto add = [&](int64_t t, double v) {
    if (t < q.start_ms || t >= q.end_ms) return;
    if (!steps) return m4.Add(t, t, v);
    if (std::optional<int64_t> step = steps->At(t)) m4.Add(*step, t, v);
  };
  for (const auto& [key, series] : series_) {
    if (key.ns != q.metric.ns || key.metric != q.metric.metric || key.dimensions != dims ||
        (q.unit && key.unit != *q.unit)) {
      continue;
    }
    for (const Point& p : series.points) {
      add(p.t_ms, p.min);
      if (p.max != p.min) add(p.t_ms, p.max);
    }
  }
  m4.FinishInto(&out);
  return out;
}

absl::Status FakeBackend::CreateLogGroup(const std::string& group, int64_t now_ms) {
  util::MutexLock lock(mu_);
  if (groups_.count(group)) return absl::AlreadyExistsError("log group exists");
  groups_[group].creation_ms = now_ms;
  return absl::OkStatus();
}

absl::Status FakeBackend::CreateLogStream(const model::LogStreamId& stream, int64_t now_ms) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(stream.group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  if (g->second.streams.count(stream.stream)) return absl::AlreadyExistsError("log stream exists");
  g->second.streams[stream.stream].creation_ms = now_ms;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LogGroupInfo>> FakeBackend::ListLogGroups(const std::string& prefix) {
  util::MutexLock lock(mu_);
  std::vector<LogGroupInfo> out;
  for (const auto& [name, g] : groups_) {
    if (name.rfind(prefix, 0) != 0) continue;
    int64_t bytes = 0;
    for (const auto& [unused, s] : g.streams) {
      for (const StoredLogEvent& e : s.events) bytes += static_cast<int64_t>(e.message.size());
    }
    out.push_back({name, g.creation_ms, g.retention_days, bytes});
  }
  return out;
}

absl::StatusOr<std::optional<int>> FakeBackend::LogGroupRetention(const std::string& group) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  return g->second.retention_days;
}

absl::Status FakeBackend::DeleteLogGroup(const std::string& group) {
  util::MutexLock lock(mu_);
  if (groups_.erase(group) == 0) return absl::NotFoundError(logs::kGroupNotFound);
  return absl::OkStatus();
}

absl::Status FakeBackend::DeleteLogStream(const model::LogStreamId& stream) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(stream.group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  if (g->second.streams.erase(stream.stream) == 0) {
    return absl::NotFoundError(logs::kStreamNotFound);
  }
  return absl::OkStatus();
}

absl::Status FakeBackend::PutRetentionPolicy(const std::string& group, std::optional<int> days) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  g->second.retention_days = days;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LogStreamInfo>> FakeBackend::ListLogStreams(const std::string& group,
                                                                       const std::string& prefix) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  std::vector<LogStreamInfo> out;
  for (const auto& [name, s] : g->second.streams) {
    if (name.rfind(prefix, 0) != 0) continue;
    LogStreamInfo info{name, s.creation_ms, std::nullopt, std::nullopt, std::nullopt};
    if (!s.events.empty()) {
      info.first_event_ms = s.events.front().position.t_ms;
      info.last_event_ms = s.events.back().position.t_ms;
      int64_t ingested = 0;
      for (const StoredLogEvent& e : s.events) ingested = std::max(ingested, e.ingestion_ms);
      info.last_ingestion_ms = ingested;
    }
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::string> FakeBackend::PutLogEvents(const model::LogBatch& batch,
                                                      int64_t now_ms) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(batch.stream.group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  auto s = g->second.streams.find(batch.stream.stream);
  if (s == g->second.streams.end()) return absl::NotFoundError(logs::kStreamNotFound);
  for (const model::LogEvent& e : batch.events) {
    StoredLogEvent stored{batch.stream.stream, {e.t_ms, g->second.next_seq++}, now_ms, e.message};
    auto& events = s->second.events;
    events.insert(std::upper_bound(events.begin(), events.end(), stored,
                                   [](const auto& a, const auto& b) {
                                     return a.position < b.position;
                                   }),
                  std::move(stored));
  }
  return absl::StrFormat("%056d", g->second.next_seq);
}

absl::StatusOr<std::vector<StoredLogEvent>> FakeBackend::ReadLogStream(const LogReadQuery& q) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(q.stream.group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  auto s = g->second.streams.find(q.stream.stream);
  if (s == g->second.streams.end()) return absl::NotFoundError(logs::kStreamNotFound);
  std::vector<const StoredLogEvent*> window;
  for (const StoredLogEvent& e : s->second.events) {
    if (q.start_ms && e.position.t_ms < *q.start_ms) continue;
    if (q.end_ms && e.position.t_ms >= *q.end_ms) continue;
    if (q.from && (q.forward ? e.position < *q.from : !(e.position < *q.from))) continue;
    window.push_back(&e);
  }
  std::vector<StoredLogEvent> out;
  size_t bytes = 0;
  if (q.forward) {
    for (const StoredLogEvent* e : window) {
      size_t size = e->message.size() + 26;
      if (out.size() == q.limit || (!out.empty() && bytes + size > q.max_bytes)) break;
      bytes += size;
      out.push_back(*e);
    }
  } else {
    for (auto it = window.rbegin(); it != window.rend(); ++it) {
      size_t size = (*it)->message.size() + 26;
      if (out.size() == q.limit || (!out.empty() && bytes + size > q.max_bytes)) break;
      bytes += size;
      out.push_back(**it);
    }
    std::reverse(out.begin(), out.end());
  }
  return out;
}

absl::StatusOr<LogFilterPage> FakeBackend::FilterLogEvents(const LogFilterQuery& q) {
  util::MutexLock lock(mu_);
  auto g = groups_.find(q.group);
  if (g == groups_.end()) return absl::NotFoundError(logs::kGroupNotFound);
  std::vector<const StoredLogEvent*> matches;
  for (const auto& [name, s] : g->second.streams) {
    if (!q.stream_names.empty() &&
        std::find(q.stream_names.begin(), q.stream_names.end(), name) == q.stream_names.end()) {
      continue;
    }
    if (q.stream_prefix && name.rfind(*q.stream_prefix, 0) != 0) continue;
    for (const StoredLogEvent& e : s.events) {
      if (q.start_ms && e.position.t_ms < *q.start_ms) continue;
      if (q.end_ms && e.position.t_ms > *q.end_ms) continue;
      if (q.after && !(*q.after < e.position)) continue;
      if (q.pattern == nullptr || q.pattern->Matches(e.message)) matches.push_back(&e);
    }
  }
  std::sort(matches.begin(), matches.end(),
            [](const auto* a, const auto* b) { return a->position < b->position; });
  LogFilterPage page;
  size_t bytes = 0;
  for (const StoredLogEvent* e : matches) {
    size_t size = e->message.size() + 26;
    if (page.events.size() == q.limit || (!page.events.empty() && bytes + size > q.max_bytes)) {
      page.next = page.events.back().position;
      break;
    }
    bytes += size;
    page.events.push_back(*e);
  }
  return page;
}

absl::StatusOr<model::JobRecord> FakeBackend::CreateTrainingJob(const TrainingJobSpec& spec) {
  util::MutexLock lock(mu_);
  std::string key = Lower(spec.name);
  if (jobs_.count(key)) return absl::AlreadyExistsError(spec.name);
  model::JobRecord job;
  job.name = spec.name;
  job.arn = model::TrainingJobArn(spec.name);
  job.creation_ms = spec.creation_ms;
  job.last_modified_ms = spec.creation_ms;
  job.transitions.push_back(
      {model::SecondaryStatus::kStarting, spec.creation_ms, std::nullopt,
       "Starting the training job."});
  job.metric_definitions = spec.metric_definitions;
  job.max_runtime_s = spec.max_runtime_s;
  job.hyperparameters = spec.hyperparameters;
  job.environment = spec.environment;
  job.profiling_interval_ms = spec.profiling_interval_ms;
  job.request_json = spec.request_json;
  job.command = spec.entrypoint;
  job.command.insert(job.command.end(), spec.arguments.begin(), spec.arguments.end());
  jobs_[key] = job;
  return job;
}

absl::StatusOr<std::optional<model::JobRecord>> FakeBackend::GetJob(const std::string& name) {
  util::MutexLock lock(mu_);
  auto it = jobs_.find(Lower(name));
  if (it == jobs_.end()) return std::optional<model::JobRecord>();
  return std::optional<model::JobRecord>(it->second);
}

absl::StatusOr<std::vector<model::JobRecord>> FakeBackend::ListJobs() {
  util::MutexLock lock(mu_);
  std::vector<model::JobRecord> out;
  for (const auto& [unused, job] : jobs_) out.push_back(job);
  return out;
}

absl::Status FakeBackend::StopJob(const std::string& name) {
  util::MutexLock lock(mu_);
  auto it = jobs_.find(Lower(name));
  if (it == jobs_.end()) return absl::NotFoundError(name);
  model::JobRecord& job = it->second;
  if (job.status != model::JobStatus::kInProgress) {
    return absl::FailedPreconditionError(std::string(model::JobStatusName(job.status)));
  }
  int64_t now = clock_.NowMs();
  if (!job.transitions.empty()) job.transitions.back().end_ms = now;
  job.status = model::JobStatus::kStopping;
  job.secondary_status = model::SecondaryStatus::kStopping;
  job.transitions.push_back(
      {model::SecondaryStatus::kStopping, now, std::nullopt, "Stopping the training job"});
  job.last_modified_ms = now;
  return absl::OkStatus();
}

}  // namespace trainwatch::api::testing
