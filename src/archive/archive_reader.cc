#include "archive/archive_reader.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "archive/job_archive.h"
#include "model/job_events.h"
#include "model/job_record_json.h"
#include "nlohmann/json.hpp"
#include "query/m4.h"
#include "util/gzip.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

namespace trainwatch::archive {
namespace {

constexpr size_t kMaxObjectBytes = size_t{4} << 30;
// The first archived event of a timestamp's position number (LoadLogs).
constexpr int64_t kArchivedSeqBase = INT64_MIN / 2;

// One RFC 4180 record of a line without line breaks inside fields.
std::vector<std::string> CsvFields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

// Each line after the header.
template <typename Fn>
absl::Status ForEachLine(std::string_view text, const std::string& what, Fn fn) {
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no++ == 0 || line.empty()) continue;
    if (!fn(line)) {
      return absl::DataLossError(absl::StrFormat("%s, line %d: not of the archive's format: %s",
                                                 what, line_no, line.substr(0, 200)));
    }
  }
  return absl::OkStatus();
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) {
    *out = 0;
    return true;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

absl::StatusOr<std::string> Read(model::ObjectStore* store, const std::string& key, bool gzipped) {
  TW_ASSIGN_OR_RETURN(std::optional<std::string> data, store->Get(key));
  if (!data) return absl::DataLossError(absl::StrFormat("%s/%s is missing", store->Describe(), key));
  if (!gzipped) return *std::move(data);
  absl::StatusOr<std::string> text = util::Gunzip(*data, kMaxObjectBytes);
  if (!text.ok()) {
    return absl::DataLossError(
        absl::StrFormat("%s/%s: %s", store->Describe(), key, text.status().message()));
  }
  return text;
}

bool Matches(const model::SeriesKey& key, const query::ListMetricsQuery& q) {
  if (q.ns && key.ns != *q.ns) return false;
  if (q.metric && key.metric != *q.metric) return false;
  for (const query::DimensionFilter& f : q.dimensions) {
    auto it = std::find_if(key.dimensions.begin(), key.dimensions.end(),
                           [&](const model::Dimension& d) { return d.name == f.name; });
    if (it == key.dimensions.end() || (f.value && it->value != *f.value)) return false;
  }
  return true;
}

bool SameRow(const query::StoredRow& a, const query::StoredRow& b) { return a == b; }

// Rows of the two sides of one series in time order, each row as many times
// as the side that has it more often.
std::vector<query::StoredRow> MergeRows(std::vector<query::StoredRow> local,
                                        const std::vector<query::StoredRow>& archived) {
  std::vector<query::StoredRow> out;
  out.reserve(std::max(local.size(), archived.size()));
  size_t i = 0, j = 0;
  auto before = [](const query::StoredRow& a, const query::StoredRow& b) {
    return a.t_ms < b.t_ms;
  };
  while (i < local.size() || j < archived.size()) {
    if (j == archived.size() || (i < local.size() && before(local[i], archived[j]))) {
      out.push_back(local[i++]);
    } else if (i == local.size() || before(archived[j], local[i])) {
      out.push_back(archived[j++]);
    } else {
      // The same time on both sides: the rows of that time, as a multiset union.
      const int64_t t = local[i].t_ms;
      std::vector<query::StoredRow> a, b;
      while (i < local.size() && local[i].t_ms == t) a.push_back(local[i++]);
      while (j < archived.size() && archived[j].t_ms == t) b.push_back(archived[j++]);
      std::vector<bool> used(a.size(), false);
      for (const query::StoredRow& row : b) {
        bool found = false;
        for (size_t k = 0; k < a.size() && !found; ++k) {
          if (!used[k] && SameRow(a[k], row)) used[k] = found = true;
        }
        if (!found) out.push_back(row);
      }
      out.insert(out.end(), a.begin(), a.end());
    }
  }
  return out;
}

std::vector<query::StoredSeries> Merge(std::vector<query::StoredSeries> local,
                                       const ArchivedJob& job, const query::ListMetricsQuery& q,
                                       int64_t start_ms, int64_t end_ms) {
  std::map<model::SeriesKey, std::vector<query::StoredRow>> by_key;
  for (query::StoredSeries& s : local) by_key[s.key] = std::move(s.rows);
  for (const query::StoredSeries& s : job.series) {
    if (!Matches(s.key, q)) continue;
    std::vector<query::StoredRow> rows;
    for (const query::StoredRow& r : s.rows) {
      if (r.t_ms >= start_ms && r.t_ms < end_ms) rows.push_back(r);
    }
    if (rows.empty()) continue;
    std::vector<query::StoredRow>& mine = by_key[s.key];
    mine = MergeRows(std::move(mine), rows);
  }
  std::vector<query::StoredSeries> out;
  for (auto& [key, rows] : by_key) out.push_back({key, std::move(rows)});
  return out;
}

// A segment's (or late segment's) samples, added to *by_key; `prefix` ends
// with '/'.
absl::Status ReadSamplesOf(model::ObjectStore* store, const std::string& prefix,
                           std::map<model::SeriesKey, std::vector<query::StoredRow>>* by_key) {
  TW_ASSIGN_OR_RETURN(std::string series_csv, Read(store, prefix + "series.csv", false));
  std::vector<model::SeriesKey> keys;
  TW_RETURN_IF_ERROR(ForEachLine(series_csv, prefix + "series.csv", [&](std::string_view line) {
    std::vector<std::string> f = CsvFields(line);
    if (f.size() != 5) return false;
    nlohmann::json dims = nlohmann::json::parse(f[4], nullptr, false);
    if (!dims.is_object()) return false;
    model::SeriesKey key;
    key.ns = f[1];
    key.metric = f[2];
    key.unit = f[3];
    for (const auto& [n, v] : dims.items()) {
      if (!v.is_string()) return false;
      key.dimensions.push_back({n, v.get<std::string>()});
    }
    std::sort(key.dimensions.begin(), key.dimensions.end());
    keys.push_back(std::move(key));
    return true;
  }));
  TW_ASSIGN_OR_RETURN(std::string samples_csv, Read(store, prefix + "samples.csv.gz", true));
  TW_RETURN_IF_ERROR(ForEachLine(samples_csv, prefix + "samples.csv.gz", [&](std::string_view line) {
    std::vector<std::string> f = CsvFields(line);
    size_t series = 0;
    query::StoredRow r;
    if (f.size() != 8 || !absl::SimpleAtoi(f[0], &series) || series >= keys.size() ||
        !absl::SimpleAtoi(f[1], &r.t_ms) || !ParseDouble(f[2], &r.value) ||
        !ParseDouble(f[3], &r.count) || !ParseDouble(f[4], &r.sum) ||
        !ParseDouble(f[5], &r.minimum) || !ParseDouble(f[6], &r.maximum)) {
      return false;
    }
    r.kind = !f[4].empty()   ? query::StoredRow::Kind::kStatisticSet
             : !f[3].empty() ? query::StoredRow::Kind::kWeighted
                             : query::StoredRow::Kind::kPlain;
    r.high_resolution = f[7] == "1";
    (*by_key)[keys[series]].push_back(r);
    return true;
  }));
  return absl::OkStatus();
}

// A segment's (or late segment's) log events, added to *streams.
absl::Status ReadLogsOf(model::ObjectStore* store, const std::string& key,
                        std::map<std::string, std::vector<query::StoredLogEvent>>* streams) {
  TW_ASSIGN_OR_RETURN(std::string text, Read(store, key, true));
  size_t line_no = 0;
  for (std::string_view rest = text; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object() || !e.contains("stream") || !e["stream"].is_string() ||
        !e.contains("timestamp_ms") || !e["timestamp_ms"].is_number_integer() ||
        !e.contains("message") || !e["message"].is_string()) {
      return absl::DataLossError(absl::StrFormat("%s/%s, line %d: not of the archive's format: %s",
                                                 store->Describe(), key, line_no,
                                                 line.substr(0, 200)));
    }
    query::StoredLogEvent event;
    event.position.t_ms = e["timestamp_ms"].get<int64_t>();
    event.ingestion_ms = event.position.t_ms;
    if (auto at = e.find("ingestion_ms"); at != e.end() && at->is_number_integer()) {
      event.ingestion_ms = at->get<int64_t>();
    }
    event.message = e["message"].get<std::string>();
    (*streams)[e["stream"].get<std::string>()].push_back(std::move(event));
  }
  return absl::OkStatus();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<bool> ArchiveReader::HoldsComplete(const std::string& job, int64_t* creation_ms) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  {
    util::MutexLock lock(mu_);
    if (auto it = complete_.find(job); it != complete_.end()) {
      if (creation_ms != nullptr) *creation_ms = it->second;
      return true;
    }
    auto it = not_complete_.find(job);
    if (it != not_complete_.end() && now_ms - it->second < 60'000) return false;
  }
  absl::StatusOr<std::optional<std::string>> text = store_->Get(JobFolderKey(job) + "/job.json");
  nlohmann::json doc = text.ok() && text->has_value() ? nlohmann::json::parse(**text, nullptr, false)
                                                      : nlohmann::json();
  const bool complete = doc.is_object() && doc.value("complete", false);
  int64_t created = 0;
  if (complete && doc.contains("job") && doc["job"].is_object()) {
    created = doc["job"].value("creation_ms", int64_t{0});
  }
  util::MutexLock lock(mu_);
  if (complete) {
    if (complete_.size() > 10'000) complete_.clear();
    complete_[job] = created;
    if (creation_ms != nullptr) *creation_ms = created;
  } else {
    // An archive that cannot be read is not asked again for a minute either.
    if (not_complete_.size() > 10'000) not_complete_.clear();
    not_complete_[job] = now_ms;
  }
  if (!text.ok()) return text.status();
  return complete;
}

bool ArchiveReader::LateUnchanged(const std::string& job, const std::vector<std::string>& late) {
  absl::StatusOr<std::vector<std::string>> now_late = CompleteLateSegments(store_, job);
  return now_late.ok() && *now_late == late;
}

absl::StatusOr<std::shared_ptr<const ArchivedJob>> ArchiveReader::Load(const std::string& name) {
  std::shared_ptr<const ArchivedJob> cached;
  int64_t checked_ms = 0;
  {
    util::MutexLock lock(mu_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->job->record.name == name) {
        cache_.splice(cache_.begin(), cache_, it);
        cached = it->job;
        checked_ms = it->checked_ms;
        break;
      }
    }
  }
  if (cached != nullptr) {
    if (SteadyMs() - checked_ms < kLateCheckMs) return cached;
    // A late segment may have come since: a List, at most once a minute.
    if (LateUnchanged(name, cached->late)) {
      util::MutexLock lock(mu_);
      for (CachedJob& c : cache_) {
        if (c.job == cached) c.checked_ms = SteadyMs();
      }
      return cached;
    }
  }
  const std::string job_key = JobFolderKey(name) + "/job.json";
  TW_ASSIGN_OR_RETURN(std::optional<std::string> text, store_->Get(job_key));
  if (!text) return nullptr;
  auto job = std::make_shared<ArchivedJob>();
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object() || doc.value("format", "") != "trainwatch-archive" ||
      !doc.contains("job")) {
    return absl::DataLossError(
        absl::StrFormat("%s/%s is not a trainwatch archive's job.json", store_->Describe(), job_key));
  }
  if (doc.value("version", 0) > kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s/%s is archive format %d; this trainwatch reads format %d: use a newer trainwatch",
        store_->Describe(), job_key, doc.value("version", 0), kFormatVersion));
  }
  TW_ASSIGN_OR_RETURN(job->record, model::JobRecordFromWireJson(doc["job"]));
  job->complete = doc.value("complete", false);
  TW_ASSIGN_OR_RETURN(auto segments, CompleteSegments(store_, name));
  TW_ASSIGN_OR_RETURN(job->late, CompleteLateSegments(store_, name));
  std::map<model::SeriesKey, std::vector<query::StoredRow>> by_key;
  for (const auto& [from, to] : segments) {
    TW_RETURN_IF_ERROR(ReadSamplesOf(
        store_, absl::StrFormat("%s/segments/%s/", JobFolderKey(name), SegmentName(from, to)),
        &by_key));
  }
  // Data that came after its window was archived.
  for (const std::string& id : job->late) {
    TW_RETURN_IF_ERROR(
        ReadSamplesOf(store_, absl::StrFormat("%s/late/%s/", JobFolderKey(name), id), &by_key));
  }
  for (auto& [key, rows] : by_key) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const query::StoredRow& a, const query::StoredRow& b) { return a.t_ms < b.t_ms; });
    job->series.push_back({key, std::move(rows)});
  }
  if (job->complete) {
    util::MutexLock lock(mu_);
    std::erase_if(cache_, [&](const CachedJob& c) { return c.job->record.name == name; });
    cache_.push_front({job, SteadyMs()});
    while (cache_.size() > cached_jobs_) cache_.pop_back();
  }
  return std::shared_ptr<const ArchivedJob>(std::move(job));
}

