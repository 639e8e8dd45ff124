#include "job/failure_reason.h"

#include <signal.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "job/lifecycle.h"

namespace trainwatch::job {
namespace {

constexpr size_t kMaxLineBytes = 1024;
constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Length of the valid UTF-8 sequence at s[i], or 0 if it is not valid.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and code points above U+10FFFF.
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;
  return n;
}

std::string SignalHint(int sig) {
  switch (sig) {
    case SIGKILL:
      return " (SIGKILL also comes from the kernel's out-of-memory killer)";
    case SIGSEGV:
      return " (a segmentation fault: a crash in native code)";
    case SIGABRT:
      return " (the program aborted)";
    case SIGBUS:
      return " (a bus error: often a memory-mapped file that was truncated)";
    default:
      return "";
  }
}

}  // namespace

std::string CleanLine(std::string_view line) {
  std::string out;
  out.reserve(std::min(line.size(), kMaxLineBytes));
  for (size_t i = 0; i < line.size() && out.size() < kMaxLineBytes;) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == 0x1B) {  // ESC: skip a CSI sequence "ESC [ params final" or one char
      ++i;
      if (i < line.size() && line[i] == '[') {
        ++i;
        while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7E)) ++i;
        if (i < line.size()) ++i;
      } else if (i < line.size()) {
        ++i;
      }
      continue;
    }
    if (c == '\t') {
      out += ' ';
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7F) {
      ++i;
      continue;
    }
    size_t n = Utf8Length(line, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(line.substr(i, n));
      i += n;
    }
  }
  return TruncateUtf8(out, kMaxLineBytes);
}

void OutputTail::Add(model::OutputStream stream, std::string_view line) {
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  auto& lines = lines_[stream == model::OutputStream::kStdout ? 0 : 1];
  std::string clean = CleanLine(line);
  if (clean.find_first_not_of(' ') == std::string::npos) return;
  lines.push_back(std::move(clean));
  if (lines.size() > max_lines_) lines.pop_front();
}

std::vector<std::string> OutputTail::Lines(model::OutputStream stream) const {
  const auto& lines = lines_[stream == model::OutputStream::kStdout ? 0 : 1];
  return {lines.begin(), lines.end()};
}

std::string AlgorithmFailureReason(const capture::ExitStatus& status,
                                   const std::vector<std::string>& stderr_tail,
                                   const std::vector<std::string>& stdout_tail) {
  std::string reason = "AlgorithmError: the training command " + status.Describe();
  if (status.signal) reason += SignalHint(*status.signal);
  const bool use_stderr = !stderr_tail.empty();
  const std::vector<std::string>& tail = use_stderr ? stderr_tail : stdout_tail;
  if (tail.empty()) return TruncateUtf8(reason + ".", kMaxFailureReasonBytes);
  reason += use_stderr ? ". Last lines of stderr:" : ". Last lines of output:";
  // Take lines from the end while they fit; the last line always goes in.
  size_t budget = kMaxFailureReasonBytes - std::min(reason.size(), kMaxFailureReasonBytes);
  std::vector<std::string> picked;
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    size_t need = it->size() + 1;  // "\n" before each line
    if (need > budget) {
      if (picked.empty() && budget > 1) picked.push_back(TruncateUtf8(*it, budget - 1));
      break;
    }
    picked.push_back(*it);
    budget -= need;
  }
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) reason += "\n" + *it;
  return reason;
}

}  // namespace trainwatch::job
