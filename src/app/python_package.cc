#include "app/python_package.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace trainwatch::app {

absl::StatusOr<std::string> WritePythonPackage(const std::string& data_dir) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(data_dir) / "python";
  const fs::path target = root / std::string(PythonPackageHash());
  std::error_code ec;
  if (fs::is_directory(target, ec)) return target.string();
  const fs::path temporary =
      root / absl::StrFormat(".%s.%d.tmp", PythonPackageHash(), static_cast<int>(::getpid()));
  auto fail = [&](const std::string& what, const fs::path& path, const std::error_code& cause) {
    fs::remove_all(temporary, ec);
    return absl::InternalError(absl::StrFormat("cannot write the Python client to %s: %s: %s",
                                               target.string(), what + " " + path.string(),
                                               cause.message()));
  };
  for (const PackageFile& file : PythonPackageFiles()) {
    const fs::path path = temporary / std::string(file.path);
    std::error_code mkdir_error;
    fs::create_directories(path.parent_path(), mkdir_error);
    if (mkdir_error) return fail("creating", path.parent_path(), mkdir_error);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(file.bytes().data(), static_cast<std::streamsize>(file.size));
    out.close();
    if (!out) return fail("writing", path, std::make_error_code(std::errc::io_error));
  }
  std::error_code rename_error;
  fs::rename(temporary, target, rename_error);
  if (rename_error) {
    // Another run put it there first: theirs is the same package.
    if (fs::is_directory(target, ec)) {
      fs::remove_all(temporary, ec);
      return target.string();
    }
    return fail("renaming", temporary, rename_error);
  }
  return target.string();
}

std::string PythonPathWith(const std::string& dir) {
  const char* existing = std::getenv("PYTHONPATH");
  return existing != nullptr && *existing != '\0' ? dir + ":" + existing : dir;
}

}  // namespace trainwatch::app
