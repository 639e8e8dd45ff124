#include "job/lifecycle.h"

#include <gtest/gtest.h>

namespace trainwatch::job {
namespace {

using model::JobStatus;
using model::SecondaryStatus;

TEST(Lifecycle, CompletedJobHasClosedTransitionsAndTimes) {
  model::JobRecord job;
  BeginJob(&job, 1000);
  EnterStatus(&job, JobStatus::kInProgress, SecondaryStatus::kStarting, kMessagePreparing, 1010);
  EnterStatus(&job, JobStatus::kInProgress, SecondaryStatus::kTraining, kMessageTraining, 1020);
  EnterStatus(&job, JobStatus::kInProgress, SecondaryStatus::kUploading, kMessageUploading, 5000);
  EnterStatus(&job, JobStatus::kCompleted, SecondaryStatus::kCompleted, kMessageCompleted, 5100);

  EXPECT_EQ(job.status, JobStatus::kCompleted);
  EXPECT_EQ(job.creation_ms, 1000);
  EXPECT_EQ(job.training_start_ms, 1020);
  EXPECT_EQ(job.training_end_ms, 5100);
  EXPECT_EQ(job.last_modified_ms, 5100);
  EXPECT_EQ(TrainingTimeSeconds(job), 5);  // ceil(4.08 s)
  ASSERT_EQ(job.transitions.size(), 4u);
  // The message within Starting was replaced, not added.
  EXPECT_EQ(job.transitions[0],
            (model::StatusTransition{SecondaryStatus::kStarting, 1000, 1020,
                                     std::string(kMessagePreparing)}));
  EXPECT_EQ(job.transitions[1].end_ms, 5000);
  EXPECT_EQ(job.transitions[2].end_ms, 5100);
  EXPECT_EQ(job.transitions[3],
            (model::StatusTransition{SecondaryStatus::kCompleted, 5100, 5100,
                                     std::string(kMessageCompleted)}));
  EXPECT_TRUE(job.failure_reason.empty());
}

TEST(Lifecycle, MaxRuntimeStaysOneEntryFromStoppingToStopped) {
  model::JobRecord job;
  BeginJob(&job, 0);
  EnterStatus(&job, JobStatus::kInProgress, SecondaryStatus::kTraining, kMessageTraining, 10);
  EnterStatus(&job, JobStatus::kStopping, SecondaryStatus::kMaxRuntimeExceeded,
              kMessageMaxRuntime, 2000);
  EXPECT_EQ(job.status, JobStatus::kStopping);
  EXPECT_FALSE(job.transitions.back().end_ms.has_value());
  EnterStatus(&job, JobStatus::kStopped, SecondaryStatus::kMaxRuntimeExceeded,
              kMessageMaxRuntime, 2500);
  EXPECT_EQ(job.status, JobStatus::kStopped);
  ASSERT_EQ(job.transitions.size(), 3u);
  EXPECT_EQ(job.transitions.back().start_ms, 2000);
  EXPECT_EQ(job.transitions.back().end_ms, 2000);
  EXPECT_EQ(job.training_end_ms, 2500);
}

TEST(Lifecycle, FailureBeforeTrainingHasNoTrainingTimes) {
  model::JobRecord job;
  BeginJob(&job, 100);
  EnterStatus(&job, JobStatus::kFailed, SecondaryStatus::kFailed, "ClientError: bad", 90);
  EXPECT_EQ(job.failure_reason, "ClientError: bad");
  EXPECT_FALSE(job.training_start_ms.has_value());
  EXPECT_FALSE(job.training_end_ms.has_value());
  EXPECT_EQ(TrainingTimeSeconds(job), 0);
  // Times never go backwards.
  EXPECT_EQ(job.transitions.back().start_ms, 100);
}

TEST(Lifecycle, TrainingTimeIsAtLeastOneSecond) {
  model::JobRecord job;
  job.training_start_ms = 5;
  job.training_end_ms = 5;
  EXPECT_EQ(TrainingTimeSeconds(job), 1);
  job.training_end_ms = 1005;
  EXPECT_EQ(TrainingTimeSeconds(job), 1);
  job.training_end_ms = 1006;
  EXPECT_EQ(TrainingTimeSeconds(job), 2);
}

TEST(Lifecycle, TruncateKeepsWholeCharacters) {
  EXPECT_EQ(TruncateUtf8("short", 10), "short");
  std::string text = "ab\xc3\xa9\xc3\xa9";  // "abéé", 6 bytes
  // 5 bytes: room for 2 bytes + "…"; the "é" that would be cut is left out.
  EXPECT_EQ(TruncateUtf8(text, 5), "ab\xe2\x80\xa6");
  EXPECT_EQ(TruncateUtf8(text, 6), text);
}

}  // namespace
}  // namespace trainwatch::job
