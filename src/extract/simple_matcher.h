#pragma once
// SimpleMatcher: an exact, faster matcher for the common shapes of metric
// regex, used instead of RE2 where it applies (RE2 needs three passes over a
// line to report a capture group; this needs one search for the leading
// literal and one pass over what follows). A pattern qualifies when it is
//
//   ^? ITEM+ (.* | .*?)? $?
//
// where each ITEM is literal text (escaped punctuation allowed, nothing
// quantified), or a run CLASS+ or CLASS*, and exactly one run is a capture
// group "(CLASS+)" or "(CLASS*)". CLASS is one of . \d \D \s \S \w \W or a
// bracket expression of ASCII characters, ranges and \d \s \w, possibly
// negated. Whatever may follow a run must not begin with a character of its
// class, so a greedy run never has to give characters back and a match is
// found without backtracking. Examples: "val_accuracy: ([0-9.]+)",
// "#011train-rmse:(\S+)", "throughput: ([0-9.]+) samples/s",
// "([0-9.]+)it/s", "step [0-9]+ loss: ([0-9.]+)".
//
// Which bytes a CLASS matches is asked of RE2 itself, byte by byte, so that
// \s, \w and '.' mean exactly what they mean to RE2. Matching follows RE2's
// leftmost-first rule and gives the same group 1 on well-formed UTF-8 text
// (the extractor replaces ill-formed bytes first); tests and a fuzz target
// compare the two. Work is bounded by a budget linear in the text; a search
// that would exceed it reports kGaveUp and the caller asks RE2.
// Immutable after Compile; Match is thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::extract {

class SimpleMatcher {
 public:
  enum class Result { kNoMatch, kMatch, kGaveUp };

  // nullptr when `pattern` (which compiles in RE2) has another shape.
  static std::unique_ptr<SimpleMatcher> Compile(std::string_view pattern);

  // Searches `text` (well-formed UTF-8); on kMatch stores group 1.
  Result Match(std::string_view text, std::string_view* group1) const;

 private:
  struct Item {
    bool is_run = false;
    bool star = false;    // CLASS* rather than CLASS+
    int cls = -1;         // runs: index into classes_
    std::string literal;  // literals
  };
  struct ByteSet {
    bool has[256] = {};
  };

  SimpleMatcher() = default;
  size_t RunEnd(const char* s, size_t n, size_t q, const ByteSet& set, size_t* work) const;
  size_t FindHead(const char* s, size_t n, size_t from, size_t* work) const;
  // Matches items_[first..] at `pos`; on success sets *group (when the
  // capture is among them) and returns true.
  bool MatchRest(const char* s, size_t n, size_t first, size_t pos, std::string_view text,
                 std::string_view* group, size_t* work) const;

  bool anchor_start_ = false;  // ^
  bool anchor_end_ = false;    // $ (without .* before it)
  std::vector<Item> items_;
  size_t capture_ = 0;  // index of the captured run in items_
  std::vector<ByteSet> classes_;
  // Horspool's shift per byte for a leading literal of 2+ bytes: a
  // precomputed table, where memmem would build one on every call.
  uint16_t shift_[256] = {};
};

}  // namespace trainwatch::extract
