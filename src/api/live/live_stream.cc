#include "api/live/live_stream.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "api/form.h"
#include "api/native/native_util.h"
#include "api/wire_time.h"
#include "model/job_record.h"

namespace trainwatch::api::live {

using native_internal::DimensionsJson;
using native_internal::Error;
using native_internal::JobJson;
using native_internal::Json;
using native_internal::ParamAll;
using native_internal::Params;

HttpResponse LiveApi::Handle(const HttpRequest& request) const {
  if (request.method != "GET") {
    HttpResponse r = Error(405, "MethodNotAllowed",
                           absl::StrFormat("%s /api/v1/live: only GET is served (an "
                                           "EventSource: new EventSource('/api/v1/live?job=NAME'))",
                                           request.method == "HEAD" ? "HEAD" : "this method"));
    r.headers.Add("Allow", "GET");
    return r;
  }
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) {
    return Error(400, "InvalidParameterValue", std::string(params.status().message()));
  }
  for (const auto& [name, value] : *params) {
    if (name != "job") {
      return Error(400, "InvalidParameterValue",
                   absl::StrFormat("/api/v1/live takes only job=NAME (repeatable); got \"%s\"",
                                   name.substr(0, 100)));
    }
    if (value.empty() || !model::IsValidJobName(value)) {
      return Error(400, "InvalidParameterValue",
                   absl::StrFormat("job=\"%s\" is not a job name (1 to 63 letters, digits and "
                                   "hyphens)",
                                   value.substr(0, 100)));
    }
  }
  LiveHub::Filter filter{.jobs = ParamAll(*params, "job")};
  if (filter.jobs.size() > kMaxLiveJobs) {
    return Error(400, "InvalidParameterValue",
                 absl::StrFormat("/api/v1/live follows at most %d jobs (got %d job parameters)",
                                 kMaxLiveJobs, filter.jobs.size()));
  }
  std::optional<std::string> last_event_id;
  if (const std::string* id = request.headers.Find("Last-Event-ID")) last_event_id = *id;
  HttpResponse r;
  r.headers.Add("Content-Type", "text/event-stream");
  r.headers.Add("Cache-Control", "no-cache");
  r.stream = std::make_shared<LiveStream>(hub_, jobs_, std::move(filter), std::move(last_event_id));
  return r;
}

LiveStream::LiveStream(LiveHub* hub, JobsBackend* jobs, LiveHub::Filter filter,
                       std::optional<std::string> last_event_id)
    : hub_(hub),
      jobs_(jobs),
      filter_(std::move(filter)),
      last_event_id_(std::move(last_event_id)) {}

LiveStream::~LiveStream() { Close(); }

void LiveStream::Start(std::function<void()> wake) {
  {
    util::MutexLock lock(mu_);
    waiter_ = hub_->AddWaiter(filter_, std::move(wake));
  }
  // After AddWaiter: whatever comes after this position wakes the stream.
  position_ = hub_->head();
  if (last_event_id_) {
    // "<epoch>.<seq>" of this hub, or a reset.
    const std::string& id = *last_event_id_;
    size_t dot = id.find('.');
    uint64_t seq = 0;
    bool ok = dot != std::string::npos && id.substr(0, dot) == hub_->epoch();
    if (ok) {
      const char* end = id.data() + id.size();
      auto [ptr, ec] = std::from_chars(id.data() + dot + 1, end, seq);
      ok = ec == std::errc() && ptr == end && dot + 1 < id.size();
    }
    if (ok) {
      position_ = seq;  // ReadAfter says reset when it is not held
    } else {
      start_reset_ = "unknown position";
    }
  }
}

void LiveStream::Close() {
  util::MutexLock lock(mu_);
  if (waiter_) hub_->RemoveWaiter(*waiter_);
  waiter_.reset();
}

std::string LiveStream::EventId(uint64_t seq) const {
  return absl::StrFormat("%s.%d", hub_->epoch(), seq);
}

