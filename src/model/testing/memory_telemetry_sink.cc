#include "model/testing/memory_telemetry_sink.h"

#include <cctype>
#include <cmath>
#include <thread>

#include "absl/strings/str_format.h"
#include "util/mutex.h"

namespace trainwatch::model::testing {
namespace {

std::string Lower(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

absl::Status CheckSeries(const SeriesSamples& s) {
  auto key = MakeSeriesKey(s.key.ns, s.key.metric, s.key.dimensions, s.key.unit);
  if (!key.ok()) return key.status();
  auto bad = [&s](double v, int64_t t_ms) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "series %s: value %g at t_ms %d is not finite", s.key.ToString(), v, t_ms));
  };
  for (const Sample& x : s.samples) {
    if (!std::isfinite(x.value)) return bad(x.value, x.t_ms);
  }
  for (const WeightedSample& x : s.weighted) {
    if (!std::isfinite(x.value) || !std::isfinite(x.count)) return bad(x.value, x.t_ms);
  }
  for (const StatisticSet& x : s.statistic_sets) {
    for (double v : {x.sample_count, x.sum, x.minimum, x.maximum}) {
      if (!std::isfinite(v)) return bad(v, x.t_ms);
    }
  }
  return absl::OkStatus();
}

}  // namespace

void MemoryTelemetrySink::Wrote() {
  ++version_;
  changed_.notify_all();
}

absl::Status MemoryTelemetrySink::Put(const SampleBatch& batch) {
  std::chrono::microseconds latency;
  std::function<void(const SampleBatch&)> on_put;
  {
    util::MutexLock lock(mu_);
    ++put_calls_;
    latency = put_latency_;
    if (fail_puts_ > 0) {
      --fail_puts_;
      return fail_puts_status_;
    }
    for (const SeriesSamples& s : batch.series) {
      if (absl::Status status = CheckSeries(s); !status.ok()) return status;
    }
    for (const SeriesSamples& s : batch.series) {
      Series& series = series_[s.key];
      series.samples.insert(series.samples.end(), s.samples.begin(), s.samples.end());
      for (const WeightedSample& w : s.weighted) series.samples.push_back({w.t_ms, w.value});
      series.storage_resolution_s = s.storage_resolution_s;
    }
    Wrote();
    on_put = on_put_;
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  if (on_put) on_put(batch);
  return absl::OkStatus();
}

absl::Status MemoryTelemetrySink::PutLogs(const LogBatch& batch) {
  std::chrono::microseconds latency;
  {
    util::MutexLock lock(mu_);
    ++put_logs_calls_;
    latency = put_logs_latency_;
    if (fail_put_logs_ > 0) {
      --fail_put_logs_;
      return fail_put_logs_status_;
    }
    if (batch.stream.group.empty() || batch.stream.stream.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "log group \"%s\" / stream \"%s\": both must be non-empty", batch.stream.group,
          batch.stream.stream));
    }
    auto& events = logs_[batch.stream];
    events.insert(events.end(), batch.events.begin(), batch.events.end());
    Wrote();
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  return absl::OkStatus();
}

absl::Status MemoryTelemetrySink::CreateJob(const JobRecord& job) {
  util::MutexLock lock(mu_);
  std::string key = Lower(job.name);
  std::map<int, JobRecord>& hosts = jobs_[key];
  if (hosts.count(job.host_index) != 0) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "a training job named \"%s\" already exists", hosts[job.host_index].name));
  }
  hosts[job.host_index] = job;
  history_[key].push_back(job);
  Wrote();
  return absl::OkStatus();
}

absl::Status MemoryTelemetrySink::UpdateJob(const JobRecord& job) {
  util::MutexLock lock(mu_);
  if (fail_updates_ > 0) {
    --fail_updates_;
    return fail_updates_status_;
  }
  std::string key = Lower(job.name);
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.count(job.host_index) == 0) {
    return absl::NotFoundError(absl::StrFormat("no training job named \"%s\"", job.name));
  }
  it->second[job.host_index] = job;
  history_[key].push_back(job);
  Wrote();
  return absl::OkStatus();
}

