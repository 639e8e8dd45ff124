#include "query/store_reader.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/strings/str_format.h"
#include "query/chart.h"
#include "query/errors.h"
#include "query/metrics.h"
#include "store/db.h"
#include "store/lane.h"
#include "store/read_view.h"
#include "util/status_macros.h"

namespace trainwatch::query {
namespace {

LogPosition FromStore(store::LogPosition p) {
  return {p.t_ms, static_cast<int64_t>(std::min<uint64_t>(
                      p.seq, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))};
}

store::LogPosition ToStore(LogPosition p) {
  return {p.t_ms, static_cast<uint64_t>(std::max<int64_t>(p.seq, 0))};
}

LogStreamInfo FromStore(const store::LogStreamInfo& s) {
  return {s.stream, s.creation_ms, s.first_event_ms, s.last_event_ms, s.last_ingestion_ms};
}

absl::StatusOr<std::vector<StatisticsBucket>> StatisticsFromView(
    const store::ReadView* view, const StatisticsQuery& q) {
  std::vector<StatisticsBucket> out;
  int64_t periods = RequestedDatapoints(q.start_ms, q.end_ms, q.period_s,
                                                         view->now_ms());
  if (periods > kMaxStatisticsDatapoints && q.statistics.size() == 1) {
    // A long GetMetricData query: one statistic, scanned in order, resumable.
    GetMetricDataRequest req;
    MetricDataQuery mq;
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
        std::min<size_t>(q.max_buckets, static_cast<size_t>(kMaxMetricDataDatapoints)));
    absl::StatusOr<GetMetricDataResponse> got = GetMetricData(*view, req);
    if (!got.ok()) return got.status();
    for (const MetricDataResult& r : got->results) {
      for (size_t i = 0; i < r.timestamps_ms.size() && i < r.values.size(); ++i) {
        out.push_back({r.timestamps_ms[i], q.unit.value_or("None"), {r.values[i]}});
      }
    }
    if (out.size() > q.max_buckets) out.resize(q.max_buckets);
    return out;
  }
  if (periods > kMaxStatisticsDatapoints) {
    return MakeError(ErrorKind::kInvalidCombination, absl::StrFormat(
        "You have requested up to %d datapoints, which exceeds the limit of %d.", periods,
        kMaxStatisticsDatapoints));
  }
  // Plain statistics and percentiles go in separate calls (query takes one
  // kind at a time); the answers are merged per (time, unit).
  GetMetricStatisticsRequest base;
  base.ns = q.metric.ns;
  base.metric = q.metric.metric;
  base.dimensions = q.metric.dimensions;
  base.start_ms = q.start_ms;
  base.end_ms = q.end_ms;
  base.period_s = q.period_s;
  base.unit = q.unit;
  base.merge_units = q.merge_units;
  GetMetricStatisticsRequest plain = base, extended = base;
  for (const Statistic& s : q.statistics) {
    (s.kind == Statistic::Kind::kPercentile ? extended.extended_statistics
                                                 : plain.statistics)
        .push_back(s.name);
  }
  // A flat list merged by sorting: a 100-query GetMetricData page makes 100
  // of these calls, and a tree node per datapoint showed in its profile.
  std::vector<StatisticsBucket> merged;
  for (const GetMetricStatisticsRequest* req : {&plain, &extended}) {
    if (req->statistics.empty() && req->extended_statistics.empty()) continue;
    absl::StatusOr<GetMetricStatisticsResponse> got =
        GetMetricStatistics(*view, *req);
    if (!got.ok()) return got.status();
    merged.reserve(merged.size() + got->datapoints.size());
    for (const Datapoint& d : got->datapoints) {
      StatisticsBucket& b = merged.emplace_back();
      b.t_ms = d.t_ms;
      b.unit = d.unit;
      b.values.resize(q.statistics.size());
      for (size_t i = 0; i < q.statistics.size(); ++i) {
        const Statistic& s = q.statistics[i];
        switch (s.kind) {
          case Statistic::Kind::kSampleCount: if (d.sample_count) b.values[i] = d.sample_count; break;
          case Statistic::Kind::kAverage: if (d.average) b.values[i] = d.average; break;
          case Statistic::Kind::kSum: if (d.sum) b.values[i] = d.sum; break;
          case Statistic::Kind::kMinimum: if (d.minimum) b.values[i] = d.minimum; break;
          case Statistic::Kind::kMaximum: if (d.maximum) b.values[i] = d.maximum; break;
          case Statistic::Kind::kPercentile:
            for (const auto& [name, value] : d.extended) {
              if (name == s.name) b.values[i] = value;
            }
            break;
        }
      }
    }
  }
  auto by_time_unit = [](const StatisticsBucket& a, const StatisticsBucket& b) {
    return a.t_ms != b.t_ms ? a.t_ms < b.t_ms : a.unit < b.unit;
  };
  if (!std::is_sorted(merged.begin(), merged.end(), by_time_unit)) {
    std::stable_sort(merged.begin(), merged.end(), by_time_unit);
  }
  for (StatisticsBucket& b : merged) {
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
    std::erase_if(out, [&](const StatisticsBucket& b) {
      return q.descending ? b.t_ms >= *q.resume_after_ms : b.t_ms <= *q.resume_after_ms;
    });
  }
  if (out.size() > q.max_buckets) out.resize(q.max_buckets);
  return out;
}

// The series ListMetricsFromView lists (with units) and their last values,
// unsorted and unlimited.
absl::Status ForEachListedSeries(
    const store::ReadView& view, const ListMetricsQuery& q,
    const std::function<void(store::SeriesRef&&, const store::LastValue&)>& fn) {
  return view.ForEachSeries(
      q.ns.value_or(""), q.metric.value_or(""), "",
      [&](store::SeriesRef&& series, std::string_view) {
        const model::SeriesKey& key = series.key;
        if (q.ns && key.ns != *q.ns) return true;
        if (q.metric && key.metric != *q.metric) return true;
        for (const DimensionFilter& f : q.dimensions) {
          const std::string* v = key.FindDimension(f.name);
          if (v == nullptr || (f.value && *v != *f.value)) return true;
        }
        if (q.after && !(*q.after < MetricId{key.ns, key.metric, key.dimensions})) return true;
        absl::StatusOr<std::optional<store::LastValue>> last = view.GetLastValue(series.id);
        if (!last.ok() || !last->has_value() || (*last)->t_ms < q.active_since_ms) return true;
        fn(std::move(series), **last);
        return true;
      });
}

absl::StatusOr<std::vector<MetricId>> ListMetricsFromView(const store::ReadView& view,
                                                          const ListMetricsQuery& q) {
  std::vector<MetricId> found;
  absl::Status s =
      ForEachListedSeries(view, q, [&](store::SeriesRef&& series, const store::LastValue&) {
        found.push_back({std::move(series.key.ns), std::move(series.key.metric),
                         std::move(series.key.dimensions)});
      });
  if (!s.ok()) return s;
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (found.size() > q.limit) found.resize(q.limit);
  return found;
}

absl::StatusOr<std::vector<SeriesInfo>> ListSeriesFromView(const store::ReadView& view,
                                                           const ListMetricsQuery& q) {
  std::vector<SeriesInfo> found;
  absl::Status s =
      ForEachListedSeries(view, q, [&](store::SeriesRef&& series, const store::LastValue& last) {
        found.push_back({std::move(series.key), LastSample{last.t_ms, last.value}});
      });
  if (!s.ok()) return s;
  std::sort(found.begin(), found.end(),
            [](const SeriesInfo& a, const SeriesInfo& b) { return a.key < b.key; });
  if (found.size() > q.limit) found.resize(q.limit);
  return found;
}

absl::StatusOr<std::optional<LastSample>> LastValueFromView(const store::ReadView& view,
                                                            const model::SeriesKey& key) {
  absl::StatusOr<std::optional<store::LastValue>> last = query::LastValue(view, key);
  if (!last.ok()) return last.status();
  if (!last->has_value()) return std::nullopt;
  return LastSample{(*last)->t_ms, (*last)->value};
}

// Calls `fn(key, lane, row)` for each raw row, start_ms <= t < end_ms, of
// every series of the metrics ListMetrics(query) finds (query.limit
// ignored), series by series; `want` (when set) picks the series read.
absl::Status ScanRawFromView(
    const store::ReadView& view, ListMetricsQuery query, int64_t start_ms, int64_t end_ms,
    const MetricsReader::SeriesFilter& want,
    const std::function<void(const model::SeriesKey& key)>& start_series,
    const std::function<void(uint8_t lane, const store::Row& row)>& fn) {
  query.limit = 500;
  while (true) {
    absl::StatusOr<std::vector<MetricId>> ids = ListMetricsFromView(view, query);
    if (!ids.ok()) return ids.status();
    for (const MetricId& id : *ids) {
      std::vector<store::SeriesRef> refs;
      TW_RETURN_IF_ERROR(view.FindSeries(id.ns, id.metric, id.dimensions, nullptr, &refs));
      for (const store::SeriesRef& ref : refs) {
        if (want && !want(ref.key)) continue;
        start_series(ref.key);
        TW_RETURN_IF_ERROR(view.ScanRows(ref.id, start_ms, end_ms, fn));
      }
    }
    if (ids->size() < query.limit) break;
    query.after = ids->back();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RawSeries>> ReadRawFromView(const store::ReadView& view,
                                                       const ListMetricsQuery& query,
                                                       int64_t start_ms, int64_t end_ms,
                                                       const MetricsReader::SeriesFilter& want) {
  std::vector<RawSeries> out;
  TW_RETURN_IF_ERROR(ScanRawFromView(
      view, query, start_ms, end_ms, want,
      [&](const model::SeriesKey& key) { out.push_back(RawSeries{key, {}}); },
      [&](uint8_t lane, const store::Row& row) {
        double v = row.c[0];
        if (store::LaneKind(lane) == store::SampleKind::kStatSet) {
          if (row.c[0] <= 0) return;
          v = row.c[1] / row.c[0];
        }
        out.back().samples.push_back({row.t_ms, v});
      }));
  // Rows come in no order, and overlapping chunks are not merged.
  for (RawSeries& series : out) {
    std::stable_sort(series.samples.begin(), series.samples.end(),
                     [](const model::Sample& a, const model::Sample& b) { return a.t_ms < b.t_ms; });
  }
  return out;
}

absl::StatusOr<std::vector<StoredSeries>> ReadStoredFromView(const store::ReadView& view,
                                                             const ListMetricsQuery& query,
                                                             int64_t start_ms, int64_t end_ms) {
  std::vector<StoredSeries> out;
  TW_RETURN_IF_ERROR(ScanRawFromView(
      view, query, start_ms, end_ms, nullptr,
      [&](const model::SeriesKey& key) { out.push_back(StoredSeries{key, {}}); },
      [&](uint8_t lane, const store::Row& row) {
        StoredRow r;
        r.t_ms = row.t_ms;
        r.high_resolution = !store::LaneIsStandardResolution(lane);
        switch (store::LaneKind(lane)) {
          case store::SampleKind::kPlain:
            r.value = row.c[0];
            break;
          case store::SampleKind::kWeighted:
            r.kind = StoredRow::Kind::kWeighted;
            r.value = row.c[0];
            r.count = row.c[1];
            break;
          case store::SampleKind::kStatSet:
            r.kind = StoredRow::Kind::kStatisticSet;
            r.count = row.c[0];
            r.sum = row.c[1];
            r.minimum = row.c[2];
            r.maximum = row.c[3];
            break;
        }
        out.back().rows.push_back(r);
      }));
  for (StoredSeries& series : out) {
    std::stable_sort(series.rows.begin(), series.rows.end(),
                     [](const StoredRow& a, const StoredRow& b) { return a.t_ms < b.t_ms; });
  }
  return out;
}

// Every read of one request on one read view.
class ViewMetricsReader final : public MetricsReader {
 public:
  explicit ViewMetricsReader(store::ReadView view) : view_(std::move(view)) {}
  absl::StatusOr<std::vector<StatisticsBucket>> GetStatistics(
      const StatisticsQuery& query) override {
    return StatisticsFromView(&view_, query);
  }
  absl::StatusOr<std::vector<MetricId>> ListMetrics(const ListMetricsQuery& query) override {
    return ListMetricsFromView(view_, query);
  }
  absl::StatusOr<std::optional<LastSample>> LastValue(const model::SeriesKey& key) override {
    return LastValueFromView(view_, key);
  }
  absl::StatusOr<std::vector<RawSeries>> ReadRaw(const ListMetricsQuery& query, int64_t start_ms,
                                                 int64_t end_ms, const SeriesFilter& want) override {
    return ReadRawFromView(view_, query, start_ms, end_ms, want);
  }
  absl::StatusOr<std::vector<SeriesInfo>> ListSeries(const ListMetricsQuery& query) override {
    return ListSeriesFromView(view_, query);
  }
  absl::StatusOr<ChartAnswer> Chart(const ChartQuery& query) override {
    return ChartFromView(view_, query);
  }
  std::unique_ptr<MetricsReader> Fork() override {
    return std::make_unique<ViewMetricsReader>(view_.Fork());
  }

 private:
  store::ReadView view_;
};

}  // namespace

absl::StatusOr<std::vector<StatisticsBucket>> StoreReader::GetStatistics(
    const StatisticsQuery& query) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return StatisticsFromView(&*view, query);
}

absl::StatusOr<std::vector<RawSeries>> StoreReader::ReadRaw(const ListMetricsQuery& query,
                                                           int64_t start_ms, int64_t end_ms,
                                                           const SeriesFilter& want) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return ReadRawFromView(*view, query, start_ms, end_ms, want);
}

