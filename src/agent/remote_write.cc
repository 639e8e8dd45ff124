#include "agent/remote_write.h"

#include <pthread.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "absl/strings/str_format.h"
#include "agent/remote_sink.h"
#include "api/snappy_body.h"
#include "model/prometheus_names.h"
#include "util/log.h"

namespace trainwatch::agent {
namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutBytesField(uint8_t tag, std::string_view bytes, std::string* out) {
  out->push_back(static_cast<char>(tag));
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

// A TimeSeries' labels (field 1, each a Label {name = 1, value = 2}), sorted
// by name as remote write requires, __name__ included.
std::string LabelFields(const model::SeriesKey& key) {
  model::PrometheusSeries p = model::ToPrometheus(key);
  p.labels.emplace_back("__name__", p.name);
  std::sort(p.labels.begin(), p.labels.end());
  std::string out, label;
  for (const auto& [name, value] : p.labels) {
    label.clear();
    PutBytesField(0x0a, name, &label);
    PutBytesField(0x12, value, &label);
    PutBytesField(0x0a, label, &out);
  }
  return out;
}

// Sample {double value = 1; int64 timestamp = 2} as TimeSeries field 2.
void PutSample(double value, int64_t t_ms, std::string* out) {
  std::string s;
  s.push_back(0x09);
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(bits >> (8 * i)));
  s.push_back(0x10);
  PutVarint(static_cast<uint64_t>(t_ms), &s);
  PutBytesField(0x12, s, out);
}

bool Retriable(long status) { return status == 0 || status == 429 || status >= 500; }

}  // namespace

void AppendWriteRequest(const model::SampleBatch& batch, std::string* out) {
  std::string series;
  for (const model::SeriesSamples& s : batch.series) {
    if (s.size() == 0) continue;
    series = LabelFields(s.key);
    for (const model::Sample& x : s.samples) PutSample(x.value, x.t_ms, &series);
    for (const model::WeightedSample& x : s.weighted) PutSample(x.value, x.t_ms, &series);
    for (const model::StatisticSet& x : s.statistic_sets) {
      PutSample(x.sample_count > 0 ? x.sum / x.sample_count : 0, x.t_ms, &series);
    }
    PutBytesField(0x0a, series, out);  // WriteRequest.timeseries
  }
}

absl::StatusOr<std::unique_ptr<RemoteWriteOut>> RemoteWriteOut::Create(RemoteWriteOptions options) {
  if (!options.url.starts_with("http://") && !options.url.starts_with("https://")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "remote write URL \"%s\": want http://host:port/path or https://... (e.g. "
        "http://127.0.0.1:8428/api/v1/write for VictoriaMetrics)",
        options.url));
  }
  for (const std::string& h : options.headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "remote write header \"%s\": want \"Name: value\" on one line", h));
    }
  }
  absl::StatusOr<std::unique_ptr<Spool>> queue = Spool::Open(options.queue_dir, options.max_queue_bytes);
  if (!queue.ok()) return queue.status();
  std::unique_ptr<RemoteWriteOut> out(new RemoteWriteOut(std::move(options), *std::move(queue)));
  out->flusher_ = std::jthread([p = out.get()](std::stop_token stop) { p->FlushLoop(stop); });
  out->sender_ = std::jthread([p = out.get()](std::stop_token stop) { p->SendLoop(stop); });
  return out;
}

RemoteWriteOut::RemoteWriteOut(RemoteWriteOptions options, std::unique_ptr<Spool> queue)
    : options_(std::move(options)), queue_(std::move(queue)) {}

RemoteWriteOut::~RemoteWriteOut() {
  sender_.request_stop();
  queue_->Interrupt();
  if (sender_.joinable()) sender_.join();
  flusher_.request_stop();
  if (flusher_.joinable()) flusher_.join();
  Flush();
}

void RemoteWriteOut::OnSamples(const model::SampleBatch& batch) {
  bool full = false;
  {
    util::MutexLock lock(mu_);
    AppendWriteRequest(batch, &buffer_);
    buffer_samples_ += batch.SampleCount();
    full = buffer_.size() >= options_.max_buffer_bytes;
  }
  if (full) wake_.notify_all();
}

