#pragma once
// ObjectStore: where the archive (archive/, docs/format/archive.md) keeps its
// objects, without knowing whether that is a local folder (archive/
// local_folder_store.h) or an S3-compatible service (agent/s3_store.h).
//
// Contract:
// - Put makes the whole object visible at once or not at all: a reader never
//   sees part of an object, and a Put that fails leaves no partial object
//   behind (an S3 multipart upload that fails is aborted). Put replaces an
//   object of the same key.
// - Keys are '/'-separated paths of letters, digits and "-_." (no empty,
//   "." or ".." part); InvalidArgument for any other.
// - Errors say what failed and what to do: Unauthenticated or
//   PermissionDenied when the service refused the credentials, NotFound for
//   a bucket or folder that does not exist, Unavailable when it could not be
//   reached or kept failing after retries.
// - Thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainwatch::model {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  virtual absl::Status Put(std::string_view key, std::string_view data) = 0;
  // nullopt when there is no such object.
  virtual absl::StatusOr<std::optional<std::string>> Get(std::string_view key) = 0;
  // Every key that starts with `prefix`, in byte order.
  virtual absl::StatusOr<std::vector<std::string>> List(std::string_view prefix) = 0;
  // Where the objects go, for messages ("s3://bucket/prefix", a folder path).
  virtual std::string Describe() const = 0;
};

// OK for a key the contract allows, else InvalidArgument saying why.
absl::Status CheckObjectKey(std::string_view key);

}  // namespace trainwatch::model
