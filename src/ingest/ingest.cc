#include "ingest/ingest.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::ingest {

namespace {

std::string Where(const model::SeriesKey& key, int64_t t_ms) {
  return absl::StrFormat("series %s, sample at %s", key.ToString(), util::FormatIso8601Ms(t_ms));
}

absl::Status CheckValue(const model::SeriesKey& key, int64_t t_ms, double v, const char* what) {
  if (std::isnan(v)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is NaN; only finite numbers can be stored", Where(key, t_ms), what));
  }
  if (std::isinf(v)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is %s; only finite numbers can be stored", Where(key, t_ms), what,
        v > 0 ? "+Infinity" : "-Infinity"));
  }
  if (std::abs(v) > model::kMaxValueMagnitude) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s %g is out of range; CloudWatch accepts magnitudes up to 2^360", Where(key, t_ms),
        what, v));
  }
  return absl::OkStatus();
}

absl::Status CheckTime(const model::SeriesKey& key, int64_t t_ms, int64_t now_ms,
                       const IngestOptions& o) {
  if (t_ms < now_ms - o.max_age_ms) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the timestamp is more than %s in the past (now is %s); load history with "
        "`trainwatch import`",
        Where(key, t_ms), util::FormatDurationMs(o.max_age_ms), util::FormatIso8601Ms(now_ms)));
  }
  if (t_ms > now_ms + o.max_ahead_ms) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the timestamp is more than %s in the future (now is %s); check the sender's clock",
        Where(key, t_ms), util::FormatDurationMs(o.max_ahead_ms), util::FormatIso8601Ms(now_ms)));
  }
  return absl::OkStatus();
}

absl::Status CheckKey(const model::SeriesKey& key) {
  if (model::CheckSeriesKey(key).ok()) return absl::OkStatus();  // without copying the key
  // A bad key: MakeSeriesKey's verdict and message, as for any key.
  absl::StatusOr<model::SeriesKey> canonical =
      model::MakeSeriesKey(key.ns, key.metric, key.dimensions, key.unit);
  if (!canonical.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("series %s: %s", key.ToString(), std::string(canonical.status().message())));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "series %s is not in canonical form (dimensions sorted by name, unit set); build keys "
      "with model::MakeSeriesKey",
      key.ToString()));
}

}  // namespace

absl::Status ValidateSamples(const model::SampleBatch& batch, int64_t now_ms,
                             const IngestOptions& o) {
  for (const model::SeriesSamples& s : batch.series) {
    TW_RETURN_IF_ERROR(CheckKey(s.key));
    if (s.storage_resolution_s != 1 && s.storage_resolution_s != 60) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "series %s: storage resolution %d; want 1 (high resolution) or 60 (standard)",
          s.key.ToString(), s.storage_resolution_s));
    }
    for (const model::Sample& x : s.samples) {
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.value, "the value"));
      TW_RETURN_IF_ERROR(CheckTime(s.key, x.t_ms, now_ms, o));
    }
    for (const model::WeightedSample& x : s.weighted) {
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.value, "the value"));
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.count, "the count"));
      if (x.count < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: count %g is negative; counts must be >= 0", Where(s.key, x.t_ms), x.count));
      }
      TW_RETURN_IF_ERROR(CheckTime(s.key, x.t_ms, now_ms, o));
    }
    for (const model::StatisticSet& x : s.statistic_sets) {
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.sample_count, "SampleCount"));
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.sum, "Sum"));
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.minimum, "Minimum"));
      TW_RETURN_IF_ERROR(CheckValue(s.key, x.t_ms, x.maximum, "Maximum"));
      if (x.sample_count <= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: SampleCount %g must be greater than 0", Where(s.key, x.t_ms), x.sample_count));
      }
      if (x.minimum > x.maximum) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: Minimum %g is greater than Maximum %g", Where(s.key, x.t_ms),
                            x.minimum, x.maximum));
      }
      TW_RETURN_IF_ERROR(CheckTime(s.key, x.t_ms, now_ms, o));
    }
  }
  return absl::OkStatus();
}