void RemoteWriteOut::Flush() {
  util::MutexLock order(flush_mu_);
  std::string taken;
  uint64_t samples = 0;
  {
    util::MutexLock lock(mu_);
    taken.swap(buffer_);
    std::swap(samples, buffer_samples_);
  }
  if (taken.empty()) return;
  const std::string compressed = api::SnappyCompress(taken);
  absl::StatusOr<int64_t> seq = queue_->Append([&](int64_t) { return compressed; });
  if (!seq.ok()) {
    samples_dropped_ += samples;
    util::LogWarning(absl::StrFormat("remote write to %s: %d samples not queued: %s",
                                     options_.url, samples, seq.status().message()));
    return;
  }
  samples_queued_ += samples;
}

void RemoteWriteOut::FlushLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-rw-queue");
  while (!stop.stop_requested()) {
    {
      util::MutexLock lock(mu_);
      lock.WaitFor(wake_, stop, std::chrono::milliseconds(options_.flush_ms),
                   [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                     return buffer_.size() >= options_.max_buffer_bytes;
                   });
    }
    Flush();
  }
}

void RemoteWriteOut::SendLoop(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "tw-rw-send");
  HttpClient client;
  HttpClient::Headers headers;
  headers.content_type = "application/x-protobuf";
  headers.content_encoding = "snappy";
  headers.extra = options_.headers;
  headers.extra.push_back("X-Prometheus-Remote-Write-Version: 0.1.0");
  headers.extra.push_back("User-Agent: trainwatch");
  headers.sign = false;
  int64_t backoff_ms = 0;
  std::string last_error;
  while (!stop.stop_requested()) {
    absl::StatusOr<std::optional<Spool::Record>> front = queue_->Front(500);
    if (!front.ok()) {
      util::LogWarning(absl::StrFormat("remote write to %s: reading the queue: %s", options_.url,
                                       front.status().message()));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (!*front) continue;
    const Spool::Record& record = **front;
    HttpResult r = client.Call("POST", options_.url, record.payload, 10'000, options_.timeout_ms,
                               headers);
    if (r.status >= 200 && r.status < 300) {
      requests_sent_.fetch_add(1, std::memory_order_relaxed);
      if (!last_error.empty()) {
        util::LogInfo(absl::StrFormat("remote write to %s: taken again", options_.url));
        last_error.clear();
      }
      backoff_ms = 0;
      (void)queue_->Ack(record.seq);
      continue;
    }
    const std::string why = r.status == 0 ? r.error
                                          : absl::StrFormat("HTTP %d: %s", r.status,
                                                            r.body.substr(0, 300));
    if (!Retriable(r.status)) {
      requests_refused_.fetch_add(1, std::memory_order_relaxed);
      util::LogWarning(absl::StrFormat(
          "remote write to %s refused a request for good (%s); its samples are dropped",
          options_.url, why));
      (void)queue_->Ack(record.seq);
      continue;
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (why != last_error) {
      util::LogWarning(absl::StrFormat("remote write to %s: %s; retrying (the samples wait in %s)",
                                       options_.url, why, options_.queue_dir));
      last_error = why;
    }
    backoff_ms = std::min(options_.max_backoff_ms, backoff_ms == 0 ? 100 : backoff_ms * 2);
    // Wait, but stop at once when asked to.
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, stop, std::chrono::milliseconds(backoff_ms), [] { return false; });
  }
}

RemoteWriteOut::Stats RemoteWriteOut::GetStats() const {
  Stats s;
  s.samples_queued = samples_queued_.load();
  s.samples_dropped = samples_dropped_.load();
  s.requests_sent = requests_sent_.load();
  s.requests_refused = requests_refused_.load();
  s.retries = retries_.load();
  s.queue_bytes = queue_->pending_bytes();
  return s;
}

}  // namespace trainwatch::agent
