#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "model/series.h"

namespace trainwatch::api {

// Series keys by their identity as a body gives it (the native samples
// format: namespace, metric, unit and the dimensions in the body's order;
// remote write: the labels' bytes as sent). Senders send the same series in
// every batch, and building a key (copies, sorting, checks, the canonical
// form) was most of what decoding one series of one sample cost.
//
// Two generations per thread: when the newer one is full (entries or bytes)
// it becomes the older, whose keys move back when used again, and the
// oldest are forgotten. Keys of long identities (agents' are 100-200 bytes)
// are not kept. So a thread keeps at most 2 x 4,096 keys and about 2 x 2 MiB.
class SeriesKeyCache {
 public:
  struct Entry {
    model::SeriesKey key;
    std::string canonical;
  };
  static constexpr size_t kMaxEntries = 4096;         // per generation
  static constexpr size_t kMaxBytes = size_t{2} << 20;  // per generation
  static constexpr size_t kMaxIdentityBytes = 1024;

  // The identity bytes: each part length-prefixed, so that no two identities
  // share them.
  static void AppendPart(std::string* identity, std::string_view part) {
    const uint32_t n = static_cast<uint32_t>(part.size());
    identity->append(reinterpret_cast<const char*>(&n), sizeof(n));
    identity->append(part);
  }
  // The kept entry of `identity`, or null.
  const Entry* Find(const std::string& identity) {
    if (auto it = newer_.find(identity); it != newer_.end()) return &it->second;
    auto it = older_.find(identity);
    if (it == older_.end()) return nullptr;
    Entry moved = std::move(it->second);
    older_.erase(it);
    return Keep(identity, std::move(moved));
  }
  // Keeps `entry` for `identity`, unless the identity is too long to keep.
  void Insert(const std::string& identity, Entry entry) {
    if (identity.size() <= kMaxIdentityBytes) Keep(identity, std::move(entry));
  }
  size_t size() const { return newer_.size() + older_.size(); }

 private:
  const Entry* Keep(const std::string& identity, Entry entry) {
    if (newer_.size() >= kMaxEntries || newer_bytes_ >= kMaxBytes) {
      older_ = std::move(newer_);
      newer_ = {};
      newer_bytes_ = 0;
    }
    // The identity, the key's parts and the canonical form are about the
    // same length; plus the strings' and the map's own overhead.
    newer_bytes_ += 3 * identity.size() + 256;
    return &newer_.insert_or_assign(identity, std::move(entry)).first->second;
  }

  absl::flat_hash_map<std::string, Entry> newer_, older_;
  size_t newer_bytes_ = 0;
};

}  // namespace trainwatch::api
