#include "job/lifecycle.h"

#include <algorithm>

namespace trainwatch::job {

void BeginJob(model::JobRecord* job, int64_t now_ms) {
  job->status = model::JobStatus::kInProgress;
  job->secondary_status = model::SecondaryStatus::kStarting;
  job->creation_ms = now_ms;
  job->last_modified_ms = now_ms;
  job->transitions = {{model::SecondaryStatus::kStarting, now_ms, std::nullopt,
                       std::string(kMessageStarting)}};
}

void EnterStatus(model::JobRecord* job, model::JobStatus status, model::SecondaryStatus secondary,
                 std::string_view message, int64_t now_ms) {
  if (!job->transitions.empty()) now_ms = std::max(now_ms, job->transitions.back().start_ms);
  now_ms = std::max(now_ms, job->creation_ms);
  const bool same = !job->transitions.empty() && job->transitions.back().status == secondary;
  if (same) {
    job->transitions.back().message = std::string(message);
  } else {
    if (!job->transitions.empty() && !job->transitions.back().end_ms) {
      job->transitions.back().end_ms = now_ms;
    }
    job->transitions.push_back({secondary, now_ms, std::nullopt, std::string(message)});
  }
  job->status = status;
  job->secondary_status = secondary;
  job->last_modified_ms = now_ms;
  if (secondary == model::SecondaryStatus::kTraining && !job->training_start_ms) {
    job->training_start_ms = now_ms;
  }
  if (model::IsTerminal(status)) {
    job->transitions.back().end_ms = job->transitions.back().start_ms;
    if (job->training_start_ms) job->training_end_ms = std::max(now_ms, *job->training_start_ms);
  }
  if (status == model::JobStatus::kFailed) job->failure_reason = std::string(message);
}

int64_t TrainingTimeSeconds(const model::JobRecord& job) {
  if (!job.training_start_ms || !job.training_end_ms) return 0;
  int64_t ms = *job.training_end_ms - *job.training_start_ms;
  return std::max<int64_t>(1, (ms + 999) / 1000);
}

std::string TruncateUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  static constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // U+2026
  if (max_bytes < kEllipsis.size()) return std::string();
  size_t cut = max_bytes - kEllipsis.size();
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  size_t limit = cut >= 3 ? cut - 3 : 0;
  while (cut > limit && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kEllipsis);
}

}  // namespace trainwatch::job