absl::StatusOr<std::shared_ptr<const ArchivedLogs>> ArchiveReader::LoadLogs(
    const std::string& name) {
  std::shared_ptr<const ArchivedLogs> cached;
  int64_t checked_ms = 0;
  {
    util::MutexLock lock(mu_);
    if (logs_cache_.logs != nullptr && logs_cache_.logs->job == name) {
      cached = logs_cache_.logs;
      checked_ms = logs_cache_.checked_ms;
    }
  }
  if (cached != nullptr) {
    if (SteadyMs() - checked_ms < kLateCheckMs) return cached;
    if (LateUnchanged(name, cached->late)) {
      util::MutexLock lock(mu_);
      if (logs_cache_.logs == cached) logs_cache_.checked_ms = SteadyMs();
      return cached;
    }
  }
  auto logs = std::make_shared<ArchivedLogs>();
  logs->job = name;
  TW_ASSIGN_OR_RETURN(bool complete, HoldsComplete(name));
  TW_ASSIGN_OR_RETURN(auto segments, CompleteSegments(store_, name));
  for (const auto& [from, to] : segments) {
    TW_RETURN_IF_ERROR(ReadLogsOf(store_,
                                  absl::StrFormat("%s/segments/%s/logs.jsonl.gz", JobFolderKey(name),
                                                  SegmentName(from, to)),
                                  &logs->streams));
  }
  TW_ASSIGN_OR_RETURN(logs->late, CompleteLateSegments(store_, name));
  for (const std::string& id : logs->late) {
    TW_RETURN_IF_ERROR(ReadLogsOf(
        store_, absl::StrFormat("%s/late/%s/logs.jsonl.gz", JobFolderKey(name), id), &logs->streams));
  }
  for (auto& [stream, events] : logs->streams) {
    std::stable_sort(events.begin(), events.end(),
                     [](const query::StoredLogEvent& a, const query::StoredLogEvent& b) {
                       return a.position.t_ms < b.position.t_ms;
                     });
    // Numbered within their timestamp, below the data folder's (>= 0): a
    // late segment that comes later sorts after the others of a timestamp,
    // so an earlier event's position (in a paging token) stays its own.
    for (size_t i = 0; i < events.size(); ++i) {
      const bool same_time = i > 0 && events[i - 1].position.t_ms == events[i].position.t_ms;
      events[i].position.seq = same_time ? events[i - 1].position.seq + 1 : kArchivedSeqBase;
    }
  }
  if (complete) {
    util::MutexLock lock(mu_);
    logs_cache_ = {logs, SteadyMs()};
  }
  return std::shared_ptr<const ArchivedLogs>(std::move(logs));
}

