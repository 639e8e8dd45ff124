#include "profiler/proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"

namespace trainwatch::profiler {
namespace {

absl::Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  std::string msg = absl::StrFormat("%s %s: %s", what, path, std::strerror(err));
  switch (err) {
    case ENOENT:
    case ESRCH:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace

ProcFile::~ProcFile() { Close(); }

ProcFile::ProcFile(ProcFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      last_errno_(other.last_errno_),
      path_(std::move(other.path_)),
      buf_(std::move(other.buf_)) {}

ProcFile& ProcFile::operator=(ProcFile&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    last_errno_ = other.last_errno_;
    path_ = std::move(other.path_);
    buf_ = std::move(other.buf_);
  }
  return *this;
}

void ProcFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status ProcFile::Open(std::string path, size_t initial_capacity) {
  Close();
  path_ = std::move(path);
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    last_errno_ = errno;
    return ErrnoStatus(last_errno_, "cannot open", path_);
  }
  fd_ = fd;
  if (buf_.size() < initial_capacity) buf_.resize(initial_capacity);
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> ProcFile::Read() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrFormat("%s is not open", path_));
  while (true) {
    ssize_t n = ::pread(fd_, buf_.data(), buf_.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      last_errno_ = errno;
      return ErrnoStatus(last_errno_, "cannot read", path_);
    }
    if (static_cast<size_t>(n) < buf_.size()) return std::string_view(buf_.data(), n);
    buf_.resize(buf_.size() * 2);  // content may continue: read it all again, larger
  }
}

DirReader::~DirReader() {
  if (fd_ >= 0) ::close(fd_);
}

DirReader::DirReader(DirReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

DirReader& DirReader::operator=(DirReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

absl::Status DirReader::Open(std::string path) {
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(path);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return ErrnoStatus(errno, "cannot open directory", path_);
  return absl::OkStatus();
}

bool DirReader::Rewind() { return fd_ >= 0 && ::lseek(fd_, 0, SEEK_SET) == 0; }

long DirReader::NextChunk() {
  while (true) {
    long n = ::syscall(SYS_getdents64, fd_, buf_, sizeof(buf_));
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

}  // namespace trainwatch::profiler
