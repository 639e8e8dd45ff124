#include "store/data_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "util/time_parse.h"

namespace trainwatch::store {
namespace fs = std::filesystem;

DataFolderPaths::DataFolderPaths(std::string root_dir)
    : root(std::move(root_dir)),
      db(root + "/db"),
      writer_lock(root + "/writer.lock"),
      readers(root + "/readers"),
      retention(root + "/retention.conf") {}

WriterInfo ReadWriterInfo(const DataFolderPaths& paths) {
  WriterInfo info;
  std::ifstream in(paths.writer_lock);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq);
    std::string value = line.substr(eq + 1);
    if (key == "pid") {
      (void)absl::SimpleAtoi(value, &info.pid);
    } else if (key == "command") {
      info.command = value;
    } else if (key == "since_ms") {
      (void)absl::SimpleAtoi(value, &info.since_ms);
    }
  }
  return info;
}

absl::StatusOr<std::unique_ptr<WriterLock>> WriterLock::Acquire(const DataFolderPaths& paths,
                                                               const std::string& command,
                                                               int64_t now_ms) {
  std::error_code ec;
  fs::create_directories(paths.root, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot create the data folder \"%s\": %s; pass --data with a folder you can write",
        paths.root, ec.message()));
  }
  int fd = ::open(paths.writer_lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot open \"%s\": %s; pass --data with a folder you can write", paths.writer_lock,
        std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return absl::InternalError(
          absl::StrFormat("cannot lock \"%s\": %s", paths.writer_lock, std::strerror(err)));
    }
    WriterInfo holder = ReadWriterInfo(paths);
    std::string who = holder.pid > 0
                          ? absl::StrFormat("process %d (%s)", holder.pid,
                                            holder.command.empty() ? "unknown command"
                                                                   : holder.command)
                          : std::string("another process");
    std::string since =
        holder.since_ms > 0 ? absl::StrFormat(" since %s", util::FormatIso8601Ms(holder.since_ms))
                            : std::string();
    return absl::FailedPreconditionError(absl::StrFormat(
        "the data folder \"%s\" is being written by %s%s; only one writer at a time: wait for "
        "it to finish, stop it, or pass another --data folder (read commands such as describe, "
        "logs and metrics work meanwhile)",
        paths.root, who, since));
  }
  std::string content = absl::StrFormat("pid=%d\ncommand=%s\nsince_ms=%d\n",
                                        static_cast<int64_t>(::getpid()), command, now_ms);
  if (::ftruncate(fd, 0) == 0) {
    ssize_t n = ::pwrite(fd, content.data(), content.size(), 0);
    (void)n;  // the lock, not the text, is what matters
  }
  return std::unique_ptr<WriterLock>(new WriterLock(fd));
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) {
    // Leave the file (others may have it open); the lock goes with the fd.
    if (::ftruncate(fd_, 0) != 0) {
      // Nothing to do: a stale text is harmless once the lock is released.
    }
    ::close(fd_);
  }
}

absl::StatusOr<std::string> MakeReaderScratch(const DataFolderPaths& paths) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  fs::create_directories(paths.readers, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot create \"%s\" (readers need a scratch folder there): %s", paths.readers,
        ec.message()));
  }
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string dir = absl::StrFormat("%s/%d-%d", paths.readers,
                                      static_cast<int64_t>(::getpid()), counter.fetch_add(1));
    if (fs::create_directory(dir, ec)) return dir;
  }
  return absl::InternalError(
      absl::StrFormat("cannot create a reader scratch folder under \"%s\"", paths.readers));
}

void RemoveStaleReaderScratch(const DataFolderPaths& paths) {
  std::error_code ec;
  if (!fs::exists(paths.readers, ec)) return;
  for (const auto& entry : fs::directory_iterator(paths.readers, ec)) {
    std::string name = entry.path().filename().string();
    size_t dash = name.find('-');
    int64_t pid = 0;
    if (dash == std::string::npos || !absl::SimpleAtoi(name.substr(0, dash), &pid) || pid <= 0) {
      continue;
    }
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // alive
    fs::remove_all(entry.path(), ec);
  }
}

std::string CurrentCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string raw = ss.str();
  std::string out;
  for (char c : raw) out.push_back(c == '\0' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  if (out.empty()) out = absl::StrFormat("pid %d", static_cast<int64_t>(::getpid()));
  return out;
}

}  // namespace trainwatch::store
