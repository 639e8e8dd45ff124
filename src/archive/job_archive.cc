#include "archive/job_archive.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "model/job_record_json.h"
#include "model/log_event.h"
#include "nlohmann/json.hpp"
#include "query/jobs.h"
#include "util/gzip.h"
#include "util/time_parse.h"
#include "util/status_macros.h"

namespace trainwatch::archive {
namespace {

constexpr int64_t kFutureLimitMs = 2 * 3'600'000;

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line end.
void AppendCsvField(std::string_view field, std::string* out) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    out->append(field);
    return;
  }
  out->push_back('"');
  for (char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

// The shortest text that reads back as the same double.
void AppendNumber(double v, std::string* out) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, ec == std::errc() ? end : buffer);
}

std::string SegmentPrefix(const std::string& job, const std::string& segment) {
  return absl::StrCat(JobFolderKey(job), "/segments/", segment);
}

struct Segment {
  std::string series_csv = "series,namespace,metric,unit,dimensions\n";
  std::string samples_csv =
      "series,timestamp_ms,value,count,sum,minimum,maximum,storage_resolution\n";
  std::string logs_jsonl;
  int64_t series = 0;
  int64_t samples = 0;
  int64_t log_events = 0;
};

// One series and its rows (in time order) into the segment.
void AddSeries(const model::SeriesKey& key, const std::vector<query::StoredRow>& rows,
               Segment* out) {
  const int64_t id = out->series++;
  absl::StrAppend(&out->series_csv, id, ",");
  AppendCsvField(key.ns, &out->series_csv);
  out->series_csv.push_back(',');
  AppendCsvField(key.metric, &out->series_csv);
  out->series_csv.push_back(',');
  AppendCsvField(key.unit, &out->series_csv);
  out->series_csv.push_back(',');
  nlohmann::ordered_json dims = nlohmann::ordered_json::object();
  for (const model::Dimension& d : key.dimensions) dims[d.name] = d.value;
  AppendCsvField(dims.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                 &out->series_csv);
  out->series_csv.push_back('\n');
  std::string& csv = out->samples_csv;
  for (const query::StoredRow& r : rows) {
    absl::StrAppend(&csv, id, ",", r.t_ms, ",");
    switch (r.kind) {
      case query::StoredRow::Kind::kPlain:
        AppendNumber(r.value, &csv);
        csv += ",,,,";
        break;
      case query::StoredRow::Kind::kWeighted:
        AppendNumber(r.value, &csv);
        csv.push_back(',');
        AppendNumber(r.count, &csv);
        csv += ",,,";
        break;
      case query::StoredRow::Kind::kStatisticSet:
        csv.push_back(',');
        for (double v : {r.count, r.sum, r.minimum}) {
          AppendNumber(v, &csv);
          csv.push_back(',');
        }
        AppendNumber(r.maximum, &csv);
        break;
    }
    csv += r.high_resolution ? ",1\n" : ",60\n";
    ++out->samples;
  }
}

void AddLogEvent(const std::string& stream, int64_t t_ms, int64_t ingestion_ms,
                 const std::string& message, Segment* out) {
  nlohmann::ordered_json line = {{"stream", stream},
                                 {"timestamp_ms", t_ms},
                                 {"ingestion_ms", ingestion_ms},
                                 {"message", message}};
  out->logs_jsonl += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out->logs_jsonl.push_back('\n');
  ++out->log_events;
}

absl::Status AddMetrics(const ArchiveReaders& readers, const model::JobRecord& job,
                        int64_t from_ms, int64_t to_ms, Segment* out) {
  std::map<model::SeriesKey, std::vector<query::StoredRow>> by_key;  // a series found twice, once
  for (const auto& [group, q] : query::JobSeriesQueries(job)) {
    (void)group;
    absl::StatusOr<std::vector<query::StoredSeries>> series =
        readers.metrics->ReadStored(q, from_ms, to_ms);
    if (!series.ok()) return series.status();
    for (query::StoredSeries& s : *series) {
      if (!s.rows.empty()) by_key.try_emplace(s.key, std::move(s.rows));
    }
  }
  for (const auto& [key, rows] : by_key) AddSeries(key, rows, out);
  return absl::OkStatus();
}

