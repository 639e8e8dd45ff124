#pragma once
// Log vocabulary: a line as captured from a process, and log events as stored
// (the CloudWatch Logs analogue: group -> stream -> events).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::model {

// Where a captured line came from.
enum class OutputStream { kStdout = 1, kStderr = 2 };

// One line as read from a process, terminator removed. `text` is the raw bytes
// (may hold invalid UTF-8, NUL, ESC); it is valid only during the callback
// that receives it.
struct LogLine {
  int64_t t_ms;
  OutputStream stream;
  std::string_view text;
};

// CloudWatch Logs counts an event as its message plus this many bytes, in
// every size limit (an event, a PutLogEvents batch, a page of events).
inline constexpr size_t kLogEventOverheadBytes = 26;
// CloudWatch Logs' limit on one event's message (spec/aws-api.md §6);
// longer lines are stored as several events.
inline constexpr size_t kMaxLogEventBytes = 256 * 1024 - kLogEventOverheadBytes;

struct LogStreamId {
  std::string group;
  std::string stream;
  friend bool operator==(const LogStreamId&, const LogStreamId&) = default;
  friend auto operator<=>(const LogStreamId&, const LogStreamId&) = default;
};

struct LogEvent {
  int64_t t_ms;
  std::string message;
  friend bool operator==(const LogEvent&, const LogEvent&) = default;
};

struct LogBatch {
  LogStreamId stream;
  std::vector<LogEvent> events;
};

// SageMaker's names (spec/aws-api.md §5.2).
inline constexpr std::string_view kTrainingJobsLogGroup = "/aws/sagemaker/TrainingJobs";
inline constexpr std::string_view kTrainingJobsNamespace = "/aws/sagemaker/TrainingJobs";

}  // namespace trainwatch::model