absl::StatusOr<std::vector<StoredSeries>> StoreReader::ReadStored(const ListMetricsQuery& query,
                                                                 int64_t start_ms, int64_t end_ms) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return ReadStoredFromView(*view, query, start_ms, end_ms);
}

absl::StatusOr<store::ReadView> StoreReader::TakeView() {
  if (pinned_ != nullptr) return pinned_->Fork();
  return db_.View();
}

absl::StatusOr<std::unique_ptr<StoreReader>> StoreReader::Pinned() {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  auto reader = std::make_unique<StoreReader>(db_);
  reader->pinned_ = std::make_unique<store::ReadView>(*std::move(view));
  return reader;
}

StoreReader::~StoreReader() = default;

absl::StatusOr<std::unique_ptr<MetricsReader>> StoreReader::Snapshot() {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return std::make_unique<ViewMetricsReader>(std::move(*view));
}

absl::StatusOr<std::vector<MetricId>> StoreReader::ListMetrics(const ListMetricsQuery& q) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return ListMetricsFromView(*view, q);
}

absl::StatusOr<std::vector<SeriesInfo>> StoreReader::ListSeries(const ListMetricsQuery& q) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return ListSeriesFromView(*view, q);
}

absl::StatusOr<ChartAnswer> StoreReader::Chart(const ChartQuery& q) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return ChartFromView(*view, q);
}