absl::Status AddLogs(const ArchiveReaders& readers, const model::JobRecord& job, int64_t from_ms,
                     int64_t to_ms, Segment* out) {
  const std::string group(model::kTrainingJobsLogGroup);
  absl::StatusOr<std::vector<query::LogStreamInfo>> streams =
      readers.logs->ListLogStreams(group, job.name + "/");
  if (!streams.ok()) {
    // No job has written a log yet: no group.
    if (absl::IsNotFound(streams.status())) return absl::OkStatus();
    return streams.status();
  }
  for (const query::LogStreamInfo& stream : *streams) {
    query::LogReadQuery q;
    q.stream = {group, stream.name};
    q.start_ms = from_ms;
    q.end_ms = to_ms;
    while (true) {
      absl::StatusOr<std::vector<query::StoredLogEvent>> events = readers.logs->ReadLogStream(q);
      if (!events.ok()) return events.status();
      for (const query::StoredLogEvent& e : *events) {
        AddLogEvent(stream.name, e.position.t_ms, e.ingestion_ms, e.message, out);
      }
      if (events->empty()) break;
      // The next page starts after the last event read.
      query::LogPosition next = events->back().position;
      ++next.seq;
      q.from = next;
    }
  }
  return absl::OkStatus();
}

absl::Status PutObject(model::ObjectStore* store, const std::string& key, std::string_view data,
                       const std::string& job, int64_t* bytes) {
  absl::Status s = store->Put(key, data);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrFormat("archiving job %s to %s: %s", job,
                                                  store->Describe(), s.message()));
  }
  *bytes += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

// A segment's objects, then its manifest (with their sizes) last.
absl::Status PutSegment(model::ObjectStore* store, const std::string& prefix,
                        const Segment& segment, const std::string& job,
                        nlohmann::ordered_json manifest, int64_t* bytes) {
  nlohmann::ordered_json objects = nlohmann::ordered_json::object();
  auto put = [&](const char* file, std::string_view data, int64_t rows) -> absl::Status {
    TW_RETURN_IF_ERROR(PutObject(store, absl::StrCat(prefix, "/", file), data, job, bytes));
    objects[file] = {{"bytes", data.size()}, {"rows", rows}};
    return absl::OkStatus();
  };
  TW_RETURN_IF_ERROR(put("series.csv", segment.series_csv, segment.series));
  TW_RETURN_IF_ERROR(put("samples.csv.gz", util::Gzip(segment.samples_csv), segment.samples));
  TW_RETURN_IF_ERROR(put("logs.jsonl.gz", util::Gzip(segment.logs_jsonl), segment.log_events));
  manifest["objects"] = objects;
  // Last: the segment is complete once its manifest is there.
  return PutObject(store, absl::StrCat(prefix, "/manifest.json"), manifest.dump(2) + "\n", job,
                   bytes);
}

}  // namespace

std::string JobFolderKey(const std::string& job) { return absl::StrCat("jobs/", job); }

std::string SegmentName(int64_t from_ms, int64_t to_ms) {
  return absl::StrFormat("%013d-%013d", from_ms, to_ms);
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> CompleteSegments(
    model::ObjectStore* store, const std::string& job) {
  const std::string prefix = absl::StrCat(JobFolderKey(job), "/segments/");
  absl::StatusOr<std::vector<std::string>> keys = store->List(prefix);
  if (!keys.ok()) return keys.status();
  std::vector<std::pair<int64_t, int64_t>> segments;
  for (const std::string& key : *keys) {
    std::string_view rest = std::string_view(key).substr(prefix.size());
    if (!rest.ends_with("/manifest.json")) continue;
    rest.remove_suffix(std::string_view("/manifest.json").size());
    const size_t dash = rest.find('-');
    int64_t from = 0, to = 0;
    if (dash == std::string_view::npos || !absl::SimpleAtoi(std::string(rest.substr(0, dash)), &from) ||
        !absl::SimpleAtoi(std::string(rest.substr(dash + 1)), &to)) {
      continue;  // not a segment of this format
    }
    segments.emplace_back(from, to);
  }
  std::sort(segments.begin(), segments.end());
  // Two writers at once (a hand run beside the server's) may have written
  // overlapping windows: the first of them counts, the others would repeat it.
  std::vector<std::pair<int64_t, int64_t>> kept;
  for (const auto& segment : segments) {
    if (kept.empty() || segment.first >= kept.back().second) kept.push_back(segment);
  }
  return kept;
}

absl::StatusOr<JobArchivePlan> PlanJobArchive(const model::JobRecord& job,
                                              model::ObjectStore* store,
                                              const ArchiveOptions& options, int64_t read_to_ms) {
  JobArchivePlan plan;
  // Ended a settle time ago: data may still arrive just after a job ends (an
  // agent's spool delivered late, a runner found silent but only cut off).
  const int64_t ended_ms = job.training_end_ms.value_or(job.last_modified_ms);
  plan.ended = model::IsTerminal(job.status) && options.now_ms - ended_ms >= options.settle_ms;
  // Where the last pass stopped.
  TW_ASSIGN_OR_RETURN(plan.stored_job_json,
                      store->Get(absl::StrCat(JobFolderKey(job.name), "/job.json")));
  if (plan.stored_job_json.has_value()) {
    nlohmann::json old = nlohmann::json::parse(*plan.stored_job_json, nullptr, false);
    // The archive names a job's folder by its name: a job of another data
    // folder (or an earlier run) of that name is not this one, and writing
    // would mix the two, or skip this one as complete.
    if (old.is_object() && old.contains("job") && old["job"].is_object() &&
        old["job"].value("creation_ms", job.creation_ms) != job.creation_ms) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "job %s: the archive holds another job of that name (created %s, this one %s); "
          "archive this folder's jobs under another prefix (--to), or rename one of them",
          job.name, util::FormatIso8601Ms(old["job"].value("creation_ms", int64_t{0})),
          util::FormatIso8601Ms(job.creation_ms)));
    }
    // Complete stays complete: a later pass with a longer settle time must
    // not mark it otherwise (late samples go to late segments, not here).
    if (old.is_object() && old.value("complete", false) && model::IsTerminal(job.status)) {
      plan.skip = true;
      return plan;
    }
  }
  TW_ASSIGN_OR_RETURN(plan.segments, CompleteSegments(store, job.name));
  // (An archive without this job's job.json was wiped or is new: from the
  // start, whatever an earlier pass read.)
  plan.from_ms = std::max(plan.segments.empty() ? 0 : plan.segments.back().second,
                          plan.stored_job_json.has_value() ? read_to_ms : 0);
  // An ended job's last segment runs to the latest time a sample may carry
  // (PutMetricData takes them up to 2 h ahead).
  plan.to_ms = plan.ended ? options.now_ms + kFutureLimitMs : options.now_ms - options.settle_ms;
  return plan;
}

