#include "extract/literal_scanner.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "util/check.h"

namespace trainwatch::extract {
namespace {

uint32_t Load32(const unsigned char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Setting bit 0x20 maps 'A'..'Z' onto 'a'..'z' (and a few other bytes onto
// each other, which only adds a rare false hit that the comparison removes).
uint32_t Hash4(uint32_t w) { return ((w | 0x20202020u) * 0x9E3779B1u) >> 16; }
uint32_t Key2(const unsigned char* p) { return (uint32_t{p[0]} | 0x20u) << 8 | (p[1] | 0x20u); }

}  // namespace

void LiteralScanner::Build(const std::vector<std::pair<uint32_t, uint32_t>>& hash_and_id,
                           KeyedSet* set) {
  if (hash_and_id.empty()) return;
  std::map<uint32_t, std::vector<uint32_t>> by_hash;
  for (auto [hash, id] : hash_and_id) by_hash[hash].push_back(id);
  set->bits.assign(65536 / 64, 0);
  set->bucket_of.assign(65536, 0);
  for (const auto& [hash, ids] : by_hash) {
    set->bits[hash / 64] |= uint64_t{1} << (hash % 64);
    set->bucket_of[hash] = static_cast<uint32_t>(set->buckets.size());
    Bucket b;
    b.begin = static_cast<uint32_t>(set->ids.size());
    set->ids.insert(set->ids.end(), ids.begin(), ids.end());
    b.end = static_cast<uint32_t>(set->ids.size());
    set->buckets.push_back(b);
  }
}

LiteralScanner::LiteralScanner(const std::vector<std::string>& literals) {
  for (int c = 0; c < 256; ++c) {
    fold_[c] = static_cast<uint8_t>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  }
  std::vector<std::pair<uint32_t, uint32_t>> long_keys;
  std::vector<std::pair<uint32_t, uint32_t>> short_keys;
  std::map<uint32_t, std::vector<uint32_t>> by_byte;
  for (size_t i = 0; i < literals.size(); ++i) {
    TW_CHECK(!literals[i].empty());
    std::string folded = literals[i];
    for (char& c : folded) c = static_cast<char>(fold_[static_cast<unsigned char>(c)]);
    const unsigned char* p = reinterpret_cast<const unsigned char*>(folded.data());
    uint32_t id = static_cast<uint32_t>(i);
    if (folded.size() >= 4) {
      long_keys.emplace_back(Hash4(Load32(p)), id);
    } else if (folded.size() >= 2) {
      short_keys.emplace_back(Key2(p), id);
    } else {
      by_byte[p[0]].push_back(id);
    }
    literals_.push_back(std::move(folded));
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

void LiteralScanner::Verify(const KeyedSet& set, uint32_t hash, const unsigned char* p, size_t left,
                            uint64_t* found) const {
  const Bucket& b = set.buckets[set.bucket_of[hash]];
  for (uint32_t k = b.begin; k < b.end; ++k) {
    uint32_t id = set.ids[k];
    const std::string& lit = literals_[id];
    if (lit.size() > left) continue;
    size_t j = 0;
    while (j < lit.size() && fold_[p[j]] == static_cast<unsigned char>(lit[j])) ++j;
    if (j == lit.size()) found[id / 64] |= uint64_t{1} << (id % 64);
  }
}

void LiteralScanner::Scan(std::string_view text, uint64_t* found) const {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  if (!long_.empty() && n >= 4) {
    const uint64_t* bits = long_.bits.data();
    for (size_t i = 0; i + 4 <= n; ++i) {
      uint32_t h = Hash4(Load32(p + i));
      if (__builtin_expect(((bits[h >> 6] >> (h & 63)) & 1) != 0, 0)) {
        Verify(long_, h, p + i, n - i, found);
      }
    }
  }
  if (!short_.empty() && n >= 2) {
    const uint64_t* bits = short_.bits.data();
    for (size_t i = 0; i + 2 <= n; ++i) {
      uint32_t k = Key2(p + i);
      if (__builtin_expect(((bits[k >> 6] >> (k & 63)) & 1) != 0, 0)) {
        Verify(short_, k, p + i, n - i, found);
      }
    }
  }
  if (!single_begin_.empty()) {
    for (size_t i = 0; i < n; ++i) {
      uint8_t c = fold_[p[i]];
      for (uint32_t k = single_begin_[c]; k < single_begin_[c + 1]; ++k) {
        found[single_ids_[k] / 64] |= uint64_t{1} << (single_ids_[k] % 64);
      }
    }
  }
}

}  // namespace trainwatch::extract
