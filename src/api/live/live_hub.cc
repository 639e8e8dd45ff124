#include "api/live/live_hub.h"

#include <algorithm>
#include <iterator>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "model/job_record.h"

namespace trainwatch::api::live {
namespace {

// Forgotten histories remembered by name; beyond, only the newest seq.
constexpr size_t kMaxForgotten = 10000;
// The counted size of a job-change mark (the record is read when sent).
constexpr size_t kJobEntryBytes = 128;

std::string Lower(std::string_view s) {
  return absl::AsciiStrToLower(absl::string_view(s.data(), s.size()));
}

std::string NewEpoch() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrFormat("%016x", v);
}

size_t SeriesBytes(const model::SeriesSamples& s) {
  size_t n = 64 + s.key.ns.size() + s.key.metric.size() + s.key.unit.size();
  for (const model::Dimension& d : s.key.dimensions) n += d.name.size() + d.value.size() + 8;
  return n + 24 * s.size();
}

}  // namespace

std::string JobOfLogStream(const model::LogStreamId& stream) {
  if (stream.group != model::kTrainingJobsLogGroup) return "";
  size_t slash = stream.stream.find('/');
  if (slash == std::string::npos || slash == 0) return "";
  return stream.stream.substr(0, slash);
}

LiveHub::LiveHub(LiveOptions options)
    : options_(options),
      clock_(options.clock != nullptr ? options.clock : &util::SystemClock::Get()),
      epoch_(NewEpoch()) {}

uint64_t LiveHub::head() const {
  util::MutexLock lock(mu_);
  return seq_;
}

size_t LiveHub::HeldBytes() const {
  util::MutexLock lock(mu_);
  return total_bytes_;
}

std::shared_ptr<const std::set<std::string>> LiveHub::HeldJobs() const {
  util::MutexLock lock(held_jobs_mu_);
  return held_jobs_;
}

void LiveHub::HoldJob(const std::string& lower_job) {
  util::MutexLock lock(held_jobs_mu_);
  if (held_jobs_->count(lower_job) > 0) return;
  auto next = std::make_shared<std::set<std::string>>(*held_jobs_);
  next->insert(lower_job);
  held_jobs_ = std::move(next);
}

void LiveHub::KnowJob(const std::string& job) {
  if (!job.empty()) HoldJob(Lower(job));
}

void LiveHub::OnSamples(const model::SampleBatch& batch) {
  const std::shared_ptr<const std::set<std::string>> held = HeldJobs();
  if (held->empty()) return;
  // The job's part of the batch, copied before the lock is taken.
  std::map<std::string, std::shared_ptr<LiveEntry>> by_job;
  for (const model::SeriesSamples& series : batch.series) {
    if (series.size() == 0) continue;
    std::optional<model::JobHost> of = model::JobOfSeries(series.key);
    if (!of) continue;
    std::string job = std::move(of->job);
    std::string key = Lower(job);
    if (held->count(key) == 0) continue;
    std::shared_ptr<LiveEntry>& entry = by_job[std::move(key)];
    if (entry == nullptr) {
      entry = std::make_shared<LiveEntry>();
      entry->kind = LiveEntry::Kind::kSamples;
      entry->job = job;
    }
    entry->samples.series.push_back(series);
    entry->bytes += SeriesBytes(series);
  }
  if (by_job.empty()) return;
  util::MutexLock lock(mu_);
  for (auto& [key, entry] : by_job) Append(key, std::move(entry));
}

void LiveHub::OnLogs(const model::LogBatch& batch) {
  if (batch.events.empty()) return;
  std::string job = JobOfLogStream(batch.stream);
  if (job.empty() || HeldJobs()->count(Lower(job)) == 0) return;
  auto entry = std::make_shared<LiveEntry>();
  entry->kind = LiveEntry::Kind::kLogs;
  entry->job = job;
  entry->logs = batch;
  entry->ingestion_ms = clock_->NowMs();
  entry->bytes = 64 + batch.stream.group.size() + batch.stream.stream.size();
  for (const model::LogEvent& e : batch.events) entry->bytes += e.message.size() + 48;
  util::MutexLock lock(mu_);
  Append(Lower(job), std::move(entry));
}

void LiveHub::OnJob(const model::JobRecord& job) { MarkJobChanged(job.name); }

void LiveHub::OnRuleStatuses(const std::string& job, int, const std::vector<model::RuleStatus>&) {
  MarkJobChanged(job);
}

void LiveHub::MarkJobChanged(const std::string& job) {
  if (job.empty()) return;
  HoldJob(Lower(job));
  auto entry = std::make_shared<LiveEntry>();
  entry->kind = LiveEntry::Kind::kJob;
  entry->job = job;
  entry->bytes = kJobEntryBytes;
  util::MutexLock lock(mu_);
  Append(Lower(job), std::move(entry));
}

