#pragma once
// LocalFolderStore: a model::ObjectStore in a folder of the local file
// system (the archive on a disk or a mounted share; docs/archive.md). An
// object is a file at <folder>/<key>, written to a temporary file beside it,
// flushed (fsync) and renamed into place, so a reader or a crash never leaves
// part of one. Thread-safe.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/object_store.h"

namespace trainwatch::archive {

class LocalFolderStore final : public model::ObjectStore {
 public:
  // Creates the folder when missing; InvalidArgument when `folder` is a file,
  // PermissionDenied when it cannot be made or written.
  static absl::StatusOr<std::unique_ptr<LocalFolderStore>> Open(const std::string& folder);
  // For reading an archive back: the folder must exist (NotFound otherwise);
  // it is neither created nor checked for write access (a read-only mount).
  static absl::StatusOr<std::unique_ptr<LocalFolderStore>> OpenForReading(const std::string& folder);

  absl::Status Put(std::string_view key, std::string_view data) override;
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override;
  absl::StatusOr<std::vector<std::string>> List(std::string_view prefix) override;
  std::string Describe() const override { return folder_; }

 private:
  explicit LocalFolderStore(std::string folder) : folder_(std::move(folder)) {}
  const std::string folder_;
};

}  // namespace trainwatch::archive