namespace {

std::string Event(const std::string& id, const std::string& name, const Json& data) {
  return absl::StrFormat("id: %s\nevent: %s\ndata: %s\n\n", id, name, DumpJson(data));
}

Json ResetData(const std::string& reason) { return Json{{"reason", reason}}; }

// The points of consecutive sample entries, merged per series (in first-seen
// order), each series' points sorted by time.
Json SamplesData(const std::string& job,
                 const std::vector<std::shared_ptr<const LiveEntry>>& group) {
  struct Points {
    const model::SeriesKey* key;
    std::vector<std::pair<int64_t, double>> tv;
  };
  std::vector<Points> series;
  std::map<std::string, size_t> index;
  for (const auto& entry : group) {
    for (const model::SeriesSamples& s : entry->samples.series) {
      auto [it, inserted] = index.try_emplace(s.key.Canonical(), series.size());
      if (inserted) series.push_back({&s.key, {}});
      auto& tv = series[it->second].tv;
      for (const model::Sample& p : s.samples) tv.emplace_back(p.t_ms, p.value);
      for (const model::WeightedSample& p : s.weighted) tv.emplace_back(p.t_ms, p.value);
      for (const model::StatisticSet& p : s.statistic_sets) {
        tv.emplace_back(p.t_ms, p.sample_count > 0 ? p.sum / p.sample_count : p.sum);
      }
    }
  }
  Json out_series = Json::array();
  for (Points& p : series) {
    std::stable_sort(p.tv.begin(), p.tv.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Json t = Json::array(), v = Json::array();
    for (const auto& [t_ms, value] : p.tv) {
      t.push_back(t_ms);
      v.push_back(value);
    }
    out_series.push_back(Json{{"namespace", p.key->ns},
                              {"metric", p.key->metric},
                              {"dimensions", DimensionsJson(p.key->dimensions)},
                              {"unit", p.key->unit},
                              {"t", std::move(t)},
                              {"v", std::move(v)}});
  }
  return Json{{"job", job}, {"series", std::move(out_series)}};
}

Json LogsData(const std::string& job, const std::vector<std::shared_ptr<const LiveEntry>>& group) {
  Json events = Json::array();
  for (const auto& entry : group) {
    for (const model::LogEvent& e : entry->logs.events) {
      events.push_back(
          Json{{"t_ms", e.t_ms}, {"ingestion_ms", entry->ingestion_ms}, {"message", e.message}});
    }
  }
  return Json{{"job", job}, {"stream", group.front()->logs.stream.stream}, {"events", events}};
}

bool SameGroup(const LiveEntry& a, const LiveEntry& b) {
  if (a.kind != b.kind || a.kind == LiveEntry::Kind::kJob) return false;
  if (!absl::EqualsIgnoreCase(a.job, b.job)) return false;
  return a.kind != LiveEntry::Kind::kLogs || a.logs.stream == b.logs.stream;
}

}  // namespace

std::string LiveStream::Render(const LiveHub::Read& read) {
  std::string out;
  const auto& entries = read.entries;
  // One `job` event per job: at its last change in this read.
  std::map<std::string, size_t> last_change;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i]->kind == LiveEntry::Kind::kJob) {
      last_change[absl::AsciiStrToLower(entries[i]->job)] = i;
    }
  }
  for (size_t i = 0; i < entries.size();) {
    const LiveEntry& first = *entries[i];
    if (first.kind == LiveEntry::Kind::kJob) {
      if (last_change[absl::AsciiStrToLower(first.job)] == i) {
        Json data = Json{{"name", first.job}};
        bool found = jobs_ == nullptr;
        if (jobs_ != nullptr) {
          absl::StatusOr<std::optional<model::JobRecord>> job = jobs_->GetJob(first.job);
          if (job.ok() && job->has_value()) {
            data = JobJson(**job);
            found = true;
          }
        }
        if (found) out += Event(EventId(first.seq), "job", data);
      }
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < entries.size() && SameGroup(first, *entries[end])) ++end;
    std::vector<std::shared_ptr<const LiveEntry>> group(entries.begin() + i, entries.begin() + end);
    Json data = first.kind == LiveEntry::Kind::kSamples ? SamplesData(first.job, group)
                                                        : LogsData(first.job, group);
    out += Event(EventId(group.back()->seq),
                 first.kind == LiveEntry::Kind::kSamples ? "samples" : "logs", data);
    i = end;
  }
  return out;
}

std::string LiveStream::Pull(size_t max_bytes) {
  std::string out;
  if (!started_) {
    started_ = true;
    out = "retry: 1000\n\n";
  }
  if (!start_reset_.empty()) {
    uint64_t head = hub_->head();
    out += Event(EventId(head), "reset", ResetData(start_reset_));
    start_reset_.clear();
    position_ = head;
  }
  for (;;) {
    LiveHub::Read read =
        hub_->ReadAfter(filter_, position_, max_bytes, hub_->options().reader_backlog_bytes);
    position_ = read.next;
    if (read.reset) {
      out += Event(EventId(read.next), "reset", ResetData(read.reason));
      return out;
    }
    out += Render(read);
    // Entries that render to nothing (the record of a job deleted since)
    // must not end the pull while more wait.
    if (!out.empty() || read.entries.empty()) return out;
  }
}

}  // namespace trainwatch::api::live
