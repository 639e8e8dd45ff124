#pragma once
// Diagnostics for humans, on stderr, prefixed "trainwatch: ". Training output
// passes through untouched; these lines are trainwatch's own.
//
//   util::LogWarning(absl::StrFormat("cannot read %s: %s", path, err));
//   util::LogOnce("nvml-missing", "NVML not found; GPU metrics off");  // logged once per process
//
// Degraded modes use LogOnce with a stable key; LogOnceCount(key) tells how
// many times the condition occurred (tests and self-metrics read it).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace trainwatch::util {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view message) { Log(LogLevel::kInfo, message); }
inline void LogWarning(std::string_view message) { Log(LogLevel::kWarning, message); }
inline void LogError(std::string_view message) { Log(LogLevel::kError, message); }

// Logs `message` at warning level the first time `key` is seen; every call
// (the first included) increments the key's count.
void LogOnce(std::string_view key, std::string_view message);
int64_t LogOnceCount(std::string_view key);

// Messages below `level` are dropped (default kInfo; TRAINWATCH_LOG=debug|info|warning|error).
void SetLogLevel(LogLevel level);

// Replaces the output (default: stderr). Tests capture messages with it;
// pass nullptr to restore stderr.
void SetLogSinkForTest(std::function<void(LogLevel, std::string_view)> sink);

}  // namespace trainwatch::util