absl::StatusOr<std::optional<LastSample>> StoreReader::LastValue(const model::SeriesKey& key) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return LastValueFromView(*view, key);
}

absl::StatusOr<std::vector<LogGroupInfo>> StoreReader::ListLogGroups(
    const std::string& prefix) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  std::vector<LogGroupInfo> out;
  absl::Status s = view->ForEachLogGroup(prefix, [&](store::LogGroupInfo&& group) {
    out.push_back({std::move(group.name), group.creation_ms, group.retention_days, 0});
    return true;
  });
  if (!s.ok()) return s;
  // A group's stored bytes are its streams'.
  for (LogGroupInfo& group : out) {
    s = view->ForEachLogStream(group.name, "", "", /*descending=*/false,
                               [&](store::LogStreamInfo&& stream) {
                                 group.stored_bytes += static_cast<int64_t>(stream.stored_bytes);
                                 return true;
                               });
    if (!s.ok()) return s;
  }
  return out;
}

absl::StatusOr<std::optional<int>> StoreReader::LogGroupRetention(const std::string& group) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<store::LogGroupInfo>> info = view->GetLogGroup(group);
  if (!info.ok()) return info.status();
  if (!info->has_value()) return absl::NotFoundError(kGroupNotFound);
  return (*info)->retention_days;
}

