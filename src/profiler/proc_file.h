#pragma once
// Cheap re-reading of kernel files (/proc, /sys, cgroupfs).
//
// The kernel regenerates these files on every read, so the profiler opens each
// once and re-reads it with pread(2) from offset 0 on every tick: one syscall
// per file per tick and no allocation once the buffer has grown to fit.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainwatch::profiler {

// ProcFile: one open kernel file and the buffer it is read into.
// Thread safety: none (one sampler thread owns it). Movable, not copyable.
class ProcFile {
 public:
  ProcFile() = default;
  ~ProcFile();
  ProcFile(ProcFile&& other) noexcept;
  ProcFile& operator=(ProcFile&& other) noexcept;
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  // Opens `path` read-only (closing what was open). NotFound when the path is
  // absent, PermissionDenied, or Internal with the errno text; the message
  // names the path.
  absl::Status Open(std::string path, size_t initial_capacity = 4096);
  bool is_open() const { return fd_ >= 0; }
  void Close();
  const std::string& path() const { return path_; }

  // Reads the whole content again. The view is valid until the next Read,
  // Open or Close. A read that fills the buffer grows it (doubling) and reads
  // again; a short read is taken as the end (true of seq_file and sysfs).
  // Errors keep errno in the message; errno_of_last_error() tells which (ESRCH
  // when a /proc/<pid> file's process has gone).
  absl::StatusOr<std::string_view> Read();
  int errno_of_last_error() const { return last_errno_; }

 private:
  int fd_ = -1;
  int last_errno_ = 0;
  std::string path_;
  std::vector<char> buf_;
};

// DirReader: lists a directory again and again through one open descriptor
// (getdents64 into a fixed buffer, rewound with lseek): no allocation per
// listing. Used for /proc/<pid>/task and, where needed, /proc itself.
class DirReader {
 public:
  DirReader() = default;
  ~DirReader();
  DirReader(DirReader&& other) noexcept;
  DirReader& operator=(DirReader&& other) noexcept;
  DirReader(const DirReader&) = delete;
  DirReader& operator=(const DirReader&) = delete;

  absl::Status Open(std::string path);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Calls fn(name) for every entry except "." and "..". Returns false (and
  // stops) on a read error, e.g. ENOENT once a process directory is gone.
  template <typename Fn>
  bool ForEach(Fn&& fn);

  // Calls fn(n) for every entry whose name is a positive decimal number
  // (pids and tids).
  template <typename Fn>
  bool ForEachNumber(Fn&& fn) {
    return ForEach([&](std::string_view name) {
      int64_t n = 0;
      if (name.empty() || name.size() > 10) return;
      for (char c : name) {
        if (c < '0' || c > '9') return;
        n = n * 10 + (c - '0');
      }
      if (n > 0) fn(n);
    });
  }

 private:
  bool Rewind();
  // Fills buf_ with the next chunk of entries; returns bytes (0 at end, -1 on error).
  long NextChunk();

  int fd_ = -1;
  std::string path_;
  alignas(8) char buf_[8192];
};

template <typename Fn>
bool DirReader::ForEach(Fn&& fn) {
  if (!Rewind()) return false;
  while (true) {
    long n = NextChunk();
    if (n < 0) return false;
    if (n == 0) return true;
    for (long off = 0; off < n;) {
      // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
      const char* rec = buf_ + off;
      unsigned short reclen;
      __builtin_memcpy(&reclen, rec + 16, sizeof(reclen));
      std::string_view name(rec + 19);
      if (name != "." && name != "..") fn(name);
      off += reclen;
    }
  }
}

}  // namespace trainwatch::profiler