std::vector<model::LogEvent> SplitLongEvents(const std::vector<model::LogEvent>& events,
                                             size_t max_bytes) {
  std::vector<model::LogEvent> out;
  out.reserve(events.size());
  for (const model::LogEvent& e : events) {
    if (e.message.size() <= max_bytes) {
      out.push_back(e);
      continue;
    }
    std::string_view rest = e.message;
    while (!rest.empty()) {
      size_t cut = std::min(max_bytes, rest.size());
      if (cut < rest.size()) {
        // Back up over UTF-8 continuation bytes (10xxxxxx) so a character is
        // not split; give up after 3 (not UTF-8 then).
        size_t back = cut;
        for (int i = 0; i < 3 && back > 0 && (static_cast<uint8_t>(rest[back]) & 0xC0) == 0x80;
             ++i) {
          --back;
        }
        if (back > 0 && (static_cast<uint8_t>(rest[back]) & 0xC0) != 0x80) cut = back;
      }
      out.push_back({e.t_ms, std::string(rest.substr(0, cut))});
      rest.remove_prefix(cut);
    }
  }
  return out;
}

Ingest::Ingest(store::Db* db, IngestOptions options)
    : db_(db),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : &db->clock()),
      subscribers_(std::make_shared<const Ingest::ObserverList>()) {}

absl::Status Ingest::Put(const model::SampleBatch& batch) {
  return PutSamples(batch, nullptr).status();
}
absl::StatusOr<bool> Ingest::Put(const model::SampleBatch& batch, const store::Delivery& delivery) {
  return PutSamples(batch, &delivery);
}
absl::Status Ingest::PutLogs(const model::LogBatch& batch) {
  return PutLogEvents(batch, nullptr).status();
}
absl::StatusOr<bool> Ingest::PutLogs(const model::LogBatch& batch,
                                     const store::Delivery& delivery) {
  return PutLogEvents(batch, &delivery);
}
absl::Status Ingest::CreateJob(const model::JobRecord& job) {
  return CreateJobRecord(job, nullptr).status();
}
absl::StatusOr<bool> Ingest::CreateJob(const model::JobRecord& job,
                                       const store::Delivery& delivery) {
  return CreateJobRecord(job, &delivery);
}
absl::Status Ingest::UpdateJob(const model::JobRecord& job) {
  TW_RETURN_IF_ERROR(db_->UpdateJob(job));
  for (model::IngestObserver* o : *Observers()) o->OnJob(job);
  return absl::OkStatus();
}
absl::Status Ingest::UpdateJobIfUnchanged(const model::JobRecord& job,
                                          const model::JobRecord& as_read) {
  TW_RETURN_IF_ERROR(db_->UpdateJobIfUnchanged(job, as_read));
  for (model::IngestObserver* o : *Observers()) o->OnJob(job);
  return absl::OkStatus();
}

absl::StatusOr<bool> Ingest::UpdateJob(const model::JobRecord& job,
                                       const store::Delivery& delivery) {
  TW_ASSIGN_OR_RETURN(bool written, db_->UpdateJob(job, delivery));
  if (written) {
    for (model::IngestObserver* o : *Observers()) o->OnJob(job);
  }
  return written;
}

absl::Status Ingest::SetRuleStatuses(const std::string& name, int host_index,
                                     const std::vector<model::RuleStatus>& statuses) {
  TW_RETURN_IF_ERROR(db_->SetRuleStatuses(name, host_index, statuses));
  for (model::IngestObserver* o : *Observers()) o->OnRuleStatuses(name, host_index, statuses);
  return absl::OkStatus();
}

absl::Status Ingest::PutAlarm(const model::AlarmRecord& alarm) { return db_->PutAlarm(alarm); }

absl::Status Ingest::DeleteAlarm(const std::string& name) { return db_->DeleteAlarm(name); }

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// Held by a write of samples or logs from before its store write to after
// its observers (see AtQuietPoint).
class Ingest::WritePass {
 public:
  explicit WritePass(Ingest* ingest) : ingest_(ingest) {
    while (true) {
      // Announce first, then look at the gate; AtQuietPoint closes the gate,
      // then looks at the count (both sequentially consistent): one of the
      // two sees the other.
      ingest_->writes_in_flight_.fetch_add(1);
      if (!ingest_->gate_closed_.load()) return;
      Leave();
      util::MutexLock lock(ingest_->gate_mu_);
      lock.Wait(ingest_->gate_cv_, [&] { return !ingest_->gate_closed_.load(); });
    }
  }
  ~WritePass() { Leave(); }

 private:
  void Leave() {
    if (ingest_->writes_in_flight_.fetch_sub(1) == 1 && ingest_->gate_closed_.load()) {
      util::MutexLock lock(ingest_->gate_mu_);
      ingest_->gate_cv_.notify_all();
    }
  }
  Ingest* ingest_;
};

