#include "agent/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::agent {
namespace {

constexpr int64_t kSegmentBytes = 16 << 20;
constexpr size_t kHeaderBytes = 16;  // length, crc, seq

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrFormat("%s \"%s\": %s", what, path, std::strerror(errno)));
}

void PutLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutLe64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint32_t Checksum(const char* seq_and_payload, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(seq_and_payload), chunk);
    seq_and_payload += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

std::string SegmentPath(const std::string& dir, int64_t first_seq) {
  return absl::StrFormat("%s/%020d.seg", dir, first_seq);
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Spool::Spool(std::string dir, int64_t max_bytes, int lock_fd)
    : dir_(std::move(dir)), max_bytes_(max_bytes), lock_fd_(lock_fd) {}

Spool::~Spool() {
  if (append_fd_ >= 0) ::close(append_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

absl::StatusOr<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, int64_t max_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrFormat("cannot create the spool folder \"%s\": %s", dir, ec.message()));
  }
  const std::string lock_path = dir + "/lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot open", lock_path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrFormat("the spool \"%s\" belongs to another running process", dir));
  }
  std::unique_ptr<Spool> spool(new Spool(dir, max_bytes, fd));
  {
    util::MutexLock lock(spool->mu_);  // nobody else has the spool yet; Recover requires it
    if (absl::Status s = spool->Recover(); !s.ok()) return s;
  }
  return spool;
}