absl::StatusOr<std::vector<LogStreamInfo>> StoreReader::ListLogStreams(
    const std::string& group, const std::string& prefix) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<store::LogGroupInfo>> exists = view->GetLogGroup(group);
  if (!exists.ok()) return exists.status();
  if (!exists->has_value()) return absl::NotFoundError(kGroupNotFound);
  std::vector<LogStreamInfo> out;
  absl::Status s = view->ForEachLogStream(group, prefix, "", /*descending=*/false,
                                          [&](store::LogStreamInfo&& info) {
                                            out.push_back(FromStore(info));
                                            return true;
                                          });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<StoredLogEvent>> StoreReader::ReadLogStream(
    const LogReadQuery& q) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<store::LogGroupInfo>> group = view->GetLogGroup(q.stream.group);
  if (!group.ok()) return group.status();
  if (!group->has_value()) return absl::NotFoundError(kGroupNotFound);
  absl::StatusOr<std::optional<store::LogStreamInfo>> stream =
      view->GetLogStream(q.stream.group, q.stream.stream);
  if (!stream.ok()) return stream.status();
  if (!stream->has_value()) return absl::NotFoundError(kStreamNotFound);
  std::unique_ptr<store::LogCursor> cursor = view->NewLogCursor(**stream);
  std::vector<StoredLogEvent> out;
  size_t bytes = 0;
  auto take = [&](const store::StoredLogEvent& e) {
    size_t size = e.message.size() + kLogEventOverheadBytes;
    if (out.size() >= q.limit || (!out.empty() && bytes + size > q.max_bytes)) return false;
    bytes += size;
    out.push_back({q.stream.stream, FromStore(e.pos), e.ingestion_ms, e.message});
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

absl::StatusOr<LogFilterPage> StoreReader::FilterLogEvents(
    const LogFilterQuery& q) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  absl::StatusOr<std::optional<store::LogGroupInfo>> group = view->GetLogGroup(q.group);
  if (!group.ok()) return group.status();
  if (!group->has_value()) return absl::NotFoundError(kGroupNotFound);

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
  LogFilterPage page;
  size_t bytes = 0, scanned = 0;
  while (!heap.empty()) {
    size_t i = heap.top();
    heap.pop();
    store::LogCursor& c = *sources[i].cursor;
    store::LogPosition pos = c.position();
    if (q.end_ms && pos.t_ms > *q.end_ms) continue;  // this stream is done
    if (++scanned > q.scan_budget) {
      page.next = FromStore({pos.t_ms, pos.seq > 0 ? pos.seq - 1 : 0});
      break;
    }
    absl::StatusOr<store::StoredLogEvent> e = c.event();
    if (!e.ok()) return e.status();
    if (q.pattern == nullptr || q.pattern->Matches(e->message)) {
      size_t size = e->message.size() + kLogEventOverheadBytes;
      if (page.events.size() >= q.limit || (!page.events.empty() && bytes + size > q.max_bytes)) {
        page.next = page.events.back().position;
        break;
      }
      bytes += size;
      page.events.push_back({sources[i].stream, FromStore(e->pos), e->ingestion_ms, e->message});
    }
    c.Next();
    if (c.Valid()) heap.push(i);
  }
  return page;
}

absl::StatusOr<std::optional<model::JobRecord>> StoreReader::GetJob(const std::string& name) {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  return view->GetJob(name);
}

absl::StatusOr<std::vector<model::JobRecord>> StoreReader::ListJobs() {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  std::vector<model::JobRecord> jobs;
  absl::Status s = view->ForEachJob([&](model::JobRecord&& job) {
    jobs.push_back(std::move(job));
    return true;
  });
  if (!s.ok()) return s;
  return jobs;
}

absl::StatusOr<std::vector<model::AlarmRecord>> StoreReader::ListAlarms() {
  absl::StatusOr<store::ReadView> view = TakeView();
  if (!view.ok()) return view.status();
  std::vector<model::AlarmRecord> alarms;
  absl::Status s = view->ForEachAlarm([&](model::AlarmRecord&& alarm) {
    alarms.push_back(std::move(alarm));
    return true;
  });
  if (!s.ok()) return s;
  return alarms;
}

}  // namespace trainwatch::query
