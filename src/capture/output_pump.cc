#include "capture/output_pump.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::capture {
namespace {

constexpr size_t kReadBytes = 64 * 1024;

// Our threads never take asynchronous signals: the runner's thread handles them
// (SignalCatcher), and a write to a closed terminal pipe returns EPIPE here
// instead of killing the runner with SIGPIPE.
void BlockAsyncSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2,
                  SIGALRM}) {
    sigaddset(&set, sig);
  }
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

const char* StreamName(int stream) { return stream == 0 ? "stdout" : "stderr"; }

}  // namespace

OutputPump::OutputPump(Stream out, Stream err, const util::Clock* clock, size_t queue_chunks,
                       LineHandler on_line, ChunkDoneHandler on_chunk_done)
    : clock_(clock),
      on_line_(std::move(on_line)),
      on_chunk_done_(std::move(on_chunk_done)),
      queue_(queue_chunks) {
  streams_[0] = std::move(out);
  streams_[1] = std::move(err);
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
}

OutputPump::~OutputPump() {
  if (started_ && !joined_) {
    reader_.request_stop();
    Join();
  }
}

void OutputPump::Start() {
  TW_CHECK(!started_);
  started_ = true;
  reader_ = std::jthread([this](std::stop_token stop) { ReadLoop(std::move(stop)); });
  liner_ = std::jthread([this] { LineLoop(); });
}

void OutputPump::BeginDrain(std::chrono::steady_clock::time_point deadline) {
  {
    util::MutexLock lock(mu_);
    if (!draining_ || deadline < drain_deadline_) drain_deadline_ = deadline;
    draining_ = true;
  }
  Wake();
}

void OutputPump::Join() {
  if (joined_) return;
  joined_ = true;
  if (reader_.joinable()) reader_.join();
  if (liner_.joinable()) liner_.join();
  streams_[0].fd.reset();
  streams_[1].fd.reset();
}

int OutputPump::fd(model::OutputStream stream) const {
  return streams_[stream == model::OutputStream::kStdout ? 0 : 1].fd.get();
}

CaptureStats OutputPump::stats() const {
  CaptureStats s;
  for (int i = 0; i < 2; ++i) {
    s.bytes[i] = bytes_[i].load();
    s.lines[i] = lines_[i].load();
  }
  s.chunks = chunks_.load();
  s.backpressure_waits = backpressure_waits_.load();
  s.backpressure_ms = backpressure_ms_.load();
  s.passthrough_failures = passthrough_failures_.load();
  return s;
}

void OutputPump::Wake() {
  if (!wake_fd_.valid()) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
}

void OutputPump::PassThrough(int stream, const char* data, size_t size) {
  int& fd = streams_[stream].passthrough_fd;
  while (fd >= 0 && size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // Someone made the terminal non-blocking: wait for it like a blocking write would.
      struct pollfd p = {fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    int err = n < 0 ? errno : EIO;
    ++passthrough_failures_;
    util::LogOnce(absl::StrFormat("capture-passthrough-%s", StreamName(stream)),
                  absl::StrFormat("cannot copy the training output to our %s (%s); it is still "
                                  "captured and stored",
                                  StreamName(stream), ::strerror(err)));
    fd = -1;
  }
}

void OutputPump::ReadLoop(std::stop_token stop) {
  BlockAsyncSignals();
  ::pthread_setname_np(::pthread_self(), "tw-cap-read");
  // A stop wakes the poll below through the eventfd, as BeginDrain does.
  std::stop_callback wake(stop, [this] { Wake(); });
  std::unique_ptr<char[]> buf(new char[kReadBytes]);
  bool open[2] = {streams_[0].fd.valid(), streams_[1].fd.valid()};
  while ((open[0] || open[1]) && !stop.stop_requested()) {
    struct pollfd fds[3];
    int stream_of[3] = {-1, -1, -1};
    nfds_t n = 0;
    for (int s = 0; s < 2; ++s) {
      if (!open[s]) continue;
      stream_of[n] = s;
      fds[n++] = {streams_[s].fd.get(), POLLIN, 0};
    }
    fds[n++] = {wake_fd_.get(), POLLIN, 0};
    int timeout_ms = -1;
    {
      util::MutexLock lock(mu_);
      if (draining_) {
        auto left = drain_deadline_ - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) break;
        timeout_ms = static_cast<int>(
            std::chrono::ceil<std::chrono::milliseconds>(left).count());
      }
    }
    int ready = ::poll(fds, n, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      util::LogError(absl::StrFormat("capture: poll failed: %s", ::strerror(errno)));
      break;
    }
    if (fds[n - 1].revents != 0) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_.get(), &count, sizeof(count));
    }
    for (nfds_t i = 0; i + 1 < n; ++i) {
      if (fds[i].revents == 0) continue;
      const int s = stream_of[i];
      ssize_t got = ::read(fds[i].fd, buf.get(), kReadBytes);
      if (got > 0) {
        const int64_t t_ms = clock_->NowMs();
        const size_t size = static_cast<size_t>(got);
        PassThrough(s, buf.get(), size);
        bytes_[s] += size;
        ++chunks_;
        Chunk chunk{t_ms, s, std::string(buf.get(), size)};
        // Single producer: if there is room now, Push cannot block.
        if (queue_.size() >= queue_.capacity()) {
          ++backpressure_waits_;
          auto start = std::chrono::steady_clock::now();
          queue_.Push(std::move(chunk));
          backpressure_ms_ += std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count();
        } else {
          queue_.Push(std::move(chunk));
        }
      } else if (got == 0) {
        open[s] = false;  // pipe: every writer closed it
      } else if (errno == EINTR || errno == EAGAIN) {
        continue;
      } else {
        // EIO is how a pty master reports that every slave fd is closed.
        if (errno != EIO) {
          util::LogWarning(absl::StrFormat("capture: reading the training %s failed: %s",
                                           StreamName(s), ::strerror(errno)));
        }
        open[s] = false;
      }
    }
  }
  queue_.Close();
}

void OutputPump::LineLoop() {
  BlockAsyncSignals();
  ::pthread_setname_np(::pthread_self(), "tw-cap-lines");
  LineSplitter splitters[2];
  int64_t last_t_ms[2] = {clock_->NowMs(), clock_->NowMs()};
  auto emit = [this](int s, int64_t t_ms, std::string_view text) {
    ++lines_[s];
    on_line_(model::LogLine{t_ms, s == 0 ? model::OutputStream::kStdout
                                         : model::OutputStream::kStderr,
                            text});
  };
  for (;;) {
    std::optional<Chunk> chunk = queue_.PopFor(std::chrono::seconds(1));
    if (!chunk) {
      if (queue_.closed() && queue_.size() == 0) break;
      continue;
    }
    const int s = chunk->stream;
    const int64_t t_ms = chunk->t_ms;
    last_t_ms[s] = t_ms;
    splitters[s].Feed(chunk->bytes, [&](std::string_view line) { emit(s, t_ms, line); });
    if (on_chunk_done_) on_chunk_done_();
  }
  // A last segment without a terminator is still a line (spec/extraction.md).
  for (int s = 0; s < 2; ++s) {
    splitters[s].Finish([&](std::string_view line) { emit(s, last_t_ms[s], line); });
  }
  if (on_chunk_done_) on_chunk_done_();
}

}  // namespace trainwatch::capture