bool ArchiveReader::ServesJob(query::JobsReader* jobs, const std::string& name) {
  // A job the data folder knows as running is all there.
  std::optional<model::JobRecord> local;
  if (jobs != nullptr) {
    absl::StatusOr<std::optional<model::JobRecord>> got = jobs->GetJob(name);
    if (got.ok()) local = *std::move(got);
    if (local && !model::IsTerminal(local->status)) return false;
  }
  int64_t archived_creation_ms = 0;
  absl::StatusOr<bool> complete = HoldsComplete(name, &archived_creation_ms);
  if (!complete.ok()) {
    util::LogOnce("archive-read", absl::StrFormat("reading job %s from the archive: %s; answering "
                                                  "from the data folder alone",
                                                  name, complete.status().message()));
    return false;
  }
  if (*complete && local && archived_creation_ms != 0 &&
      archived_creation_ms != local->creation_ms) {
    util::LogOnce("archive-other-job-" + name,
                  absl::StrFormat("the archive's job %s is another job of that name (created "
                                  "%s); answering from the data folder alone",
                                  name, util::FormatIso8601Ms(archived_creation_ms)));
    return false;
  }
  return *complete;
}

std::shared_ptr<const ArchivedJob> ArchiveBackedMetricsReader::ArchivedJobOf(
    const std::vector<model::Dimension>& dimensions) {
  std::optional<std::string> name;
  for (const model::Dimension& d : dimensions) {
    if ((name = JobOfDimension(d.name, d.value))) break;
  }
  if (!name || !archive_->ServesJob(jobs_, *name)) return nullptr;
  absl::StatusOr<std::shared_ptr<const ArchivedJob>> job = archive_->Load(*name);
  if (!job.ok()) {
    util::LogOnce("archive-read", absl::StrFormat("reading job %s from the archive: %s; answering "
                                                  "from the data folder alone",
                                                  *name, job.status().message()));
    return nullptr;
  }
  return *job;
}

