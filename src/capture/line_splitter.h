#pragma once
// LineSplitter: bytes in, lines out, following spec/extraction.md "Lines":
// a line ends at "\n", at "\r", or at "\r\n" (one terminator, not two); the
// terminator is not part of the line; a last segment without a terminator is
// still a line (emitted by Finish). A "\r" is acted on at once (a progress bar
// redraw is a line as soon as it is drawn); a "\n" that arrives right after it,
// even in the next Feed, is swallowed.
//
// Memory: holds only the unfinished tail, so it is bounded by the longest line.
// Not thread-safe; one splitter per byte stream.

#include <cstring>
#include <string>
#include <string_view>

namespace trainwatch::capture {

class LineSplitter {
 public:
  // Calls on_line(std::string_view line) for every line completed by `data`.
  // The view is valid only during the call.
  template <typename OnLine>
  void Feed(std::string_view data, OnLine&& on_line) {
    const char* p = data.data();
    const char* end = p + data.size();
    if (p == end) return;
    if (after_cr_) {
      after_cr_ = false;
      if (*p == '\n') ++p;
    }
    while (p < end) {
      const char* term = FindTerminator(p, end);
      if (term == end) {
        partial_.append(p, static_cast<size_t>(end - p));
        return;
      }
      if (partial_.empty()) {
        on_line(std::string_view(p, static_cast<size_t>(term - p)));
      } else {
        partial_.append(p, static_cast<size_t>(term - p));
        on_line(std::string_view(partial_));
        partial_.clear();
      }
      ++lines_;
      p = term + 1;
      if (*term == '\r') {
        if (p == end) {
          after_cr_ = true;
        } else if (*p == '\n') {
          ++p;
        }
      }
    }
  }

  // End of stream: emits the unterminated last segment, if any.
  template <typename OnLine>
  void Finish(OnLine&& on_line) {
    if (!partial_.empty()) {
      on_line(std::string_view(partial_));
      partial_.clear();
      ++lines_;
    }
    after_cr_ = false;
  }

  // Bytes of the unfinished line held now.
  size_t pending_bytes() const { return partial_.size(); }
  // Lines emitted so far.
  size_t lines() const { return lines_; }

 private:
  static const char* FindTerminator(const char* p, const char* end) {
    // memchr for '\n' is vectorised; '\r' is rarer, so look for it only up to
    // the next '\n'.
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    const char* limit = nl != nullptr ? static_cast<const char*>(nl) : end;
    const void* cr = std::memchr(p, '\r', static_cast<size_t>(limit - p));
    return cr != nullptr ? static_cast<const char*>(cr) : limit;
  }

  std::string partial_;
  bool after_cr_ = false;
  size_t lines_ = 0;
};

}  // namespace trainwatch::capture
