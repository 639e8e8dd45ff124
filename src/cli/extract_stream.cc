#include "cli/extract_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "capture/line_splitter.h"
#include "extract/definitions.h"
#include "util/status_macros.h"
#include "util/mutex.h"

namespace trainwatch::cli {
namespace {

class FdSource : public ByteSource {
 public:
  FdSource(int fd, std::string name, bool owned) : fd_(fd), name_(std::move(name)), owned_(owned) {}
  ~FdSource() override {
    if (owned_) ::close(fd_);
  }
  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    for (;;) {
      ssize_t n = ::read(fd_, dst, size);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      return absl::DataLossError(
          absl::StrFormat("cannot read %s: %s", name_, std::strerror(errno)));
    }
  }

 private:
  int fd_;
  std::string name_;
  bool owned_;
};

class StringSource : public ByteSource {
 public:
  StringSource(std::string data, size_t max_read) : data_(std::move(data)), max_read_(max_read) {}
  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    size_t n = std::min({size, max_read_, data_.size() - at_});
    std::memcpy(dst, data_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::string data_;
  size_t max_read_;
  size_t at_ = 0;
};

// A byte buffer that grows without zero-filling (std::string::resize would
// write every byte of each block once more before read() does).
class Buffer {
 public:
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return std::string_view(data_.get(), size_); }
  // Room for `n` bytes, keeping the contents.
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    std::unique_ptr<char[]> bigger(new char[n]);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = n;
  }
  void set_size(size_t n) { size_ = n; }
  void Assign(const char* p, size_t n) {
    size_ = 0;
    Reserve(n);
    if (n > 0) std::memcpy(data_.get(), p, n);
    size_ = n;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Where a block may end: right after the last "\n", else right after the
// last "\r" that is not the final byte (so it cannot be the first half of a
// "\r\n"). npos when buf[from, size) has neither.
size_t FindCut(std::string_view buf, size_t from) {
  if (from >= buf.size()) return std::string_view::npos;
  const char* base = buf.data();
  const void* nl = memrchr(base + from, '\n', buf.size() - from);
  if (nl != nullptr) return static_cast<size_t>(static_cast<const char*>(nl) - base) + 1;
  if (buf.size() - from >= 2) {
    const void* cr = memrchr(base + from, '\r', buf.size() - from - 1);
    if (cr != nullptr) return static_cast<size_t>(static_cast<const char*>(cr) - base) + 1;
  }
  return std::string_view::npos;
}

// Cuts a byte stream into blocks that end at line ends (except the last).
class BlockReader {
 public:
  BlockReader(ByteSource& source, size_t block_bytes)
      : source_(source), block_bytes_(std::max<size_t>(block_bytes, 1)) {}

  // Fills *block with the next block; false at the end of the input.
  absl::StatusOr<bool> Next(Buffer* block) {
    block->Assign(carry_.data(), carry_.size());
    carry_.set_size(0);
    size_t target = std::max(block_bytes_, block->size() + 1);
    size_t searched = 0;  // block[0, searched) holds no cut
    for (;;) {
      bool short_read = false;
      while (!eof_ && block->size() < target && !short_read) {
        block->Reserve(target);
        size_t want = target - block->size();
        TW_ASSIGN_OR_RETURN(size_t n, source_.Read(block->data() + block->size(), want));
        block->set_size(block->size() + n);
        bytes_ += n;
        if (n == 0) eof_ = true;
        // A pipe returns what is there: hand it on rather than wait for a
        // full block, so that a live stream is not held back.
        short_read = n > 0 && n < want;
      }
      if (eof_) return block->size() > 0;
      size_t cut = FindCut(block->view(), searched == 0 ? 0 : searched - 1);
      if (cut != std::string_view::npos) {
        carry_.Assign(block->data() + cut, block->size() - cut);
        block->set_size(cut);
        return true;
      }
      searched = block->size();
      if (block->size() >= target) target *= 2;  // a line longer than a block
    }
  }

  uint64_t bytes() const { return bytes_; }

 private:
  ByteSource& source_;
  size_t block_bytes_;
  Buffer carry_;
  bool eof_ = false;
  uint64_t bytes_ = 0;
};

// Matches one block with `x`, into `out`.
void ProcessBlock(extract::Extractor& x, std::string_view data, const StreamOptions& options,
                  ExtractedBlock* out) {
  // Reused blocks keep their capacity: no page faults for fresh memory.
  out->lines = 0;
  out->values.clear();
  out->text.clear();
  out->rejected_samples.clear();
  x.ClearRejectedSamples();
  capture::LineSplitter splitter;
  auto on_line = [&](std::string_view line) {
    for (const extract::ExtractedValue& v : x.Extract(line)) out->values.push_back(v);
  };
  splitter.Feed(data, on_line);
  splitter.Finish(on_line);
  out->lines = splitter.lines();
  for (size_t i = 0; i < x.definitions().size(); ++i) {
    if (x.has_rejected_sample(i)) {
      out->rejected_samples.emplace_back(static_cast<uint32_t>(i), x.rejected_sample(i));
    }
  }
  if (options.format) options.format(out);
}

// The ordered hand-over between the reading thread and the workers.
class Pipeline {
 public:
  struct Job {
    uint64_t seq;
    Buffer data;
  };

  void Push(Job job) {
    util::MutexLock lock(mu_);
    jobs_.push_back(std::move(job));
    job_ready_.notify_one();
  }
  // Blocks until there is a job; false once closed and drained.
  bool Pop(Job* job) {
    util::MutexLock lock(mu_);
    lock.Wait(job_ready_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !jobs_.empty(); });
    if (jobs_.empty()) return false;
    *job = std::move(jobs_.front());
    jobs_.pop_front();
    return true;
  }
  void Done(uint64_t seq, ExtractedBlock block) {
    util::MutexLock lock(mu_);
    done_.emplace(seq, std::move(block));
    block_done_.notify_all();
  }
  // The result of block `seq`, waiting for it when `wait`; false when not there.
  bool Take(uint64_t seq, bool wait, ExtractedBlock* block) {
    util::MutexLock lock(mu_);
    if (wait) lock.Wait(block_done_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_.count(seq) != 0; });
    auto it = done_.find(seq);
    if (it == done_.end()) return false;
    *block = std::move(it->second);
    done_.erase(it);
    return true;
  }
  // Buffers go round: the reader fills one, a worker hands it back.
  void Recycle(Buffer buffer) {
    util::MutexLock lock(mu_);
    free_.push_back(std::move(buffer));
  }
  Buffer FreeBuffer() {
    util::MutexLock lock(mu_);
    if (free_.empty()) return Buffer();
    Buffer b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void RecycleBlock(ExtractedBlock block) {
    util::MutexLock lock(mu_);
    free_blocks_.push_back(std::move(block));
  }
  ExtractedBlock FreeBlock() {
    util::MutexLock lock(mu_);
    if (free_blocks_.empty()) return ExtractedBlock();
    ExtractedBlock b = std::move(free_blocks_.back());
    free_blocks_.pop_back();
    return b;
  }
  // Workers finish the jobs queued and stop; with `drop`, queued jobs are dropped.
  void Close(bool drop) {
    util::MutexLock lock(mu_);
    closed_ = true;
    if (drop) jobs_.clear();
    job_ready_.notify_all();
  }

 private:
  util::Mutex mu_;
  std::condition_variable job_ready_;
  std::condition_variable block_done_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, ExtractedBlock> done_ ABSL_GUARDED_BY(mu_);
  std::vector<Buffer> free_ ABSL_GUARDED_BY(mu_);
  std::vector<ExtractedBlock> free_blocks_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

int DefaultThreads() {
  unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 4u));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ByteSource>> OpenInput(const std::string& path) {
  if (path == "-") return std::make_unique<FdSource>(STDIN_FILENO, "stdin", false);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrFormat("cannot open input \"%s\": %s", path, std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::InvalidArgumentError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrFormat("input \"%s\" is a folder; give a log file (or - for stdin)", path));
  }
  if (S_ISREG(st.st_mode)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<FdSource>(fd, absl::StrFormat("input \"%s\"", path), true);
}

std::unique_ptr<ByteSource> MemorySource(std::string data, size_t max_read) {
  return std::make_unique<StringSource>(std::move(data), std::max<size_t>(max_read, 1));
}

absl::StatusOr<StreamResult> ExtractStream(
    ByteSource& source, const std::vector<model::MetricDefinition>& defs,
    const extract::ExtractOptions& options, const StreamOptions& stream_options,
    const std::function<absl::Status(ExtractedBlock&)>& on_block) {
  int threads = stream_options.threads > 0 ? stream_options.threads : DefaultThreads();
  std::vector<std::unique_ptr<extract::Extractor>> extractors;
  for (int t = 0; t < threads; ++t) {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<extract::Extractor> x,
                        extract::Extractor::Create(defs, options));
    extractors.push_back(std::move(x));
  }
  StreamResult result;
  result.has_rejected_sample.assign(defs.size(), false);
  result.rejected_sample.assign(defs.size(), std::string());
  auto hand_over = [&](ExtractedBlock& block) -> absl::Status {
    result.lines += block.lines;
    for (auto& [i, text] : block.rejected_samples) {
      if (!result.has_rejected_sample[i]) {
        result.has_rejected_sample[i] = true;
        result.rejected_sample[i] = std::move(text);
      }
    }
    return on_block(block);
  };

