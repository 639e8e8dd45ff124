#pragma once
// The Python client (python/trainwatch, docs/python.md), built into the binary
// by cmake/embed_python.cmake, so that a training script run by `trainwatch
// run` can `import trainwatch` without installing anything: the run writes
// the package into the data folder once per version and puts that folder on
// the process's PYTHONPATH.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::app {

struct PackageFile {
  std::string_view path;  // relative to the package's parent, e.g. "trainwatch/__init__.py"
  const unsigned char* data;
  size_t size;

  std::string_view bytes() const { return {reinterpret_cast<const char*>(data), size}; }
};

// Every file of the package, ordered by path.
std::span<const PackageFile> PythonPackageFiles();
// A hash of every file's path and content.
std::string_view PythonPackageHash();

// Writes the package to <data_dir>/python/<hash>/ unless it is there already
// (another run may be writing it at the same time: each writes its own
// temporary folder and renames it into place) and returns that folder, the
// one to put on PYTHONPATH. Errors name the folder and the cause.
absl::StatusOr<std::string> WritePythonPackage(const std::string& data_dir);

// PYTHONPATH for a training process: `dir` first, then this process's
// $PYTHONPATH, if any.
std::string PythonPathWith(const std::string& dir);

}  // namespace trainwatch::app
