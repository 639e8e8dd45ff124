#pragma once
// The SageMaker training-job life cycle applied to a JobRecord (spec/aws-api.md
// §7.1): status changes, SecondaryStatusTransitions and the times they imply. Pure
// functions; JobRunner and RecordRunnerGone use them, and so can the api layer.

#include <cstdint>
#include <string>
#include <string_view>

#include "model/job_record.h"

namespace trainwatch::job {

// The StatusMessage texts (spec/aws-api.md §7.1; the AWS ones are AWS's wording).
inline constexpr std::string_view kMessageStarting = "Starting the training job.";
inline constexpr std::string_view kMessagePreparing = "Preparing the instances for training.";
inline constexpr std::string_view kMessageTraining =
    "Training image download completed. Training in progress.";
inline constexpr std::string_view kMessageUploading = "Uploading generated training model";
inline constexpr std::string_view kMessageCompleted = "Training job completed";
inline constexpr std::string_view kMessageStopping = "Stopping the training job";
inline constexpr std::string_view kMessageStopped = "Training job stopped";
inline constexpr std::string_view kMessageMaxRuntime = "Training job exceeded MaxRuntimeInSeconds";

// FailureReason is at most this many bytes (AWS: 1024 characters).
inline constexpr size_t kMaxFailureReasonBytes = 1024;

// A new job: InProgress / Starting with kMessageStarting at now_ms (CreationTime,
// LastModifiedTime), one open transition. Other fields are the caller's.
void BeginJob(model::JobRecord* job, int64_t now_ms);

// Moves the job to (status, secondary) with `message` at now_ms.
// - A different secondary status closes the open transition (EndTime = now_ms) and
//   opens a new one; the same secondary status only replaces the message of the
//   current entry (§7.1: a new message within a status does not add an entry).
// - Entering Training sets TrainingStartTime if unset (the process started).
// - A terminal status (Completed, Failed, Stopped) gives the last entry
//   EndTime = StartTime and sets TrainingEndTime when training had started
//   (§7.1: AWS omits the training times of jobs that failed before starting).
// - Failed also stores `message` as FailureReason.
// - LastModifiedTime = now_ms. now_ms earlier than the last transition's start is
//   raised to it, so times never go backwards.
void EnterStatus(model::JobRecord* job, model::JobStatus status, model::SecondaryStatus secondary,
                 std::string_view message, int64_t now_ms);

// ⌈(TrainingEndTime − TrainingStartTime) / 1 s⌉, at least 1; 0 while either is unset.
int64_t TrainingTimeSeconds(const model::JobRecord& job);

// `text` cut to at most max_bytes on a UTF-8 character boundary ("…" appended when cut,
// within the limit).
std::string TruncateUtf8(std::string_view text, size_t max_bytes);

}  // namespace trainwatch::job
