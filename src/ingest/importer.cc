#include "ingest/importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "store/bulk_loader.h"
#include "util/bounded_queue.h"
#include "util/status_macros.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::ingest {
namespace {

// memchr is vectorised; a byte loop (std::count at -O2) took a tenth of the
// reading thread's time on long vmimport lines.
int64_t CountNewlines(std::string_view text) {
  int64_t n = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) break;
    ++n;
    p = static_cast<const char*>(nl) + 1;
  }
  return n;
}

struct Block {
  int64_t seq = 0;
  int64_t first_line = 0;
  uint64_t end_offset = 0;  // file offset after the block (progress)
  std::string data;
};

struct Parsed {
  absl::Status status;
  std::vector<SeriesRun> runs;
  uint64_t end_offset = 0;
  // The block's buffer, recycled once the runs are loaded: a parsed block
  // holds its buffer until then, which bounds the blocks in flight (parsing
  // on two threads outruns the loading thread).
  std::string buffer;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads up to n bytes at offset; -1 on error.
ssize_t ReadAt(int fd, char* buf, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

absl::StatusOr<ImportResult> ImportFile(store::Db* db, const std::string& path,
                                        const ImportOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    std::string msg = absl::StrFormat("cannot open \"%s\": %s", path, std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES) return absl::PermissionDeniedError(msg);
    return absl::InternalError(msg);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat("\"%s\" is not a regular file", path));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

  // The first meaningful line decides the format (and is the CSV header).
  std::string head(std::min<uint64_t>(size, 1 << 16), '\0');
  if (ReadAt(fd.get(), head.data(), head.size(), 0) < 0) {
    return absl::InternalError(absl::StrFormat("cannot read \"%s\": %s", path, std::strerror(errno)));
  }
  // A UTF-8 byte order mark (some Windows tools write one) is no data.
  const uint64_t bom = absl::StartsWith(head, "\xEF\xBB\xBF") ? 3 : 0;
  uint64_t data_start = bom;
  int64_t data_line = 1;
  std::string_view first_line;
  {
    size_t pos = bom;
    int64_t line = 1;
    while (pos < head.size()) {
      size_t nl = head.find('\n', pos);
      if (nl == std::string::npos) nl = head.size();
      std::string_view l = std::string_view(head).substr(pos, nl - pos);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      const bool blank = l.find_first_not_of(" \t") == std::string_view::npos;
      if (!blank && !(l[l.find_first_not_of(" \t")] == '#')) {
        first_line = l;
        data_start = nl + 1;
        data_line = line + 1;
        break;
      }
      pos = nl + 1;
      ++line;
    }
  }
  ImportFormat format = options.format;
  if (format == ImportFormat::kAuto) format = DetectFormat(path, first_line);
  if (format != ImportFormat::kCsv) {  // JSON formats: the first line is data
    data_start = bom;
    data_line = 1;
  }
  if (first_line.empty() && size <= head.size()) {  // nothing but blank lines and comments
    ImportResult nothing;
    nothing.format = format;
    nothing.bytes = size;
    return nothing;
  }
  const std::string header(first_line);
  {
    absl::StatusOr<std::unique_ptr<FormatParser>> probe =
        MakeParser(format, options.default_namespace, header);
    if (!probe.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s", path, std::string(probe.status().message())));
    }
  }

  TW_ASSIGN_OR_RETURN(std::unique_ptr<store::BulkLoader> loader, store::BulkLoader::Create(db));

  const int threads = options.parse_threads > 0
                          ? options.parse_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  util::BoundedQueue<Block> work(static_cast<size_t>(threads) + 1);
  util::Mutex mu;
  std::condition_variable cv;
  // Guarded by mu (locals: clang checks ABSL_GUARDED_BY on members only).
  std::map<int64_t, Parsed> done;
  int64_t total_blocks = -1;  // set by the reader at the end
  int64_t file_lines = 0;     // set by the reader at the end
  absl::Status read_error;
  std::atomic<bool> stop{false};

  // Block buffers are recycled: no fresh pages to fault in for every block,
  // and at most this many blocks exist at once.
  util::BoundedQueue<std::string> free_buffers(static_cast<size_t>(threads) * 2 + 2);
  for (size_t i = 0; i < free_buffers.capacity(); ++i) {
    std::string b;
    b.reserve(options.block_bytes + (64 << 10));
    free_buffers.TryPush(std::move(b));
  }

  std::thread reader([&] {
    int64_t seq = 0;
    int64_t line = data_line;
    bool last_line_open = false;  // the file's last line has no newline
    uint64_t offset = data_start;
    std::string carry;
    while (!stop.load()) {
      std::optional<std::string> buffer = free_buffers.PopFor(std::chrono::milliseconds(50));
      if (!buffer) continue;
      std::string& buf = *buffer;
      // The carried part of a line the last block cut, moved in, not copied:
      // a line of many blocks would be copied again with each.
      buf.swap(carry);
      carry.clear();
      const size_t have = buf.size();
      buf.resize(have + options.block_bytes);
      ssize_t n = ReadAt(fd.get(), buf.data() + have, options.block_bytes, offset);
      if (n < 0) {
        util::MutexLock lock(mu);
        read_error = absl::InternalError(
            absl::StrFormat("reading \"%s\": %s", path, std::strerror(errno)));
        break;
      }
      offset += static_cast<uint64_t>(n);
      const bool eof = n == 0 || offset >= size;
      buf.resize(have + static_cast<size_t>(n));
      size_t cut = eof ? buf.size() : buf.rfind('\n');
      if (cut == std::string::npos) {  // a line longer than a block: read on
        if (buf.size() > options.max_line_bytes) {
          util::MutexLock lock(mu);
          read_error = absl::InvalidArgumentError(absl::StrFormat(
              "%s:%d: a line longer than %d bytes: each sample (jsonl, CSV) or series "
              "(vmimport) goes on a line of its own; is this one JSON document, or a file "
              "with other line breaks?",
              path, line, options.max_line_bytes));
          break;
        }
        carry.swap(buf);  // no copy: the next block's buffer starts with it
        free_buffers.TryPush(std::move(buf));
        continue;
      }
      if (!eof) ++cut;  // keep the newline with its line
      carry.assign(buf, cut, std::string::npos);
      buf.resize(cut);
      if (buf.empty()) {  // nothing left (a file of a header only): no block
        free_buffers.TryPush(std::move(buf));
        if (eof) break;
        continue;
      }
      if (eof) last_line_open = !buf.empty() && buf.back() != '\n';
      if (line < options.from_line) {  // skipped: drop the block's lines before from_line
        size_t skip = 0;
        int64_t skipped = 0;
        while (line + skipped < options.from_line && skip < buf.size()) {
          const size_t nl = buf.find('\n', skip);
          skip = nl == std::string::npos ? buf.size() : nl + 1;
          ++skipped;
        }
        buf.erase(0, skip);
        line += skipped;
        if (buf.empty()) {
          free_buffers.TryPush(std::move(buf));
          if (eof) break;
          continue;
        }
      }
      Block b;
      b.seq = seq++;  // numbered only when queued: the loader waits for each number
      b.first_line = line;
      b.end_offset = offset - carry.size();
      line += CountNewlines(buf);
      b.data = std::move(buf);
      if (!work.Push(std::move(b))) break;
      if (eof) break;
    }
    work.Close();  // the workers drain what is queued, then stop
    util::MutexLock lock(mu);
    file_lines = line - 1 + (last_line_open ? 1 : 0);
    total_blocks = seq;
    cv.notify_all();
  });

  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      std::unique_ptr<FormatParser> parser =
          *MakeParser(format, options.default_namespace, header);
      while (true) {
        std::optional<Block> b = work.PopFor(std::chrono::milliseconds(100));
        if (!b) {
          if (stop.load() || (work.closed() && work.size() == 0)) return;
          continue;
        }
        Parsed p;
        p.end_offset = b->end_offset;
        p.status = parser->ParseBlock(b->data, b->first_line, &p.runs);
        p.buffer = std::move(b->data);
        util::MutexLock lock(mu);
        done.emplace(b->seq, std::move(p));
        cv.notify_all();
      }
    });
  }

  absl::Status status;
  int64_t bad_line = 0;
  std::set<std::string> kept_namespaces;
  std::map<std::string, int64_t> oldest_ms_by_namespace;
  std::string keep_settings;
  if (options.keep_ms) {
    const std::string d = store::FormatRetention(*options.keep_ms);
    keep_settings = absl::StrFormat("raw=%s 60s=%s 300s=%s 3600s=%s", d, d, d, d);
  }
  double last_progress = 0;
  uint64_t bytes_done = data_start;
  for (int64_t next = 0;; ++next) {
    Parsed p;
    {
      util::MutexLock lock(mu);
      lock.Wait(cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return done.count(next) > 0 || (total_blocks >= 0 && next >= total_blocks) ||
               !read_error.ok();
      });
      if (!read_error.ok()) {
        status = read_error;
        break;
      }
      auto it = done.find(next);
      if (it == done.end()) break;  // every block loaded
      p = std::move(it->second);
      done.erase(it);
    }
    for (SeriesRun& run : p.runs) {
      if (options.keep_ms && kept_namespaces.insert(run.key->ns).second) {
        status = db->AddRetentionRule(run.key->ns, keep_settings);
        if (!status.ok()) break;
      }
      if (!run.t_ms.empty()) {
        const int64_t oldest = *std::min_element(run.t_ms.begin(), run.t_ms.end());
        auto [it, inserted] = oldest_ms_by_namespace.try_emplace(run.key->ns, oldest);
        if (!inserted) it->second = std::min(it->second, oldest);
      }
      status = loader->Add(*run.key, run.t_ms, run.values);
      if (!status.ok()) {
        status = absl::InvalidArgumentError(
            absl::StrFormat("%s: %s", path, std::string(status.message())));
        break;
      }
    }
    free_buffers.TryPush(std::move(p.buffer));
    if (!status.ok()) break;
    // The lines before a bad one are loaded first.
    if (!p.status.ok()) {
      // "line N: what" from the parser becomes "PATH:N: what".
      std::string msg(p.status.message());
      if (msg.rfind("line ", 0) == 0) {
        msg = msg.substr(5);
        if (!absl::SimpleAtoi(msg.substr(0, msg.find(':')), &bad_line)) bad_line = 0;
      }
      status = absl::InvalidArgumentError(absl::StrFormat("%s:%s", path, msg));
      break;
    }
    bytes_done = p.end_offset;
    if (options.progress && seconds() - last_progress >= options.progress_interval_ms / 1000.0) {
      last_progress = seconds();
      options.progress({bytes_done, size, loader->samples(), last_progress});
    }
  }

  stop = true;
  work.Close();
  free_buffers.Close();
  reader.join();
  for (auto& w : workers) w.join();

  // Whatever was loaded stays consistent and durable, even after an error.
  absl::Status finish = loader->Finish();
  if (!status.ok()) {
    if (bad_line > 0) {
      return absl::Status(
          status.code(),
          absl::StrFormat("%s (the %d samples of the lines before it are loaded: fix line %d and "
                          "import the file again with --from-line %d to load the rest)",
                          status.message(), loader->samples(), bad_line, bad_line));
    }
    return absl::Status(status.code(),
                        absl::StrFormat("%s (%d samples before it were loaded)", status.message(),
                                        loader->samples()));
  }
  TW_RETURN_IF_ERROR(finish);
  if (options.from_line > std::max<int64_t>(file_lines, data_line)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: line %d is past the end of the file, which has %d lines", path,
                        options.from_line, file_lines));
  }
  ImportResult result;
  result.format = format;
  result.samples = loader->samples();
  result.series = loader->series();
  result.bytes = size;
  result.seconds = seconds();
  if (!options.keep_ms) {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    for (const auto& [ns, oldest] : oldest_ms_by_namespace) {
      const int64_t keep = db->retention()->For(ns).Get(store::Tier::kRaw);
      if (keep != store::kForever && oldest < now_ms - keep) {
        result.beyond_retention.push_back({ns, oldest, keep});
      }
    }
  }
  if (options.progress) options.progress({size, size, result.samples, result.seconds});
  return result;
}

}  // namespace trainwatch::ingest