absl::StatusOr<JobArchivePass> ArchiveJob(const ArchiveReaders& readers,
                                          const model::JobRecord& job, model::ObjectStore* store,
                                          const ArchiveOptions& options) {
  TW_ASSIGN_OR_RETURN(JobArchivePlan plan, PlanJobArchive(job, store, options));
  return ArchiveJob(readers, job, store, options, plan);
}

absl::StatusOr<JobArchivePass> ArchiveJob(const ArchiveReaders& readers,
                                          const model::JobRecord& job, model::ObjectStore* store,
                                          const ArchiveOptions& options,
                                          const JobArchivePlan& plan, int64_t* archived_to_ms) {
  JobArchivePass pass;
  pass.job = job.name;
  if (plan.skip) {
    pass.complete = pass.skipped = true;
    if (archived_to_ms != nullptr) *archived_to_ms = std::numeric_limits<int64_t>::max();
    return pass;
  }
  const std::string job_key = absl::StrCat(JobFolderKey(job.name), "/job.json");
  nlohmann::ordered_json job_json = {{"format", "trainwatch-archive"},
                                     {"version", kFormatVersion},
                                     {"job", model::WireJobRecordJson(job)}};
  std::vector<std::pair<int64_t, int64_t>> segments = plan.segments;
  const int64_t from_ms = plan.from_ms;
  const int64_t to_ms = plan.to_ms;
  const bool ended = plan.ended;
  if (archived_to_ms != nullptr) *archived_to_ms = from_ms;

  // Windows of at most max_window_ms (the first from 0 to that past the
  // job's creation), so that a segment stays small enough to build in memory.
  int64_t window_from = from_ms;
  while (window_from < to_ms) {
    if (options.stop.stop_requested()) {
      pass.interrupted = true;
      break;
    }
    // (A record without a creation time: one window.)
    const int64_t window_to =
        job.creation_ms <= 0
            ? to_ms
            : std::min(to_ms, std::max(window_from, job.creation_ms) + options.max_window_ms);
    Segment segment;
    TW_RETURN_IF_ERROR(AddMetrics(readers, job, window_from, window_to, &segment));
    TW_RETURN_IF_ERROR(AddLogs(readers, job, window_from, window_to, &segment));
    const bool last_window = window_to == to_ms;
    if (segment.samples > 0 || segment.log_events > 0 ||
        (ended && last_window && segments.empty())) {
      const std::string name = SegmentName(window_from, window_to);
      nlohmann::ordered_json manifest = {{"format", "trainwatch-archive-segment"},
                                         {"version", kFormatVersion},
                                         {"job", job.name},
                                         {"from_ms", window_from},
                                         {"to_ms", window_to},
                                         {"written_ms", options.now_ms},
                                         {"log_group", model::kTrainingJobsLogGroup}};
      TW_RETURN_IF_ERROR(PutSegment(store, SegmentPrefix(job.name, name), segment, job.name,
                                    std::move(manifest), &pass.bytes));
      pass.segments.push_back(name);
      pass.series += segment.series;
      pass.samples += segment.samples;
      pass.log_events += segment.log_events;
      segments.emplace_back(window_from, window_to);
      if (options.on_segment) options.on_segment(pass);
    }
    window_from = window_to;
    if (archived_to_ms != nullptr) *archived_to_ms = window_from;
  }

  pass.complete = ended && !pass.interrupted;
  // Everything before the cut (or where a stop ended the pass) was read:
  // archived, or there was none.
  pass.archived_to_ms = pass.interrupted ? window_from : std::max(from_ms, to_ms);
  job_json["complete"] = pass.complete;
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (const auto& [from, to] : segments) names.push_back(SegmentName(from, to));
  job_json["segments"] = names;
  const std::string text = job_json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                           "\n";
  if (!plan.stored_job_json.has_value() || *plan.stored_job_json != text) {
    TW_RETURN_IF_ERROR(PutObject(store, job_key, text, job.name, &pass.bytes));
  }
  if (archived_to_ms != nullptr) {
    *archived_to_ms = pass.complete ? std::numeric_limits<int64_t>::max() : pass.archived_to_ms;
  }
  return pass;
}