absl::StatusOr<std::vector<query::StoredSeries>> ArchiveBackedMetricsReader::ReadStored(
    const query::ListMetricsQuery& query, int64_t start_ms, int64_t end_ms) {
  TW_ASSIGN_OR_RETURN(std::vector<query::StoredSeries> local,
                      local_->ReadStored(query, start_ms, end_ms));
  std::vector<model::Dimension> named;
  for (const query::DimensionFilter& f : query.dimensions) {
    if (f.value) named.push_back({f.name, *f.value});
  }
  std::shared_ptr<const ArchivedJob> job = ArchivedJobOf(named);
  if (job == nullptr) return local;
  return Merge(std::move(local), *job, query, start_ms, end_ms);
}

absl::StatusOr<std::vector<query::RawSeries>> ArchiveBackedMetricsReader::ReadRaw(
    const query::ListMetricsQuery& query, int64_t start_ms, int64_t end_ms,
    const SeriesFilter& want) {
  std::vector<model::Dimension> named;
  for (const query::DimensionFilter& f : query.dimensions) {
    if (f.value) named.push_back({f.name, *f.value});
  }
  if (ArchivedJobOf(named) == nullptr) return local_->ReadRaw(query, start_ms, end_ms, want);
  TW_ASSIGN_OR_RETURN(std::vector<query::StoredSeries> stored, ReadStored(query, start_ms, end_ms));
  std::vector<query::RawSeries> out;
  for (query::StoredSeries& s : stored) {
    if (want && !want(s.key)) continue;
    query::RawSeries raw{std::move(s.key), {}};
    for (const query::StoredRow& r : s.rows) {
      if (r.kind == query::StoredRow::Kind::kStatisticSet) {
        if (r.count > 0) raw.samples.push_back({r.t_ms, r.sum / r.count});
      } else {
        raw.samples.push_back({r.t_ms, r.value});
      }
    }
    out.push_back(std::move(raw));
  }
  return out;
}

