#include "extract/literal_scanner.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "util/check.h"

namespace trainwatch::extract {
namespace {

constexpr size_t kMaxStride = 4;

uint32_t Load32(const unsigned char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

uint64_t Load64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

uint32_t Hash4(uint32_t w) { return ((w | 0x20202020u) * 0x9E3779B1u) >> 16; }
uint32_t Key2(const unsigned char* p) { return (uint32_t{p[0]} | 0x20u) << 8 | (p[1] | 0x20u); }

}  // namespace

void LiteralScanner::Build(const std::vector<std::pair<uint32_t, Entry>>& keyed, KeyedSet* set) {
  if (keyed.empty()) return;
  std::map<uint32_t, std::vector<Entry>> by_hash;
  for (const auto& [hash, entry] : keyed) by_hash[hash].push_back(entry);
  set->bits.assign(65536 / 64, 0);
  set->bucket_of.assign(65536, 0);
  for (const auto& [hash, entries] : by_hash) {
    set->bits[hash / 64] |= uint64_t{1} << (hash % 64);
    set->bucket_of[hash] = static_cast<uint32_t>(set->buckets.size());
    Bucket b;
    b.begin = static_cast<uint32_t>(set->entries.size());
    set->entries.insert(set->entries.end(), entries.begin(), entries.end());
    b.end = static_cast<uint32_t>(set->entries.size());
    set->buckets.push_back(b);
  }
}

LiteralScanner::LiteralScanner(const std::vector<std::string>& literals) {
  size_t min_long = SIZE_MAX;
  for (const std::string& lit : literals) {
    TW_CHECK(!lit.empty());
    std::string folded = lit;
    for (char& c : folded) c = static_cast<char>(c | 0x20);
    literals_.push_back(std::move(folded));
    if (lit.size() >= 4) min_long = std::min(min_long, lit.size());
  }
  if (min_long != SIZE_MAX) stride_ = std::clamp<size_t>(min_long - 3, 1, kMaxStride);

  std::vector<std::pair<uint32_t, Entry>> long_keys;
  std::vector<std::pair<uint32_t, Entry>> short_keys;
  std::map<uint32_t, std::vector<uint32_t>> by_byte;
  for (size_t i = 0; i < literals_.size(); ++i) {
    const std::string& lit = literals_[i];
    const unsigned char* p = reinterpret_cast<const unsigned char*>(lit.data());
    uint32_t id = static_cast<uint32_t>(i);
    if (lit.size() >= 4) {
      // A literal starting anywhere has exactly one of its first `stride_`
      // windows at a position the scan looks at.
      for (uint32_t o = 0; o < stride_; ++o) long_keys.push_back({Hash4(Load32(p + o)), {id, o}});
    } else if (lit.size() >= 2) {
      short_keys.push_back({Key2(p), {id, 0}});
    } else {
      by_byte[p[0]].push_back(id);
    }
  }
  Build(long_keys, &long_);
  Build(short_keys, &short_);
  if (!by_byte.empty()) {
    single_begin_.assign(257, 0);
    for (uint32_t c = 0; c < 256; ++c) {
      single_begin_[c] = static_cast<uint32_t>(single_ids_.size());
      auto it = by_byte.find(c);
      if (it != by_byte.end()) {
        single_ids_.insert(single_ids_.end(), it->second.begin(), it->second.end());
      }
    }
    single_begin_[256] = static_cast<uint32_t>(single_ids_.size());
  }
}

void LiteralScanner::Verify(const KeyedSet& set, uint32_t hash, const unsigned char* text, size_t n,
                            size_t at, uint64_t* found) const {
  const Bucket& b = set.buckets[set.bucket_of[hash]];
  for (uint32_t k = b.begin; k < b.end; ++k) {
    const Entry& e = set.entries[k];
    if (e.offset > at) continue;
    size_t start = at - e.offset;
    const std::string& lit = literals_[e.id];
    if (lit.size() > n - start) continue;
    const unsigned char* t = text + start;
    const unsigned char* l = reinterpret_cast<const unsigned char*>(lit.data());
    size_t j = 0;
    bool same = true;
    for (; same && j + 8 <= lit.size(); j += 8) {
      same = (Load64(t + j) | 0x2020202020202020ULL) == Load64(l + j);
    }
    for (; same && j < lit.size(); ++j) same = (t[j] | 0x20) == l[j];
    if (same) found[e.id / 64] |= uint64_t{1} << (e.id % 64);
  }
}

void LiteralScanner::Scan(std::string_view text, uint64_t* found) const {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  if (!long_.empty() && n >= 4) {
    const uint64_t* bits = long_.bits.data();
    const size_t stride = stride_;
    for (size_t i = 0; i + 4 <= n; i += stride) {
      uint32_t h = Hash4(Load32(p + i));
      if (__builtin_expect(((bits[h >> 6] >> (h & 63)) & 1) != 0, 0)) {
        Verify(long_, h, p, n, i, found);
      }
    }
  }
  if (!short_.empty() && n >= 2) {
    const uint64_t* bits = short_.bits.data();
    for (size_t i = 0; i + 2 <= n; ++i) {
      uint32_t k = Key2(p + i);
      if (__builtin_expect(((bits[k >> 6] >> (k & 63)) & 1) != 0, 0)) {
        Verify(short_, k, p, n, i, found);
      }
    }
  }
  if (!single_begin_.empty()) {
    for (size_t i = 0; i < n; ++i) {
      uint8_t c = p[i] | 0x20;
      for (uint32_t k = single_begin_[c]; k < single_begin_[c + 1]; ++k) {
        found[single_ids_[k] / 64] |= uint64_t{1} << (single_ids_[k] % 64);
      }
    }
  }
}

}  // namespace trainwatch::extract
