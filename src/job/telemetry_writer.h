#pragma once
// TelemetryWriter: batches one job's log events and datapoints and writes them to
// the sinks on its own thread ("tw-job-write"), so the line thread does not wait for
// storage unless the backlog is full.
//
// Group commit: the writer thread wakes as soon as something is added and writes
// everything pending in one PutLogs and one Put per batch (datapoints first); what
// arrives while a write is in flight goes into the next one. With a fast sink every
// line is written within about a millisecond; with a slow one batches grow and the
// latency stays about one write.
//
// Back-pressure, not loss: Add blocks while the pending backlog exceeds
// max_pending_bytes (the training process then blocks in write(), see
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
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "model/log_event.h"
#include "model/series.h"
#include "model/sinks.h"

namespace trainwatch::job {

class TelemetryWriter {
 public:
  struct Options {
    size_t max_pending_bytes = 16 << 20;  // log message bytes + 16 per datapoint
    int max_attempts = 4;
    int64_t first_backoff_ms = 20;
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

  // `series[i]` is the key of datapoints added with series index i. The sinks must
  // outlive the writer.
  TelemetryWriter(model::LogSink* logs, model::SampleSink* samples, model::LogStreamId stream,
                  std::vector<model::SeriesKey> series, Options options);
  ~TelemetryWriter();
  TelemetryWriter(const TelemetryWriter&) = delete;
  TelemetryWriter& operator=(const TelemetryWriter&) = delete;

  // One captured line and the datapoints extracted from it: (series index, value),
  // all at t_ms. May block (back-pressure).
  void Add(int64_t t_ms, std::string_view line,
           const std::vector<std::pair<size_t, double>>& values);
  // Returns once everything added before the call is written (or dropped).
  void Flush();
  // Writes what is pending, then stops the thread. Later Adds are dropped (counted).
  // Call from one thread (the owner).
  void Stop();
  Stats stats() const;

 private:
  struct Pending {
    std::vector<model::LogEvent> events;
    std::vector<std::vector<model::Sample>> samples;  // by series index
    size_t bytes = 0;
    size_t sample_count = 0;
  };

  void Loop();
  void Write(Pending& batch);
  void WriteSamples(Pending& batch);
  void WriteLogs(std::vector<model::LogEvent>& events);
  // Calls fn until it succeeds, fails with InvalidArgument, or attempts run out.
  template <typename Fn>
  absl::Status WithRetries(Fn&& fn);

  model::LogSink* const logs_;
  model::SampleSink* const samples_;
  const model::LogStreamId stream_;
  const std::vector<model::SeriesKey> series_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable work_;   // writer thread: something to write, or stopping
  std::condition_variable room_;   // Add: the backlog shrank
  std::condition_variable done_;   // Flush: a batch was written
  Pending pending_;
  uint64_t added_seq_ = 0;    // batches of Add calls so far
  uint64_t written_seq_ = 0;  // Add calls whose data is written or dropped
  bool stopping_ = false;
  bool stopped_ = false;  // the thread is joined
  Stats stats_;
  std::thread thread_;
};

// Splits a line into CloudWatch-sized log event messages (see above). An empty line
// is one empty message.
std::vector<std::string_view> SplitLogMessage(std::string_view line,
                                              size_t max_bytes = model::kMaxLogEventBytes);

}  // namespace trainwatch::job
