#pragma once
// FailureReason for a training process that failed (spec/aws-api.md §7.1):
// "AlgorithmError: " + how it ended + its last error lines, at most 1024 bytes.

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "capture/exit_status.h"
#include "model/log_event.h"

namespace trainwatch::job {

// OutputTail: the last non-blank lines of each stream, cleaned for display (ANSI
// escape sequences and control characters removed, invalid UTF-8 replaced by U+FFFD,
// each line cut to 1024 bytes). Memory is bounded: max_lines per stream.
// Not thread-safe (fed by the line thread, read after it is joined).
class OutputTail {
 public:
  explicit OutputTail(size_t max_lines = 20) : max_lines_(max_lines) {}
  void Add(model::OutputStream stream, std::string_view line);
  std::vector<std::string> Lines(model::OutputStream stream) const;

 private:
  size_t max_lines_;
  std::deque<std::string> lines_[2];
};

// Display form of one captured line (see OutputTail).
std::string CleanLine(std::string_view line);

// "AlgorithmError: the training command exited with code 1. Last lines of stderr:\n..."
// The last lines of stderr are used (of stdout when stderr had none); as many of the
// final ones as fit in 1024 bytes, the very last always (cut if it alone is too long).
std::string AlgorithmFailureReason(const capture::ExitStatus& status,
                                   const std::vector<std::string>& stderr_tail,
                                   const std::vector<std::string>& stdout_tail);

}  // namespace trainwatch::job
