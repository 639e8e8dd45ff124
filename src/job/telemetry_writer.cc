#include "job/telemetry_writer.h"

#include <pthread.h>

#include <chrono>

#include "absl/strings/str_format.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::job {
namespace {

// CloudWatch Logs' PutLogEvents limits (spec/aws-api.md §6.4).
constexpr size_t kMaxEventsPerPut = 10000;
constexpr size_t kMaxBytesPerPut = 1 << 20;
// Memory of one pending line: its text, the LogEvent, and as much again for
// the pending vector's growth.
size_t EventMemory(const model::LogEvent& e) {
  return e.message.capacity() + 1 + 2 * sizeof(model::LogEvent);
}
// A datapoint in a pending vector, slack included.
constexpr size_t kSampleMemory = 2 * sizeof(model::Sample);

}  // namespace

std::vector<std::string_view> SplitLogMessage(std::string_view line, size_t max_bytes) {
  std::vector<std::string_view> out;
  while (line.size() > max_bytes) {
    size_t cut = max_bytes;
    // Back up to a character start (at most 3 continuation bytes); a run of invalid
    // bytes is cut where it is.
    size_t limit = cut > 3 ? cut - 3 : 1;
    while (cut > limit && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    if ((static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) cut = max_bytes;
    out.push_back(line.substr(0, cut));
    line.remove_prefix(cut);
  }
  out.push_back(line);
  return out;
}

void TelemetryWriter::Batch::AddLine(int64_t t_ms, std::string_view line,
                                     const std::vector<std::pair<size_t, double>>& values) {
  for (std::string_view piece : SplitLogMessage(line)) {
    events.push_back({t_ms, std::string(piece)});
  }
  for (const auto& [index, value] : values) samples.push_back({index, {t_ms, value}});
}

TelemetryWriter::TelemetryWriter(model::LogSink* logs, model::SampleSink* samples,
                                 model::LogStreamId stream, std::vector<model::SeriesKey> series,
                                 Options options)
    : logs_(logs),
      samples_(samples),
      stream_(std::move(stream)),
      series_(std::move(series)),
      options_(options),
      held_(options.start_held) {
  pending_samples_.resize(series_.size());
  log_thread_ = std::jthread([this](std::stop_token stop) { LogLoop(std::move(stop)); });
  sample_thread_ = std::jthread([this](std::stop_token stop) { SampleLoop(std::move(stop)); });
}

TelemetryWriter::~TelemetryWriter() { Stop(); }

void TelemetryWriter::Add(int64_t t_ms, std::string_view line,
                          const std::vector<std::pair<size_t, double>>& values) {
  Batch batch;
  batch.AddLine(t_ms, line, values);
  Add(&batch);
}

void TelemetryWriter::Add(Batch* batch) {
  if (batch->empty()) return;
  util::MutexLock lock(mu_);
  auto full = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_log_bytes_ + pending_sample_bytes_ + inflight_log_bytes_ +
               inflight_sample_bytes_ >=
           options_.max_pending_bytes;
  };
  if (full() && !stopping_) {
    ++stats_.backpressure_waits;
    lock.Wait(room_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !full() || stopping_; });
  }
  if (stopping_) {
    stats_.events_dropped += batch->events.size();
    stats_.samples_dropped += batch->samples.size();
  } else {
    for (model::LogEvent& e : batch->events) {
      pending_log_bytes_ += EventMemory(e);
      pending_events_.push_back(std::move(e));
    }
    for (const auto& [index, sample] : batch->samples) {
      if (index >= pending_samples_.size()) continue;
      pending_samples_[index].push_back(sample);
      pending_sample_bytes_ += kSampleMemory;
    }
    ++added_seq_;
    work_.notify_all();
  }
  lock.Unlock();
  batch->events.clear();
  batch->samples.clear();
}

void TelemetryWriter::Release() {
  {
    util::MutexLock lock(mu_);
    held_ = false;
  }
  work_.notify_all();
}

void TelemetryWriter::Flush() {
  util::MutexLock lock(mu_);
  const uint64_t target = added_seq_;
  lock.Wait(done_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return (logs_written_seq_ >= target && samples_written_seq_ >= target) || stopped_;
  });
}

void TelemetryWriter::Stop() {
  {
    util::MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (held_) {
      // Never released: the job these lines belong to was not recorded.
      stats_.events_dropped += pending_events_.size();
      for (std::vector<model::Sample>& samples : pending_samples_) {
        stats_.samples_dropped += samples.size();
        samples.clear();
      }
      pending_events_.clear();
      pending_log_bytes_ = pending_sample_bytes_ = 0;
      logs_written_seq_ = samples_written_seq_ = added_seq_;
    }
  }
  room_.notify_all();
  // Each thread writes what is pending, then ends.
  log_thread_.request_stop();
  sample_thread_.request_stop();
  log_thread_.join();
  sample_thread_.join();
  {
    util::MutexLock lock(mu_);
    stopped_ = true;
  }
  done_.notify_all();
}