void LiveHub::Append(const std::string& key, std::shared_ptr<LiveEntry> entry) {
  entry->seq = ++seq_;
  std::shared_ptr<const LiveEntry> held = std::move(entry);
  auto [it, inserted] = jobs_.try_emplace(key);
  JobHistory& history = it->second;
  if (inserted) {
    // A history evicted whole before: what it dropped stays dropped.
    if (auto f = forgotten_.find(key); f != forgotten_.end()) {
      history.dropped_through = f->second;
      forgotten_.erase(f);
    } else {
      history.dropped_through = forgotten_floor_;
    }
  }
  history.appended_bytes += held->bytes;
  history.bytes += held->bytes;
  total_bytes_ += held->bytes;
  history.entries.push_back({held, history.appended_bytes});
  if (held->kind == LiveEntry::Kind::kJob) {
    changes_.push_back({held->seq, held});
    while (changes_.size() > options_.job_changes_held) {
      changes_dropped_through_ = changes_.front().seq;
      changes_.pop_front();
    }
  }
  for (auto& entry : waiters_) {
    Waiter& waiter = entry.second;
    bool wanted =
        waiter.jobs.empty() ? held->kind == LiveEntry::Kind::kJob : waiter.jobs.count(key) > 0;
    if (wanted) waiter.wake();
  }
  while (jobs_.count(key) > 0 && jobs_[key].bytes > options_.history_bytes_per_job) {
    EvictOldest(key);
  }
  while (total_bytes_ > options_.history_bytes_total && !jobs_.empty()) {
    // The oldest entry of all goes first.
    const std::string* oldest = nullptr;
    uint64_t oldest_seq = UINT64_MAX;
    for (const auto& [name, h] : jobs_) {
      if (!h.entries.empty() && h.entries.front().entry->seq < oldest_seq) {
        oldest_seq = h.entries.front().entry->seq;
        oldest = &name;
      }
    }
    if (oldest == nullptr) break;
    EvictOldest(std::string(*oldest));
  }
}

void LiveHub::EvictOldest(const std::string& key) {
  auto it = jobs_.find(key);
  JobHistory& history = it->second;
  const LiveEntry& front = *history.entries.front().entry;
  history.bytes -= front.bytes;
  total_bytes_ -= front.bytes;
  history.dropped_through = front.seq;
  history.entries.pop_front();
  entries_evicted_.fetch_add(1, std::memory_order_relaxed);
  if (!history.entries.empty()) return;
  if (forgotten_.size() >= kMaxForgotten) {
    for (const auto& f : forgotten_) forgotten_floor_ = std::max(forgotten_floor_, f.second);
    forgotten_.clear();
  }
  forgotten_[key] = history.dropped_through;
  jobs_.erase(it);
}

LiveHub::Read LiveHub::ReadAfter(const Filter& filter, uint64_t after, size_t max_bytes,
                                 size_t backlog_bytes) const {
  util::MutexLock lock(mu_);
  Read read;
  read.head = seq_;
  auto reset = [&](std::string reason) {
    readers_reset_.fetch_add(1, std::memory_order_relaxed);
    read.reset = true;
    read.reason = std::move(reason);
    read.entries.clear();
    read.next = read.head;  // not seq_: the lambda is outside the analysis's lock scope
    return read;
  };
  if (after > seq_) return reset("unknown position");
  if (filter.jobs.empty()) {
    if (after < changes_dropped_through_) return reset("position no longer held");
    auto first = std::upper_bound(changes_.begin(), changes_.end(), after,
                                  [](uint64_t seq, const JobChange& c) { return seq < c.seq; });
    size_t bytes = 0;
    for (auto it = first; it != changes_.end() && (bytes < max_bytes || read.entries.empty());
         ++it) {
      bytes += it->entry->bytes;
      read.entries.push_back(it->entry);
    }
    read.next = read.entries.empty() || read.entries.back()->seq == changes_.back().seq
                    ? seq_
                    : read.entries.back()->seq;
    return read;
  }
  // Per job: the held entries after `after` (a range of its history).
  struct Range {
    std::deque<Held>::const_iterator it, end;
  };
  std::vector<Range> ranges;
  std::set<std::string> seen;
  uint64_t pending = 0;
  for (const std::string& name : filter.jobs) {
    std::string key = Lower(name);
    if (!seen.insert(key).second) continue;
    auto h = jobs_.find(key);
    if (h == jobs_.end()) {
      auto f = forgotten_.find(key);
      uint64_t through = f != forgotten_.end() ? f->second : forgotten_floor_;
      if (after < through) return reset("position no longer held");
      continue;
    }
    const JobHistory& history = h->second;
    if (after < history.dropped_through) return reset("position no longer held");
    auto first =
        std::upper_bound(history.entries.begin(), history.entries.end(), after,
                         [](uint64_t seq, const Held& held) { return seq < held.entry->seq; });
    uint64_t before = first == history.entries.begin() ? history.appended_bytes - history.bytes
                                                       : std::prev(first)->cumulative;
    pending += history.appended_bytes - before;
    if (first != history.entries.end()) ranges.push_back({first, history.entries.end()});
  }
  if (pending > backlog_bytes) return reset("too far behind");
  // Merged in sequence order, until max_bytes.
  size_t bytes = 0;
  while (bytes < max_bytes || read.entries.empty()) {
    Range* next = nullptr;
    for (Range& r : ranges) {
      if (r.it != r.end && (next == nullptr || r.it->entry->seq < next->it->entry->seq)) {
        next = &r;
      }
    }
    if (next == nullptr) break;
    bytes += next->it->entry->bytes;
    read.entries.push_back(next->it->entry);
    ++next->it;
  }
  bool more =
      std::any_of(ranges.begin(), ranges.end(), [](const Range& r) { return r.it != r.end; });
  read.next = more ? read.entries.back()->seq : seq_;
  return read;
}

uint64_t LiveHub::AddWaiter(const Filter& filter, std::function<void()> wake) {
  Waiter waiter;
  for (const std::string& job : filter.jobs) {
    waiter.jobs.insert(Lower(job));
    HoldJob(Lower(job));
  }
  waiter.wake = std::move(wake);
  util::MutexLock lock(mu_);
  uint64_t id = next_waiter_++;
  waiters_.emplace(id, std::move(waiter));
  return id;
}

void LiveHub::RemoveWaiter(uint64_t id) {
  util::MutexLock lock(mu_);
  waiters_.erase(id);
}

}  // namespace trainwatch::api::live
