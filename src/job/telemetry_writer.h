#pragma once
// TelemetryWriter: batches one job's log events and datapoints and writes them to
// the sinks on two threads of its own ("tw-job-samples", "tw-job-logs"), so the line
// thread does not wait for storage unless the backlog is full.
//
// Group commit: each thread wakes as soon as something is added and writes
// everything pending in one call (Put, or PutLogs); what arrives while a write is in
// flight goes into the next one. Datapoints and log events have separate threads so a
// datapoint never waits behind a large log write: its latency is at most about two
// Put calls. With a fast sink every line is written within about a millisecond.
//
// Back-pressure, not loss: Add blocks while the backlog exceeds max_pending_bytes
// of memory, counting what waits and what is being written, each line at what it
// really takes (its text, the event, the vector's slack) (the training process
// then blocks in write(), see
// capture/output_pump.h); each wait is counted. Data is dropped only when the sink
// keeps failing: InvalidArgument is not retried (for datapoints, series are then
// retried one by one so that one bad series loses only itself); other errors are
// retried max_attempts times with exponential backoff. Every drop is counted and
// logged once.
//
// Log events follow CloudWatch's limits: a line longer than model::kMaxLogEventBytes
// becomes several events (split on UTF-8 character boundaries where possible, each
// with the line's timestamp); a PutLogs carries at most 10,000 events and 1 MiB
// (message bytes + 26 per event).
//
// Thread-safe. Stop() (or the destructor) writes what is pending and joins.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "model/log_event.h"
#include "model/series.h"
#include "model/sinks.h"
#include "util/mutex.h"

namespace trainwatch::job {

class TelemetryWriter {
 public:
  struct Options {
    // Memory held by lines and datapoints not yet written, in flight included.
    size_t max_pending_bytes = 8 << 20;
    int max_attempts = 4;
    int64_t first_backoff_ms = 20;
    // Writes nothing until Release() (or Stop): what is added waits. A job's
    // runner holds its lines until the job's record exists, so that
    // everything reading the ingest (the rules) knows the job first.
    bool start_held = false;
  };
  struct Stats {
    uint64_t events_written = 0;
    uint64_t samples_written = 0;
    uint64_t log_puts = 0;  // successful PutLogs calls
    uint64_t sample_puts = 0;
    uint64_t retries = 0;
    uint64_t events_dropped = 0;
    uint64_t samples_dropped = 0;
    uint64_t backpressure_waits = 0;
  };
  // Lines gathered by the caller without locking, handed over with one Add.
  struct Batch {
    std::vector<model::LogEvent> events;
    std::vector<std::pair<size_t, model::Sample>> samples;  // (series index, sample)
    // One captured line and the datapoints extracted from it: (series index, value),
    // all at t_ms.
    void AddLine(int64_t t_ms, std::string_view line,
                 const std::vector<std::pair<size_t, double>>& values);
    bool empty() const { return events.empty() && samples.empty(); }
  };

  // `series[i]` is the key of datapoints added with series index i. The sinks must
  // outlive the writer.
  TelemetryWriter(model::LogSink* logs, model::SampleSink* samples, model::LogStreamId stream,
                  std::vector<model::SeriesKey> series, Options options);
  ~TelemetryWriter();
  TelemetryWriter(const TelemetryWriter&) = delete;
  TelemetryWriter& operator=(const TelemetryWriter&) = delete;

  // Takes the batch's contents (leaving it empty). May block (back-pressure).
  void Add(Batch* batch);
  // Add for a single line.
  void Add(int64_t t_ms, std::string_view line,
           const std::vector<std::pair<size_t, double>>& values);
  // Starts writing (Options::start_held).
  void Release();
  // Returns once everything added before the call is written (or dropped).
  // Not while held.
  void Flush();
  // Writes what is pending, then stops the threads. Later Adds are dropped (counted),
  // and so is what is pending when the writer was never released. Unblocks an Add
  // waiting for room. Call from one thread (the owner).
  void Stop();
  Stats stats() const;

 private:
  void LogLoop(std::stop_token stop);
  void SampleLoop(std::stop_token stop);
  void WriteSamples(std::vector<std::vector<model::Sample>>& samples);
  void WriteLogs(std::vector<model::LogEvent>& events);
  // Calls fn until it succeeds, fails with InvalidArgument, or attempts run out.
  template <typename Fn>
  absl::Status WithRetries(Fn&& fn);

  model::LogSink* const logs_;
  model::SampleSink* const samples_;
  const model::LogStreamId stream_;
  const std::vector<model::SeriesKey> series_;
  const Options options_;

  mutable util::Mutex mu_;
  // Writer threads: something to write (a stop wakes them through their token).
  std::condition_variable_any work_;
  std::condition_variable room_;  // Add: the backlog shrank
  std::condition_variable done_;  // Flush: a batch was written
  std::vector<model::LogEvent> pending_events_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<model::Sample>> pending_samples_ ABSL_GUARDED_BY(mu_);  // by series index
  size_t pending_log_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pending_sample_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // What the writer threads hold while they write (counted until written).
  size_t inflight_log_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  size_t inflight_sample_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t added_seq_ ABSL_GUARDED_BY(mu_) = 0;           // Add calls so far
  uint64_t logs_written_seq_ ABSL_GUARDED_BY(mu_) = 0;    // Add calls whose events are written (or dropped)
  uint64_t samples_written_seq_ ABSL_GUARDED_BY(mu_) = 0;  // ... whose datapoints are
  // Set by Stop before it asks the threads to stop: later Adds are dropped,
  // so once a thread has seen its stop and nothing pending, nothing comes.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool held_ ABSL_GUARDED_BY(mu_);  // Options::start_held, until Release
  bool stopped_ = false;  // both threads joined
  Stats stats_;
  // Last: destroyed first. ~TelemetryWriter stops and joins them explicitly
  // (Stop), since what is pending must be written first.
  std::jthread log_thread_;
  std::jthread sample_thread_;
};

// Splits a line into CloudWatch-sized log event messages (see above). An empty line
// is one empty message.
std::vector<std::string_view> SplitLogMessage(std::string_view line,
                                              size_t max_bytes = model::kMaxLogEventBytes);

}  // namespace trainwatch::job