absl::StatusOr<query::ChartAnswer> ArchiveBackedMetricsReader::Chart(const query::ChartQuery& q) {
  TW_ASSIGN_OR_RETURN(query::ChartAnswer local, local_->Chart(q));
  // Raw samples all the way: the data folder has everything of the range.
  if (local.tier_period_s == 0) return local;
  std::shared_ptr<const ArchivedJob> job = ArchivedJobOf(q.metric.dimensions);
  if (job == nullptr) return local;
  // Every sample of the series: the data folder's raw rows and the archive's.
  query::ListMetricsQuery series_query;
  series_query.ns = q.metric.ns;
  series_query.metric = q.metric.metric;
  for (const model::Dimension& d : q.metric.dimensions) {
    series_query.dimensions.push_back({d.name, d.value});
  }
  TW_ASSIGN_OR_RETURN(std::vector<query::StoredSeries> stored,
                      ReadStored(series_query, q.start_ms, q.end_ms));
  query::ChartAnswer out;
  out.x_kind = q.x;
  out.x_start = q.start_ms;
  out.x_end = q.end_ms;
  std::optional<query::StepMap> steps;
  if (q.x == query::ChartX::kStep) {
    // The archived record names the step metric; its samples are archived too.
    query::ListMetricsQuery step_query;
    step_query.ns = std::string(model::kTrainingJobsNamespace);
    step_query.metric = job->record.step_metric;
    step_query.dimensions.push_back({std::string(model::kTrainingJobNameDim), job->record.name});
    if (job->record.step_metric.empty()) return local;
    TW_ASSIGN_OR_RETURN(std::vector<query::StoredSeries> step_series,
                        ReadStored(step_query, std::min(job->record.creation_ms, q.start_ms),
                                   q.end_ms));
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const query::StoredSeries& s : step_series) {
      if (s.key.dimensions.size() != 1) continue;
      for (const query::StoredRow& r : s.rows) pairs.emplace_back(r.t_ms, query::StepOfValue(r.value));
    }
    query::StepMap map(std::move(pairs));
    std::optional<std::pair<int64_t, int64_t>> span = map.Span(q.start_ms, q.end_ms);
    if (!span) return local;
    out.x_start = span->first;
    out.x_end = span->second;
    steps.emplace(std::move(map));
  }
  out.column = (static_cast<double>(out.x_end) - static_cast<double>(out.x_start)) / q.width;
  query::M4 m4(out.x_start, out.x_end, q.width);
  auto add = [&](int64_t t, double v) {
    if (!steps) {
      m4.Add(t, t, v);
    } else if (std::optional<int64_t> step = steps->At(t)) {
      m4.Add(*step, t, v);
    }
  };
  for (const query::StoredSeries& s : stored) {
    // The chart's series: the exact dimension set, the unit when asked.
    if (s.key.dimensions.size() != q.metric.dimensions.size()) continue;
    if (q.unit && s.key.unit != *q.unit) continue;
    for (const query::StoredRow& r : s.rows) {
      if (r.kind == query::StoredRow::Kind::kStatisticSet) {
        add(r.t_ms, r.minimum);
        if (r.maximum != r.minimum) add(r.t_ms, r.maximum);
      } else {
        add(r.t_ms, r.value);
      }
    }
  }
  m4.FinishInto(&out);
  return out;
}

}  // namespace trainwatch::archive
