#include "archive/local_folder_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace trainwatch::archive {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(std::string_view what, const std::string& path) {
  const int e = errno;
  std::string message = absl::StrFormat("%s \"%s\": %s", what, path, std::strerror(e));
  if (e == EACCES || e == EPERM || e == EROFS) return absl::PermissionDeniedError(message);
  if (e == ENOSPC) return absl::ResourceExhaustedError(message + "; free some space");
  return absl::InternalError(message);
}

absl::Status SyncFolder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("opening the folder", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("flushing the folder", path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalFolderStore>> LocalFolderStore::Open(const std::string& folder) {
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the archive \"%s\" is a file, not a folder", folder));
  }
  fs::create_directories(folder, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrFormat("cannot create the archive folder \"%s\": %s", folder, ec.message()));
  }
  if (::access(folder.c_str(), W_OK) != 0) return Errno("cannot write to the archive folder", folder);
  return std::unique_ptr<LocalFolderStore>(new LocalFolderStore(folder));
}

absl::StatusOr<std::unique_ptr<LocalFolderStore>> LocalFolderStore::OpenForReading(
    const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return absl::NotFoundError(absl::StrFormat(
        "the archive folder \"%s\" does not exist (is it mounted?)", folder));
  }
  return std::unique_ptr<LocalFolderStore>(new LocalFolderStore(folder));
}

absl::Status LocalFolderStore::Put(std::string_view key, std::string_view data) {
  TW_RETURN_IF_ERROR(model::CheckObjectKey(key));
  const fs::path path = fs::path(folder_) / std::string(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot create the folder \"%s\": %s", path.parent_path().string(), ec.message()));
  }
  // A name no key can have ('+' is not allowed in keys): List never shows it.
  static std::atomic<int> counter{0};
  const std::string temp =
      absl::StrFormat("%s+%d-%d.tmp", path.string(), static_cast<int>(::getpid()), counter++);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("creating", temp);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = Errno("writing", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    absl::Status s = Errno("flushing", temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status s = Errno("renaming into place", path.string());
    ::unlink(temp.c_str());
    return s;
  }
  return SyncFolder(path.parent_path().string());
}

absl::StatusOr<std::optional<std::string>> LocalFolderStore::Get(std::string_view key) {
  TW_RETURN_IF_ERROR(model::CheckObjectKey(key));
  const std::string path = (fs::path(folder_) / std::string(key)).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    return Errno("reading", path);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<std::vector<std::string>> LocalFolderStore::List(std::string_view prefix) {
  std::vector<std::string> keys;
  std::error_code ec;
  // Only the folders the prefix can be under are walked.
  std::string_view folder_part = prefix.substr(0, prefix.rfind('/') == std::string_view::npos
                                                      ? 0
                                                      : prefix.rfind('/'));
  const fs::path start = fs::path(folder_) / std::string(folder_part);
  if (!fs::is_directory(start, ec)) return keys;
  for (fs::recursive_directory_iterator it(start, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string key = fs::relative(it->path(), folder_, ec).generic_string();
    if (ec || !key.starts_with(prefix) || !model::CheckObjectKey(key).ok()) continue;
    keys.push_back(std::move(key));
  }
  if (ec) {
    return absl::InternalError(
        absl::StrFormat("listing the archive folder \"%s\": %s", start.string(), ec.message()));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace trainwatch::archive
