#include "store/data_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "util/status_macros.h"
#include "util/time_parse.h"

namespace trainwatch::store {
namespace fs = std::filesystem;

DataFolderPaths::DataFolderPaths(std::string root_dir)
    : root(std::move(root_dir)),
      format(root + "/format"),
      db(root + "/db"),
      writer_lock(root + "/writer.lock"),
      readers(root + "/readers"),
      retention(root + "/retention.conf") {}

namespace {

constexpr char kFormatPrefix[] = "trainwatch-data-format ";

}  // namespace

absl::StatusOr<std::optional<int>> ReadDataFormat(const DataFolderPaths& paths) {
  int fd = ::open(paths.format.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ENOTDIR) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "\"%s\" is a file, not a data folder: give --data the folder a job wrote (or a new "
          "folder's path)",
          paths.root));
    }
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot read \"%s\" (the data folder's format): %s", paths.format, std::strerror(errno)));
  }
  std::string text(256, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot read \"%s\" (the data folder's format): %s", paths.format, std::strerror(err)));
  }
  text.resize(static_cast<size_t>(n));
  std::string line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::string prefix = kFormatPrefix;
  const std::string digits = line.size() > prefix.size() ? line.substr(prefix.size()) : "";
  int version = 0;
  const bool ok = line.compare(0, prefix.size(), prefix) == 0 && !digits.empty() &&
                  digits.size() <= 9 &&
                  std::all_of(digits.begin(), digits.end(),
                              [](char c) { return c >= '0' && c <= '9'; }) &&
                  absl::SimpleAtoi(digits, &version);
  if (!ok) {
    return absl::DataLossError(absl::StrFormat(
        "the data folder \"%s\" has a damaged format file \"%s\": its first line is \"%s\", "
        "not \"%s<number>\"; if this build of trainwatch wrote the folder, make that line "
        "\"%s%d\"",
        paths.root, paths.format, absl::CHexEscape(line.substr(0, 100)), kFormatPrefix,
        kFormatPrefix, kDataFormatVersion));
  }
  return version;
}

absl::StatusOr<std::optional<int>> CheckDataFormat(const DataFolderPaths& paths) {
  TW_ASSIGN_OR_RETURN(std::optional<int> version, ReadDataFormat(paths));
  if (!version || (*version >= kOldestDataFormatVersion && *version <= kDataFormatVersion)) {
    return version;
  }
  static_assert(kDataFormatVersion == kOldestDataFormatVersion + 1,
                "say which formats this build reads in the message below");
  return absl::FailedPreconditionError(absl::StrFormat(
      "the data folder \"%s\" is in trainwatch data format %d (%s), and this build of "
      "trainwatch reads data formats %d and %d only; open it with a trainwatch build that reads "
      "data format %d, or pass another --data folder (this one was left as it is)",
      paths.root, *version,
      *version > kDataFormatVersion ? "written by a newer trainwatch"
                                    : "written by an older trainwatch",
      kOldestDataFormatVersion, kDataFormatVersion, *version));
}

absl::Status WriteDataFormat(const DataFolderPaths& paths) {
  const std::string tmp = paths.format + ".tmp";
  const std::string text = absl::StrFormat("%s%d\n", kFormatPrefix, kDataFormatVersion);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("cannot write \"%s\": %s", tmp, std::strerror(errno)));
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  ::close(fd);
  if (!ok) {
    return absl::InternalError(
        absl::StrFormat("cannot write \"%s\": %s", tmp, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), paths.format.c_str()) != 0) {
    return absl::InternalError(absl::StrFormat("cannot rename \"%s\" to \"%s\": %s", tmp,
                                               paths.format, std::strerror(errno)));
  }
  // The rename itself, durably: the file is written before RocksDB creates
  // db/, and must not be lost once db/ exists (best effort: some file systems
  // cannot sync a folder).
  int dir = ::open(paths.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

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