TelemetryWriter::Stats TelemetryWriter::stats() const {
  util::MutexLock lock(mu_);
  return stats_;
}

void TelemetryWriter::LogLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-job-logs");
  for (;;) {
    std::vector<model::LogEvent> events;
    uint64_t seq;
    {
      util::MutexLock lock(mu_);
      // Returns at once once stopping: what is pending is still written.
      // Held: only a stop writes.
      lock.Wait(work_, stop, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return added_seq_ != logs_written_seq_ && !held_;
      });
      if (added_seq_ == logs_written_seq_) break;  // stopping with nothing pending
      events.swap(pending_events_);
      inflight_log_bytes_ = pending_log_bytes_;
      pending_log_bytes_ = 0;
      seq = added_seq_;
    }
    if (!events.empty()) WriteLogs(events);
    {
      util::MutexLock lock(mu_);
      logs_written_seq_ = seq;
      inflight_log_bytes_ = 0;
    }
    room_.notify_all();
    done_.notify_all();
  }
}

void TelemetryWriter::SampleLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-job-samples");
  for (;;) {
    std::vector<std::vector<model::Sample>> samples(series_.size());
    uint64_t seq;
    bool any;
    {
      util::MutexLock lock(mu_);
      lock.Wait(work_, stop, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return added_seq_ != samples_written_seq_ && !held_;
      });
      if (added_seq_ == samples_written_seq_) break;
      any = pending_sample_bytes_ > 0;
      if (any) samples.swap(pending_samples_);
      inflight_sample_bytes_ = pending_sample_bytes_;
      pending_sample_bytes_ = 0;
      seq = added_seq_;
    }
    if (any) WriteSamples(samples);
    {
      util::MutexLock lock(mu_);
      samples_written_seq_ = seq;
      inflight_sample_bytes_ = 0;
    }
    room_.notify_all();
    done_.notify_all();
  }
}

template <typename Fn>
absl::Status TelemetryWriter::WithRetries(Fn&& fn) {
  int64_t backoff_ms = options_.first_backoff_ms;
  absl::Status status;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    status = fn();
    if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) return status;
    if (attempt == options_.max_attempts) break;
    {
      util::MutexLock lock(mu_);
      ++stats_.retries;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms *= 2;
  }
  return status;
}

void TelemetryWriter::WriteSamples(std::vector<std::vector<model::Sample>>& samples) {
  model::SampleBatch put;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].empty()) continue;
    model::SeriesSamples s;
    s.key = series_[i];
    s.storage_resolution_s = 1;
    s.samples = std::move(samples[i]);
    put.series.push_back(std::move(s));
  }
  absl::Status status = WithRetries([&] { return samples_->Put(put); });
  uint64_t written = 0;
  uint64_t dropped = 0;
  if (status.ok()) {
    written = put.SampleCount();
  } else if (status.code() == absl::StatusCode::kInvalidArgument && put.series.size() > 1) {
    // One bad series must not take the others with it.
    for (model::SeriesSamples& s : put.series) {
      model::SampleBatch one;
      size_t n = s.size();
      one.series.push_back(std::move(s));
      absl::Status single = WithRetries([&] { return samples_->Put(one); });
      if (single.ok()) {
        written += n;
      } else {
        dropped += n;
        status = single;
      }
    }
  } else {
    dropped = put.SampleCount();
  }
  if (dropped > 0) {
    util::LogOnce("job-samples-dropped",
                  absl::StrFormat("cannot store datapoints of %s: %s (dropping them; training "
                                  "goes on)",
                                  stream_.stream, status.ToString()));
  }
  util::MutexLock lock(mu_);
  stats_.samples_written += written;
  stats_.samples_dropped += dropped;
  if (written > 0) ++stats_.sample_puts;
}

void TelemetryWriter::WriteLogs(std::vector<model::LogEvent>& events) {
  size_t begin = 0;
  while (begin < events.size()) {
    model::LogBatch put;
    put.stream = stream_;
    size_t bytes = 0;
    size_t end = begin;
    while (end < events.size() && put.events.size() < kMaxEventsPerPut) {
      size_t size = events[end].message.size() + model::kLogEventOverheadBytes;
      if (!put.events.empty() && bytes + size > kMaxBytesPerPut) break;
      bytes += size;
      put.events.push_back(std::move(events[end]));
      ++end;
    }
    absl::Status status = WithRetries([&] { return logs_->PutLogs(put); });
    if (!status.ok()) {
      util::LogOnce("job-logs-dropped",
                    absl::StrFormat("cannot store log events of %s: %s (dropping them; "
                                    "training goes on)",
                                    stream_.stream, status.ToString()));
    }
    {
      util::MutexLock lock(mu_);
      if (status.ok()) {
        stats_.events_written += put.events.size();
        ++stats_.log_puts;
      } else {
        stats_.events_dropped += put.events.size();
      }
    }
    begin = end;
  }
}

}  // namespace trainwatch::job
