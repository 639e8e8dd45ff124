#pragma once
// LiteralScanner: which of a fixed set of byte strings occur in a text. ASCII
// letters compare case-insensitively, because RE2's prefilter atoms are
// lower-cased; finding more than is there only costs a regex search, finding
// less would lose datapoints, so the scanner errs one way only.
//
// How: at every position the next four bytes, with bit 0x20 set in each (a
// cheap superset of ASCII case folding), are hashed into a 64 Ki-bit set of
// the literals' first four bytes; only on a hit are the literals in that
// hash bucket compared. The per-position work does not depend on the previous
// position, so the loop runs at one or two cycles a byte, several times faster
// than an automaton whose every step waits for the one before, and it stops
// only where a literal (almost always) starts. Literals of two or three bytes
// get the same treatment with a two-byte key, literals of one byte a table.
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
  // occurs in `text`; leaves other bits as they are. `found` has words() words.
  void Scan(std::string_view text, uint64_t* found) const;

  size_t literal_count() const { return literals_.size(); }
  size_t words() const { return (literals_.size() + 63) / 64; }

 private:
  // Literals whose key hashes to one value: ids_[begin .. end).
  struct Bucket {
    uint32_t begin = 0;
    uint32_t end = 0;
  };
  // A set of literals found through a hashed key of their first bytes.
  struct KeyedSet {
    std::vector<uint64_t> bits;       // 65536 bits, by hash
    std::vector<uint32_t> bucket_of;  // hash -> index into buckets
    std::vector<Bucket> buckets;
    std::vector<uint32_t> ids;
    bool empty() const { return buckets.empty(); }
  };

  void Verify(const KeyedSet& set, uint32_t hash, const unsigned char* p, size_t left,
              uint64_t* found) const;
  static void Build(const std::vector<std::pair<uint32_t, uint32_t>>& hash_and_id, KeyedSet* set);

  std::vector<std::string> literals_;  // folded to lower case
  uint8_t fold_[256];
  KeyedSet long_;   // literals of 4+ bytes, keyed by their first four
  KeyedSet short_;  // literals of 2-3 bytes, keyed by their first two
  // Literals of one byte b: single_ids_[single_begin_[b] .. single_begin_[b + 1]).
  std::vector<uint32_t> single_begin_;  // 257 entries, or none
  std::vector<uint32_t> single_ids_;
};

}  // namespace trainwatch::extract