absl::StatusOr<std::optional<JobRecord>> MemoryTelemetrySink::GetJob(std::string_view name) {
  return Job(name);
}

std::vector<SeriesKey> MemoryTelemetrySink::Keys() const {
  util::MutexLock lock(mu_);
  std::vector<SeriesKey> out;
  for (const auto& [key, series] : series_) out.push_back(key);
  return out;
}

std::vector<Sample> MemoryTelemetrySink::Samples(const SeriesKey& key) const {
  util::MutexLock lock(mu_);
  auto it = series_.find(key);
  return it == series_.end() ? std::vector<Sample>{} : it->second.samples;
}

int MemoryTelemetrySink::StorageResolution(const SeriesKey& key) const {
  util::MutexLock lock(mu_);
  auto it = series_.find(key);
  return it == series_.end() ? 0 : it->second.storage_resolution_s;
}

std::vector<LogStreamId> MemoryTelemetrySink::Streams() const {
  util::MutexLock lock(mu_);
  std::vector<LogStreamId> out;
  for (const auto& [id, events] : logs_) out.push_back(id);
  return out;
}

std::vector<LogEvent> MemoryTelemetrySink::Events(const LogStreamId& stream) const {
  util::MutexLock lock(mu_);
  auto it = logs_.find(stream);
  return it == logs_.end() ? std::vector<LogEvent>{} : it->second;
}

std::optional<JobRecord> MemoryTelemetrySink::Job(std::string_view name) const {
  util::MutexLock lock(mu_);
  auto it = jobs_.find(Lower(name));
  if (it == jobs_.end() || it->second.empty()) return std::nullopt;
  std::vector<JobRecord> hosts;
  for (const auto& [index, record] : it->second) hosts.push_back(record);
  return MergeHostRecords(std::move(hosts));
}

std::vector<JobRecord> MemoryTelemetrySink::JobHistory(std::string_view name) const {
  util::MutexLock lock(mu_);
  auto it = history_.find(Lower(name));
  return it == history_.end() ? std::vector<JobRecord>{} : it->second;
}

uint64_t MemoryTelemetrySink::put_calls() const {
  util::MutexLock lock(mu_);
  return put_calls_;
}

uint64_t MemoryTelemetrySink::put_logs_calls() const {
  util::MutexLock lock(mu_);
  return put_logs_calls_;
}

void MemoryTelemetrySink::SetLatency(std::chrono::microseconds put,
                                     std::chrono::microseconds put_logs) {
  util::MutexLock lock(mu_);
  put_latency_ = put;
  put_logs_latency_ = put_logs;
}

void MemoryTelemetrySink::FailNextPuts(int n, absl::Status status) {
  util::MutexLock lock(mu_);
  fail_puts_ = n;
  fail_puts_status_ = std::move(status);
}

void MemoryTelemetrySink::FailNextPutLogs(int n, absl::Status status) {
  util::MutexLock lock(mu_);
  fail_put_logs_ = n;
  fail_put_logs_status_ = std::move(status);
}

void MemoryTelemetrySink::FailNextUpdates(int n, absl::Status status) {
  util::MutexLock lock(mu_);
  fail_updates_ = n;
  fail_updates_status_ = std::move(status);
}

void MemoryTelemetrySink::OnPut(std::function<void(const SampleBatch&)> callback) {
  util::MutexLock lock(mu_);
  on_put_ = std::move(callback);
}

bool MemoryTelemetrySink::WaitUntil(const std::function<bool()>& condition,
                                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    uint64_t seen;
    {
      util::MutexLock lock(mu_);
      seen = version_;
    }
    if (condition()) return true;
    util::MutexLock lock(mu_);
    if (!lock.WaitUntil(changed_, deadline, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; })) {
      lock.Unlock();
      return condition();
    }
  }
}

}  // namespace trainwatch::model::testing
