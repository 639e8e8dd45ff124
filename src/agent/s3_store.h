#pragma once
// S3Store: a model::ObjectStore in an S3 bucket or an S3-compatible service
// (MinIO, Ceph RGW, s3rver), for the archive (docs/archive.md).
//
// - Requests are signed with SigV4 for "s3" (agent/signing.h: the
//   environment's AWS credentials and region), the payload's SHA-256 signed.
// - An object larger than `part_bytes` goes up as a multipart upload, parts
//   one after another; if a part or the completion still fails after the
//   retries, the upload is aborted, so no partial object is left (and a
//   reader never sees one: S3 shows an object only once it is complete).
// - Retries: a request that could not reach the service, or that it answered
//   with 5xx, 408 or 429, is sent again after 200 ms, doubling, `attempts`
//   times in all; then Unavailable. Refused credentials (403) give
//   PermissionDenied with S3's code and message and what to check; a bucket
//   that does not exist gives NotFound; nothing is retried for those.
// - Addressing: with an endpoint (an S3-compatible service), path style
//   (ENDPOINT/BUCKET/KEY); without one, AWS's virtual-hosted style
//   (https://BUCKET.s3.REGION.amazonaws.com/KEY).
// - Thread-safe: requests from several threads go at once, each on a
//   connection of its own (kept for the next request), so a reader is not
//   held up by an upload, nor by another request's retries.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/remote_sink.h"
#include "model/object_store.h"
#include "util/mutex.h"

namespace trainwatch::agent {

struct S3StoreOptions {
  std::string bucket;
  std::string prefix;    // keys go under it ("" or "a/b", no '/' at either end)
  std::string endpoint;  // "http://127.0.0.1:4568"; empty: AWS S3 in the signing region
  int64_t part_bytes = 16LL << 20;  // at least 5 MiB, as S3 wants of every part but the last
  int attempts = 5;
  int64_t first_backoff_ms = 200;
  int64_t connect_timeout_ms = 5000;
  int64_t request_timeout_ms = 300000;
};

// "s3://BUCKET[/PREFIX]" -> bucket and prefix; InvalidArgument saying what is
// wrong otherwise.
absl::Status ParseS3Url(std::string_view url, S3StoreOptions* options);

class S3Store final : public model::ObjectStore {
 public:
  // InvalidArgument for options S3 cannot take (a bad bucket name, parts
  // under 5 MiB). Sends nothing.
  static absl::StatusOr<std::unique_ptr<S3Store>> Create(S3StoreOptions options);

  absl::Status Put(std::string_view key, std::string_view data) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<std::string>> List(std::string_view prefix) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::string Describe() const override;

  // Requests sent, parts uploaded, retries, aborted uploads (for tests and
  // logs).
  struct Counts {
    int64_t requests = 0;
    int64_t retries = 0;
    int64_t parts = 0;
    int64_t aborted_uploads = 0;
  };
  Counts counts() const;

 private:
  explicit S3Store(S3StoreOptions options) : options_(std::move(options)) {}
  // The key under the prefix.
  std::string FullKey(std::string_view key) const;
  // The object's URL (the bucket's for an empty key), with `query`.
  std::string Url(std::string_view full_key, std::string_view query) const;
  // One signed request with the retries; the last answer (status 0:
  // unreachable).
  HttpResult Send(const std::string& method, const std::string& url, std::string_view body)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status PutMultipart(std::string_view key, std::string_view data) ABSL_LOCKS_EXCLUDED(mu_);
  void Count(int64_t Counts::*counter) ABSL_LOCKS_EXCLUDED(mu_);

  const S3StoreOptions options_;
  mutable util::Mutex mu_;
  // Connections not in use; a request takes one (or makes one) and puts it
  // back.
  std::vector<std::unique_ptr<HttpClient>> idle_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainwatch::agent