absl::Status Spool::Recover() {
  {
    std::ifstream in(dir_ + "/acked");
    std::string text;
    if (in >> text) (void)absl::SimpleAtoi(text, &acked_);
  }
  std::vector<std::pair<int64_t, std::string>> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    int64_t first = 0;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".seg" &&
        absl::SimpleAtoi(name.substr(0, name.size() - 4), &first)) {
      files.emplace_back(first, entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  int64_t max_seq = acked_;
  for (size_t f = 0; f < files.size(); ++f) {
    const bool last_file = f + 1 == files.size();
    std::ifstream in(files[f].second, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Segment seg;
    seg.first_seq = files[f].first;
    seg.last_seq = seg.first_seq - 1;
    seg.path = files[f].second;
    size_t off = 0;
    while (off + kHeaderBytes <= data.size()) {
      const uint32_t len = GetLe32(data.data() + off);
      if (off + kHeaderBytes + len > data.size()) break;  // torn tail
      const uint32_t crc = GetLe32(data.data() + off + 4);
      const int64_t seq = static_cast<int64_t>(GetLe64(data.data() + off + 8));
      if (Checksum(data.data() + off + 8, 8 + len) != crc) {
        if (last_file && off + kHeaderBytes + len == data.size()) break;  // torn last record
        util::LogWarning(absl::StrFormat(
            "spool %s: a damaged record at byte %d is skipped", seg.path, off));
      } else {
        seg.last_seq = std::max(seg.last_seq, seq);
        max_seq = std::max(max_seq, seq);
        if (seq > acked_) {
          seg.offsets[seq] = static_cast<int64_t>(off);
          pending_bytes_ += static_cast<int64_t>(kHeaderBytes + len);
        }
      }
      off += kHeaderBytes + len;
    }
    if (off < data.size()) {
      if (last_file) {
        // A crash in the middle of an append: that record was never acknowledged.
        if (::truncate(seg.path.c_str(), static_cast<off_t>(off)) != 0) {
          return Errno("cannot truncate", seg.path);
        }
      } else {
        util::LogWarning(absl::StrFormat("spool %s: %d bytes at the end are not a record",
                                         seg.path, data.size() - off));
      }
    }
    seg.bytes = static_cast<int64_t>(off);
    if (seg.offsets.empty() && !last_file) {
      std::filesystem::remove(seg.path);
      continue;
    }
    segments_[seg.first_seq] = std::move(seg);
  }
  next_seq_ = max_seq + 1;
  if (!segments_.empty() && segments_.rbegin()->second.bytes < kSegmentBytes) {
    Segment& last = segments_.rbegin()->second;
    append_fd_ = ::open(last.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (append_fd_ < 0) return Errno("cannot open", last.path);
    return absl::OkStatus();
  }
  return OpenSegmentForAppend(next_seq_);
}

absl::Status Spool::OpenSegmentForAppend(int64_t first_seq) {
  if (append_fd_ >= 0) ::close(append_fd_);
  Segment seg;
  seg.first_seq = first_seq;
  seg.last_seq = first_seq - 1;
  seg.path = SegmentPath(dir_, first_seq);
  append_fd_ = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (append_fd_ < 0) return Errno("cannot create", seg.path);
  segments_[first_seq] = std::move(seg);
  return absl::OkStatus();
}

int64_t Spool::next_seq() const {
  util::MutexLock lock(mu_);
  return next_seq_;
}

absl::StatusOr<int64_t> Spool::Append(const std::function<std::string(int64_t seq)>& make) {
  util::MutexLock lock(mu_);
  const int64_t seq = next_seq_;
  std::string payload = make(seq);
  const int64_t size = static_cast<int64_t>(kHeaderBytes + payload.size());
  if (pending_bytes_ + size > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the spool \"%s\" is full (%d bytes waiting for the server, limit %d)", dir_,
        pending_bytes_, max_bytes_));
  }
  if (segments_.empty() || segments_.rbegin()->second.bytes >= kSegmentBytes) {
    if (absl::Status s = OpenSegmentForAppend(seq); !s.ok()) return s;
  }
  Segment& seg = segments_.rbegin()->second;
  std::string record(kHeaderBytes, '\0');
  PutLe32(record.data(), static_cast<uint32_t>(payload.size()));
  PutLe64(record.data() + 8, static_cast<uint64_t>(seq));
  record += payload;
  PutLe32(record.data() + 4, Checksum(record.data() + 8, 8 + payload.size()));
  if (!WriteAll(append_fd_, record.data(), record.size()) || ::fdatasync(append_fd_) != 0) {
    absl::Status s = Errno("cannot write to the spool", seg.path);
    // Cut off whatever part was written, so that the next record starts clean.
    if (::ftruncate(append_fd_, static_cast<off_t>(seg.bytes)) != 0) {
      util::LogWarning(absl::StrFormat("spool %s: cannot cut off a failed write", seg.path));
    }
    return s;
  }
  seg.offsets[seq] = seg.bytes;
  seg.bytes += size;
  seg.last_seq = seq;
  pending_bytes_ += size;
  ++next_seq_;
  cv_.notify_all();
  return seq;
}

absl::StatusOr<std::optional<Spool::Record>> Spool::Front(int64_t wait_ms) {
  util::MutexLock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    for (auto& [first, seg] : segments_) {
      while (!seg.offsets.empty()) {
        auto [seq, off] = *seg.offsets.begin();
        int fd = ::open(seg.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return Errno("cannot read", seg.path);
        char header[kHeaderBytes];
        bool ok = ::pread(fd, header, kHeaderBytes, off) == static_cast<ssize_t>(kHeaderBytes);
        Record r;
        if (ok) {
          const uint32_t len = GetLe32(header);
          std::string body(8 + len, '\0');
          std::memcpy(body.data(), header + 8, 8);
          ok = ::pread(fd, body.data() + 8, len, off + static_cast<off_t>(kHeaderBytes)) ==
                   static_cast<ssize_t>(len) &&
               Checksum(body.data(), body.size()) == GetLe32(header + 4);
          r.seq = seq;
          r.payload = body.substr(8);
        }
        ::close(fd);
        if (ok) return r;
        util::LogWarning(absl::StrFormat("spool %s: record %d is damaged and is skipped",
                                         seg.path, seq));
        seg.offsets.erase(seg.offsets.begin());
      }
    }
    if (interrupted_) return std::nullopt;
    if (lock.WaitOnceUntil(cv_, deadline) == std::cv_status::timeout) {
      // One more look: an append may have raced the timeout.
      bool any = false;
      for (auto& [first, seg] : segments_) any = any || !seg.offsets.empty();
      if (!any) return std::nullopt;
    }
  }
}

absl::Status Spool::Ack(int64_t seq) {
  util::MutexLock lock(mu_);
  if (seq <= acked_) return absl::OkStatus();
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment& seg = it->second;
    while (!seg.offsets.empty() && seg.offsets.begin()->first <= seq) {
      auto next = std::next(seg.offsets.begin());
      const int64_t end = next != seg.offsets.end() ? next->second : seg.bytes;
      pending_bytes_ -= end - seg.offsets.begin()->second;
      seg.offsets.erase(seg.offsets.begin());
    }
    const bool appending = std::next(it) == segments_.end();
    if (seg.offsets.empty() && !appending) {
      std::filesystem::remove(seg.path);
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  acked_ = seq;
  return WriteAcked(seq);
}

absl::Status Spool::WriteAcked(int64_t seq) {
  // Not synced: after a crash an older note only means some batches are
  // sent again, and the server drops those it has (store::Delivery).
  const std::string tmp = dir_ + "/acked.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << seq << "\n";
    if (!out) return Errno("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), (dir_ + "/acked").c_str()) != 0) return Errno("cannot rename", tmp);
  return absl::OkStatus();
}

int64_t Spool::acked() const {
  util::MutexLock lock(mu_);
  return acked_;
}

int64_t Spool::pending() const {
  util::MutexLock lock(mu_);
  int64_t n = 0;
  for (const auto& [first, seg] : segments_) n += static_cast<int64_t>(seg.offsets.size());
  return n;
}

int64_t Spool::pending_bytes() const {
  util::MutexLock lock(mu_);
  return pending_bytes_;
}

void Spool::Interrupt() {
  util::MutexLock lock(mu_);
  interrupted_ = true;
  cv_.notify_all();
}

}  // namespace trainwatch::agent