int64_t LateData::rows() const {
  int64_t n = 0;
  for (const auto& [key, rows] : series) n += static_cast<int64_t>(rows.size());
  return n;
}

int64_t LateData::events() const {
  int64_t n = 0;
  for (const auto& [stream, events] : streams) n += static_cast<int64_t>(events.size());
  return n;
}

absl::StatusOr<std::vector<std::string>> CompleteLateSegments(model::ObjectStore* store,
                                                              const std::string& job) {
  const std::string prefix = absl::StrCat(JobFolderKey(job), "/late/");
  TW_ASSIGN_OR_RETURN(std::vector<std::string> keys, store->List(prefix));
  std::vector<std::string> ids;
  for (const std::string& key : keys) {
    std::string_view rest = std::string_view(key).substr(prefix.size());
    if (!rest.ends_with("/manifest.json")) continue;
    rest.remove_suffix(std::string_view("/manifest.json").size());
    if (rest.empty() || rest.find('/') != std::string_view::npos) continue;
    ids.emplace_back(rest);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::StatusOr<int64_t> WriteLateSegment(model::ObjectStore* store, const std::string& job,
                                         const std::string& id, const LateData& data,
                                         int64_t now_ms) {
  const std::string prefix = absl::StrCat(JobFolderKey(job), "/late/", id);
  // Written before (a pass that stopped before it could forget the data).
  TW_ASSIGN_OR_RETURN(std::optional<std::string> existing,
                      store->Get(absl::StrCat(prefix, "/manifest.json")));
  if (existing.has_value()) return 0;
  Segment segment;
  int64_t first_ms = std::numeric_limits<int64_t>::max(), last_ms = 0;
  for (const auto& [key, rows] : data.series) {
    std::vector<query::StoredRow> sorted = rows;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const query::StoredRow& a, const query::StoredRow& b) {
                       return a.t_ms < b.t_ms;
                     });
    for (const query::StoredRow& r : sorted) {
      first_ms = std::min(first_ms, r.t_ms);
      last_ms = std::max(last_ms, r.t_ms);
    }
    AddSeries(key, sorted, &segment);
  }
  for (const auto& [stream, events] : data.streams) {
    std::vector<LateEvent> sorted = events;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const LateEvent& a, const LateEvent& b) { return a.t_ms < b.t_ms; });
    for (const LateEvent& e : sorted) {
      first_ms = std::min(first_ms, e.t_ms);
      last_ms = std::max(last_ms, e.t_ms);
      AddLogEvent(stream, e.t_ms, e.ingestion_ms, e.message, &segment);
    }
  }
  if (data.empty()) first_ms = 0;
  nlohmann::ordered_json manifest = {{"format", "trainwatch-archive-late"},
                                     {"version", kFormatVersion},
                                     {"job", job},
                                     {"first_ms", first_ms},
                                     {"last_ms", last_ms},
                                     {"written_ms", now_ms},
                                     {"log_group", model::kTrainingJobsLogGroup}};
  int64_t bytes = 0;
  TW_RETURN_IF_ERROR(PutSegment(store, prefix, segment, job, std::move(manifest), &bytes));
  return bytes;
}

std::optional<std::string> JobOfDimension(std::string_view name, std::string_view value) {
  if (name == model::kTrainingJobNameDim) return std::string(value);
  if (name == model::kHostDim) {
    if (std::optional<model::JobHost> host = model::ParseHostName(value)) return host->job;
  }
  return std::nullopt;
}

std::vector<std::string> JobsOfSeries(const model::SeriesKey& key) {
  std::vector<std::string> jobs;
  if (const std::string* name = key.FindDimension(model::kTrainingJobNameDim)) {
    jobs.push_back(*name);
  }
  if (const std::string* host = key.FindDimension(model::kHostDim)) {
    std::optional<std::string> job = JobOfDimension(model::kHostDim, *host);
    if (job && (jobs.empty() || jobs[0] != *job)) jobs.push_back(*std::move(job));
  }
  return jobs;
}

}  // namespace trainwatch::archive