void Ingest::AtQuietPoint(const std::function<void()>& fn) {
  util::MutexLock lock(gate_mu_);
  // One quiet point at a time: a second waits for the gate to open.
  lock.Wait(gate_cv_, [&] { return !gate_closed_.load(); });
  gate_closed_.store(true);
  lock.Wait(gate_cv_, [&] { return writes_in_flight_.load() == 0; });
  fn();
  gate_closed_.store(false);
  gate_cv_.notify_all();
}

absl::StatusOr<bool> Ingest::PutSamples(const model::SampleBatch& batch,
                                        const store::Delivery* delivery) {
  if (absl::Status s = ValidateSamples(batch, clock_->NowMs(), options_); !s.ok()) {
    stats_.sample_batches_rejected.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  WritePass pass(this);
  const auto start = std::chrono::steady_clock::now();
  bool written = true;
  absl::Status s;
  if (delivery != nullptr) {
    absl::StatusOr<bool> w = db_->PutSamples(batch, *delivery);
    s = w.status();
    if (w.ok()) written = *w;
  } else {
    s = db_->PutSamples(batch);
  }
  if (!s.ok()) {
    stats_.write_errors.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  stats_.write_seconds.Observe(SecondsSince(start));
  if (!written) {  // delivered before: the subscribers saw it then
    stats_.duplicate_deliveries.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  stats_.sample_batches.fetch_add(1, std::memory_order_relaxed);
  stats_.samples.fetch_add(batch.SampleCount(), std::memory_order_relaxed);
  for (model::IngestObserver* o : *Observers()) o->OnSamples(batch);
  return true;
}

absl::StatusOr<bool> Ingest::PutLogEvents(const model::LogBatch& batch,
                                          const store::Delivery* delivery) {
  if (batch.stream.group.empty() || batch.stream.stream.empty()) {
    stats_.log_batches_rejected.fetch_add(1, std::memory_order_relaxed);
    return absl::InvalidArgumentError(absl::StrFormat(
        "log events need a group and a stream name (got group \"%s\", stream \"%s\")",
        batch.stream.group, batch.stream.stream));
  }
  const model::LogBatch* to_write = &batch;
  model::LogBatch split;
  for (const model::LogEvent& e : batch.events) {
    if (e.message.size() > model::kMaxLogEventBytes) {
      split = {batch.stream, SplitLongEvents(batch.events)};
      to_write = &split;
      break;
    }
  }
  WritePass pass(this);
  const auto start = std::chrono::steady_clock::now();
  bool written = true;
  absl::Status s;
  if (delivery != nullptr) {
    absl::StatusOr<bool> w = db_->PutLogs(*to_write, *delivery);
    s = w.status();
    if (w.ok()) written = *w;
  } else {
    s = db_->PutLogs(*to_write);
  }
  if (!s.ok()) {
    stats_.write_errors.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  stats_.write_seconds.Observe(SecondsSince(start));
  if (!written) {
    stats_.duplicate_deliveries.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  stats_.log_events.fetch_add(to_write->events.size(), std::memory_order_relaxed);
  for (model::IngestObserver* o : *Observers()) o->OnLogs(*to_write);
  return true;
}

absl::StatusOr<bool> Ingest::CreateJobRecord(const model::JobRecord& job,
                                             const store::Delivery* delivery) {
  if (!model::IsValidJobName(job.name)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "training job name \"%s\" is not valid: 1 to 63 letters, digits and hyphens, starting "
        "and ending with a letter or digit",
        job.name));
  }
  bool written = true;
  if (delivery != nullptr) {
    TW_ASSIGN_OR_RETURN(written, db_->CreateJob(job, *delivery));
  } else {
    TW_RETURN_IF_ERROR(db_->CreateJob(job));
  }
  if (written) {
    for (model::IngestObserver* o : *Observers()) o->OnJob(job);
  }
  return written;
}

absl::StatusOr<std::optional<model::JobRecord>> Ingest::GetJob(std::string_view name) {
  return db_->GetJob(name);
}

std::shared_ptr<const Ingest::ObserverList> Ingest::Observers() const {
  util::MutexLock lock(mu_);
  return subscribers_;
}

void Ingest::Subscribe(model::IngestObserver* observer) {
  util::MutexLock lock(mu_);
  auto next = std::make_shared<Ingest::ObserverList>(*subscribers_);
  next->push_back(observer);
  subscribers_ = std::move(next);
}

void Ingest::Unsubscribe(model::IngestObserver* observer) {
  util::MutexLock lock(mu_);
  auto next = std::make_shared<Ingest::ObserverList>(*subscribers_);
  next->erase(std::remove(next->begin(), next->end(), observer), next->end());
  subscribers_ = std::move(next);
}

}  // namespace trainwatch::ingest
