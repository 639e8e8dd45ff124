#pragma once
// SimpleMatcher: an exact, faster matcher for the most common shape of metric
// regex, used instead of RE2 where it applies (RE2 needs three passes to
// report a capture group; this needs one memmem and one run over the value):
//
//   ^? HEAD ( CLASS+ ) TAIL (.* | .*?)? $?        (CLASS* too)
//
// HEAD and TAIL are literal text (escaped punctuation allowed, nothing
// quantified), CLASS is one of . \d \D \s \S \w \W or a bracket expression of
// ASCII characters, ranges and \d \s \w, possibly negated. TAIL must not begin
// with a character of CLASS, so the greedy run never has to give characters
// back. Examples: "val_accuracy: ([0-9.]+)", "#011train-rmse:(\S+)",
// "throughput: ([0-9.]+) samples/s", "([0-9.]+)it/s".
//
// Which bytes CLASS matches is asked of RE2 itself, byte by byte, so that
// \s, \w and '.' mean exactly what they mean to RE2. Matching follows RE2's
// leftmost-first rule and gives the same group 1 on well-formed UTF-8 text
// (the extractor replaces ill-formed bytes first); tests compare the two.
// Immutable after Compile; Match is thread-safe.

#include <memory>
#include <string>
#include <string_view>

namespace trainwatch::extract {

class SimpleMatcher {
 public:
  // nullptr when `pattern` (which compiles in RE2) has another shape.
  static std::unique_ptr<SimpleMatcher> Compile(std::string_view pattern);

  // Searches `text` (well-formed UTF-8); on a match stores group 1 and
  // returns true.
  bool Match(std::string_view text, std::string_view* group1) const;

 private:
  SimpleMatcher() = default;
  size_t RunEnd(const char* s, size_t n, size_t q) const;
  // First occurrence of head_ in s[from, n), or n.
  size_t FindHead(const char* s, size_t n, size_t from) const;
  bool TailMatches(const char* s, size_t n, size_t e) const;

  bool anchor_start_ = false;  // ^
  bool anchor_end_ = false;    // $ (without .* before it)
  bool star_ = false;          // CLASS* rather than CLASS+
  std::string head_;
  std::string tail_;
  bool in_class_[256] = {};
  // Horspool's shift per byte of the window's last position (head_ of 2+ bytes):
  // a precomputed table, where memmem would build one on every call.
  uint16_t shift_[256] = {};
};

}  // namespace trainwatch::extract
