#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include "util/mutex.h"

namespace trainwatch::util {
namespace {

LogLevel LevelFromEnv() {
  const char* env = std::getenv("TRAINWATCH_LOG");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

struct LogState {
  util::Mutex mu;
  std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  std::function<void(LogLevel, std::string_view)> sink ABSL_GUARDED_BY(mu);
  std::map<std::string, int64_t, std::less<>> once_counts ABSL_GUARDED_BY(mu);
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: usable from any destructor
  return *state;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug: ";
    case LogLevel::kInfo:
      return "";
    case LogLevel::kWarning:
      return "warning: ";
    case LogLevel::kError:
      return "error: ";
  }
  return "";
}

}  // namespace

void Log(LogLevel level, std::string_view message) {
  LogState& s = State();
  if (static_cast<int>(level) < s.level.load()) return;
  util::MutexLock lock(s.mu);
  if (s.sink) {
    s.sink(level, message);
    return;
  }
  std::string line = "trainwatch: ";
  line += LevelName(level);
  line.append(message.data(), message.size());
  line += '\n';
  // One write(2) per message so that lines from several threads never interleave.
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

void LogOnce(std::string_view key, std::string_view message) {
  LogState& s = State();
  bool first;
  {
    util::MutexLock lock(s.mu);
    auto it = s.once_counts.find(key);
    if (it == s.once_counts.end()) it = s.once_counts.emplace(std::string(key), 0).first;
    first = it->second++ == 0;
  }
  if (first) Log(LogLevel::kWarning, message);
}

int64_t LogOnceCount(std::string_view key) {
  LogState& s = State();
  util::MutexLock lock(s.mu);
  auto it = s.once_counts.find(key);
  return it == s.once_counts.end() ? 0 : it->second;
}

void SetLogLevel(LogLevel level) { State().level = static_cast<int>(level); }

void SetLogSinkForTest(std::function<void(LogLevel, std::string_view)> sink) {
  LogState& s = State();
  util::MutexLock lock(s.mu);
  s.sink = std::move(sink);
}

}  // namespace trainwatch::util