  BlockReader reader(source, stream_options.block_bytes);
  absl::Status status;
  if (threads == 1) {
    Buffer data;
    ExtractedBlock block;
    for (;;) {
      absl::StatusOr<bool> more = reader.Next(&data);
      if (!more.ok()) {
        status = more.status();
        break;
      }
      if (!*more) break;
      ProcessBlock(*extractors[0], data.view(), stream_options, &block);
      status = hand_over(block);
      if (!status.ok()) break;
    }
  } else {
    Pipeline pipeline;
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      extract::Extractor* x = extractors[t].get();
      workers.emplace_back([&pipeline, &stream_options, x] {
        Pipeline::Job job;
        while (pipeline.Pop(&job)) {
          ExtractedBlock block = pipeline.FreeBlock();
          ProcessBlock(*x, job.data.view(), stream_options, &block);
          pipeline.Recycle(std::move(job.data));
          pipeline.Done(job.seq, std::move(block));
        }
      });
    }
    const uint64_t max_in_flight = 2 * static_cast<uint64_t>(threads) + 1;
    uint64_t next_read = 0;
    uint64_t next_emit = 0;
    ExtractedBlock block;
    for (bool more = true; more && status.ok();) {
      // Hand over what is ready; wait when too many blocks are in flight.
      while (status.ok() && next_emit < next_read &&
             pipeline.Take(next_emit, next_read - next_emit >= max_in_flight, &block)) {
        status = hand_over(block);
        pipeline.RecycleBlock(std::move(block));
        ++next_emit;
      }
      if (!status.ok()) break;
      Buffer data = pipeline.FreeBuffer();
      absl::StatusOr<bool> got = reader.Next(&data);
      if (!got.ok()) {
        status = got.status();
        break;
      }
      more = *got;
      if (more) pipeline.Push({next_read++, std::move(data)});
    }
    pipeline.Close(/*drop=*/!status.ok());
    while (status.ok() && next_emit < next_read) {
      pipeline.Take(next_emit, /*wait=*/true, &block);
      status = hand_over(block);
      ++next_emit;
    }
    if (!status.ok()) pipeline.Close(/*drop=*/true);
    workers.clear();  // joins
  }
  if (!status.ok()) return status;

  result.bytes = reader.bytes();
  result.matched.assign(defs.size(), 0);
  result.rejected.assign(defs.size(), 0);
  for (const auto& x : extractors) {
    for (size_t i = 0; i < defs.size(); ++i) {
      result.matched[i] += x->matched(i);
      result.rejected[i] += x->rejected(i);
    }
  }
  return result;
}

}  // namespace trainwatch::cli
