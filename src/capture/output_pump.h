#pragma once
// OutputPump: moves a child's output from its pipes/ptys to the terminal and to a
// line handler, on two threads it owns:
//
//   "tw-cap-read"  polls both streams, reads what is there (64 KiB at most per read),
//                  writes it at once to the passthrough fd (byte for byte, partial lines
//                  and "\r" redraws included), stamps it with the read time and queues it.
//   "tw-cap-lines" splits each stream's chunks into lines (LineSplitter) and calls the
//                  handler with each line, in read order.
//
// Back-pressure, not loss: the chunk queue is bounded; when it is full (the handler is
// slower than the program's output for long), the reader waits for room, so it stops
// reading and the program blocks in write() as it would on a slow terminal. Nothing is
// dropped; each wait is counted in Stats.
//
// The reader ends at end of file on both streams (pty masters report EIO, which is end
// of file there), or once the drain deadline given to BeginDrain has passed: a
// background process that inherited the output may hold it open long after the
// training process exited.
//
// Internal to capture (TrainingProcess owns one).

#include <sys/ioctl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "capture/line_splitter.h"
#include "capture/unique_fd.h"
#include "model/log_event.h"
#include "util/bounded_queue.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::capture {

// Receives each line; `line.text` is valid only during the call. Runs on the
// "tw-cap-lines" thread; may block (that is back-pressure on the program).
using LineHandler = std::function<void(const model::LogLine& line)>;
// Called on the same thread after the lines that one read completed have all been
// handed to the LineHandler (and once more at the end): where a consumer hands a
// batch of lines on, so that a burst of output costs one hand-over per 64 KiB read
// rather than one per line.
using ChunkDoneHandler = std::function<void()>;

struct CaptureStats {
  std::array<uint64_t, 2> bytes = {0, 0};  // [0] stdout, [1] stderr
  std::array<uint64_t, 2> lines = {0, 0};
  uint64_t chunks = 0;
  // Times the reader found the queue full and waited, and for how long in total.
  uint64_t backpressure_waits = 0;
  int64_t backpressure_ms = 0;
  // Streams whose passthrough stopped because writing to the terminal failed
  // (EPIPE, EIO: the terminal or pipe went away); capture goes on.
  uint64_t passthrough_failures = 0;
};

class OutputPump {
 public:
  struct Stream {
    UniqueFd fd;             // non-blocking read end (pipe or pty master)
    int passthrough_fd = -1; // where the bytes are copied at once; -1: nowhere
  };

  // on_chunk_done may be empty.
  OutputPump(Stream out, Stream err, const util::Clock* clock, size_t queue_chunks,
             LineHandler on_line, ChunkDoneHandler on_chunk_done = nullptr);
  ~OutputPump();  // stops the reader at once (as BeginDrain(now)) and Join()s
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  void Start();
  // The reader stops at `deadline` even if the streams are still open. Thread-safe.
  void BeginDrain(std::chrono::steady_clock::time_point deadline);
  // Waits for both threads; every line has reached the handler when it returns.
  void Join();

  // The read end of a stream (e.g. to set a pty's window size); -1 after Join.
  int fd(model::OutputStream stream) const;
  CaptureStats stats() const;

 private:
  struct Chunk {
    int64_t t_ms;
    int stream;  // 0 stdout, 1 stderr
    std::string bytes;
  };

  // Ends at end of file on both streams, at the drain deadline, or when
  // `stop` is requested (the destructor), whichever comes first.
  void ReadLoop(std::stop_token stop);
  void LineLoop();
  // Copies bytes to the stream's passthrough fd; on failure stops passthrough for it.
  void PassThrough(int stream, const char* data, size_t size);
  void Wake();

  std::array<Stream, 2> streams_;
  const util::Clock* clock_;
  LineHandler on_line_;
  ChunkDoneHandler on_chunk_done_;
  util::BoundedQueue<Chunk> queue_;
  UniqueFd wake_fd_;  // eventfd: BeginDrain wakes the reader

  util::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point drain_deadline_ ABSL_GUARDED_BY(mu_);

  bool started_ = false;
  bool joined_ = false;

  std::array<std::atomic<uint64_t>, 2> bytes_{};
  std::array<std::atomic<uint64_t>, 2> lines_{};
  std::atomic<uint64_t> chunks_{0};
  std::atomic<uint64_t> backpressure_waits_{0};
  std::atomic<int64_t> backpressure_ms_{0};
  std::atomic<uint64_t> passthrough_failures_{0};

  // Last: destroyed (joined) before what they use. The liner ends when the
  // reader has closed the queue and it is drained, so it needs no token.
  std::jthread reader_;
  std::jthread liner_;
};

}  // namespace trainwatch::capture
