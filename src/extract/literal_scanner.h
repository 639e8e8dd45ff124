#pragma once
// LiteralScanner: which of a fixed set of byte strings occur in a text, as a
// prefilter: it may report a literal that is not there (which only costs a
// regex search) but never misses one that is. Bytes compare with bit 0x20
// set on both sides, so ASCII letters compare case-insensitively (RE2's
// prefilter atoms are lower-cased) and a few other pairs ('@' and '`', ...)
// compare equal too.
//
// How: the next four bytes at a position are hashed into a 64 Ki-bit set of
// the literals' four-byte windows; only on a hit are the literals in that
// hash bucket compared. The positions do not depend on each other, so the
// loop runs at a cycle or two per position, several times faster than an
// automaton whose every step waits for the one before. When every literal is
// at least S + 3 bytes long, only every S-th position is looked at (S <= 4),
// each literal being indexed under its first S windows (Wu and Manber's
// idea). Literals of two or three bytes are found the same way with a
// two-byte key at every position, literals of one byte with a byte table.
//
// Immutable after construction; Scan is thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::extract {

class LiteralScanner {
 public:
  // `literals` must be non-empty strings. Duplicates are fine.
  explicit LiteralScanner(const std::vector<std::string>& literals);

  // Sets bit i (word i / 64, bit i % 64) of `found` for every literal i that
  // occurs in `text` (see above); leaves other bits as they are. `found` has
  // words() words.
  void Scan(std::string_view text, uint64_t* found) const;

  size_t literal_count() const { return literals_.size(); }
  size_t words() const { return (literals_.size() + 63) / 64; }
  // Positions skipped between two looked at, plus one (benchmarks, tests).
  size_t stride() const { return stride_; }

 private:
  // A literal indexed under the window `offset` bytes from its start.
  struct Entry {
    uint32_t id;
    uint32_t offset;
  };
  // Entries whose key hashes to one value: entries[begin .. end).
  struct Bucket {
    uint32_t begin = 0;
    uint32_t end = 0;
  };
  // A set of literals found through a hashed key of some of their bytes.
  struct KeyedSet {
    std::vector<uint64_t> bits;       // 65536 bits, by hash
    std::vector<uint32_t> bucket_of;  // hash -> index into buckets
    std::vector<Bucket> buckets;
    std::vector<Entry> entries;
    bool empty() const { return buckets.empty(); }
  };

  static void Build(const std::vector<std::pair<uint32_t, Entry>>& keyed, KeyedSet* set);
  void Verify(const KeyedSet& set, uint32_t hash, const unsigned char* text, size_t n, size_t at,
              uint64_t* found) const;

  std::vector<std::string> literals_;  // each byte with 0x20 set
  size_t stride_ = 1;
  KeyedSet long_;   // literals of 4+ bytes, keyed by four-byte windows
  KeyedSet short_;  // literals of 2-3 bytes, keyed by their first two
  // Literals of one byte b: single_ids_[single_begin_[b] .. single_begin_[b + 1]).
  std::vector<uint32_t> single_begin_;  // 257 entries, or none
  std::vector<uint32_t> single_ids_;
};

}  // namespace trainwatch::extract
