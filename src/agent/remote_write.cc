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

// 400 and 413: the receiver refuses these samples, sent again or not.
bool Refused(long status) { return status == 400 || status == 413; }

bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

void AppendWriteRequest(const model::SampleBatch& batch, std::string* out) {
  std::string series;
  std::vector<model::Sample> rows;
  for (const model::SeriesSamples& s : batch.series) {
    if (s.size() == 0) continue;
    rows.assign(s.samples.begin(), s.samples.end());
    for (const model::WeightedSample& x : s.weighted) rows.push_back({x.t_ms, x.value});
    for (const model::StatisticSet& x : s.statistic_sets) {
      rows.push_back({x.t_ms, x.sample_count > 0 ? x.sum / x.sample_count : 0});
    }
    // In time order, the last of a timestamp's values kept: a receiver
    // refuses a whole request for a sample out of order or a second value at
    // one timestamp.
    std::stable_sort(rows.begin(), rows.end(),
                     [](const model::Sample& a, const model::Sample& b) { return a.t_ms < b.t_ms; });
    series = LabelFields(s.key);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i + 1 < rows.size() && rows[i + 1].t_ms == rows[i].t_ms) continue;
      PutSample(rows[i].value, rows[i].t_ms, &series);
    }
    PutBytesField(0x0a, series, out);  // WriteRequest.timeseries
  }
}

std::vector<std::string> SplitWriteRequest(std::string_view request) {
  std::vector<std::string> out;
  while (!request.empty()) {
    std::string_view field = request;
    uint64_t tag = 0, size = 0;
    if (!GetVarint(&request, &tag) || (tag & 7) != 2 || !GetVarint(&request, &size) ||
        size > request.size()) {
      break;  // not what AppendWriteRequest writes: stop splitting
    }
    request.remove_prefix(size);
    if (tag >> 3 == 1) out.emplace_back(field.substr(0, field.size() - request.size()));
  }
  return out;
}

std::string WithoutUserInfo(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t end = std::min(url.find('/', start), url.size());
  const size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  return std::string(url.substr(0, start)) + std::string(url.substr(at + 1));
}

absl::StatusOr<std::unique_ptr<RemoteWriteOut>> RemoteWriteOut::Create(RemoteWriteOptions options) {
  if (!options.url.starts_with("http://") && !options.url.starts_with("https://")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "remote write URL \"%s\": want http://host:port/path or https://... (e.g. "
        "http://127.0.0.1:8428/api/v1/write for VictoriaMetrics)",
        WithoutUserInfo(options.url)));
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
    : options_(std::move(options)), shown_url_(WithoutUserInfo(options_.url)), queue_(std::move(queue)) {}

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
                                     shown_url_, samples, seq.status().message()));
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
      util::LogWarning(absl::StrFormat("remote write to %s: reading the queue: %s", shown_url_,
                                       front.status().message()));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (!*front) continue;
    const Spool::Record& record = **front;
    HttpResult r = client.Call("POST", options_.url, record.payload, 10'000, options_.timeout_ms,
                               headers);
    if (Refused(r.status)) {
      // One series out of order refuses the whole request: the others go
      // again one series a request, and only the series refused again are
      // dropped.
      std::vector<std::string> parts;
      if (absl::StatusOr<std::string> plain = api::SnappyUncompress(record.payload, size_t{1} << 30);
          plain.ok()) {
        parts = SplitWriteRequest(*plain);
      }
      size_t refused = parts.size() > 1 ? 0 : 1;
      std::string first_refusal = r.body.substr(0, 300);
      bool retry = false;
      for (size_t i = 0; parts.size() > 1 && i < parts.size() && !stop.stop_requested(); ++i) {
        HttpResult one = client.Call("POST", options_.url, api::SnappyCompress(parts[i]), 10'000,
                                     options_.timeout_ms, headers);
        if (Refused(one.status)) {
          if (refused++ == 0) first_refusal = one.body.substr(0, 300);
        } else if (one.status < 200 || one.status >= 300) {
          retry = true;  // the receiver went away meanwhile: the record again, later
          r = one;
          break;
        }
      }
      if (!retry) {
        if (refused > 0) {
          requests_refused_.fetch_add(1, std::memory_order_relaxed);
          util::LogWarning(absl::StrFormat(
              "remote write to %s refused %d series of a request (HTTP %d: %s); their samples "
              "are dropped",
              shown_url_, refused, r.status, first_refusal));
        } else {
          requests_sent_.fetch_add(1, std::memory_order_relaxed);
        }
        backoff_ms = 0;
        (void)queue_->Ack(record.seq);
        continue;
      }
    } else if (r.status >= 200 && r.status < 300) {
      requests_sent_.fetch_add(1, std::memory_order_relaxed);
      if (!last_error.empty()) {
        util::LogInfo(absl::StrFormat("remote write to %s: taken again", shown_url_));
        last_error.clear();
      }
      backoff_ms = 0;
      (void)queue_->Ack(record.seq);
      continue;
    }
    const std::string why = r.status == 0 ? r.error
                                          : absl::StrFormat("HTTP %d: %s", r.status,
                                                            r.body.substr(0, 300));
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (why != last_error) {
      util::LogWarning(absl::StrFormat("remote write to %s: %s; retrying (the samples wait in %s)",
                                       shown_url_, why, options_.queue_dir));
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
