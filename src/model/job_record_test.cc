#include "model/job_record.h"

#include <gtest/gtest.h>

namespace trainwatch::model {
namespace {

TEST(JobRecord, StatusNamesRoundTrip) {
  for (JobStatus s : {JobStatus::kInProgress, JobStatus::kCompleted, JobStatus::kFailed,
                      JobStatus::kStopping, JobStatus::kStopped}) {
    EXPECT_EQ(ParseJobStatus(JobStatusName(s)), s);
  }
  EXPECT_EQ(SecondaryStatusName(SecondaryStatus::kMaxRuntimeExceeded), "MaxRuntimeExceeded");
  EXPECT_EQ(ParseSecondaryStatus("MaxRuntimeExceeded"), SecondaryStatus::kMaxRuntimeExceeded);
  EXPECT_EQ(ParseJobStatus("Running"), std::nullopt);
  EXPECT_TRUE(IsTerminal(JobStatus::kStopped));
  EXPECT_FALSE(IsTerminal(JobStatus::kStopping));
}

TEST(JobRecord, NamesFollowSageMakersPattern) {
  EXPECT_TRUE(IsValidJobName("tw-demo-job-001"));
  EXPECT_TRUE(IsValidJobName("a"));
  EXPECT_TRUE(IsValidJobName("a--b"));
  EXPECT_FALSE(IsValidJobName(""));
  EXPECT_FALSE(IsValidJobName("-a"));
  EXPECT_FALSE(IsValidJobName("a-"));
  EXPECT_FALSE(IsValidJobName("my_job"));
  EXPECT_FALSE(IsValidJobName(std::string(64, 'a')));
  EXPECT_TRUE(IsValidJobName(std::string(63, 'a')));
}

TEST(JobRecord, ArnIsLowerCasedAndHostFollowsSageMaker) {
  EXPECT_EQ(TrainingJobArn("My-Job"),
            "arn:aws:sagemaker:us-east-1:000000000000:training-job/my-job");
  JobRecord job;
  job.name = "mnist-7";
  EXPECT_EQ(job.HostName(), "mnist-7/algo-1");
}

}  // namespace
}  // namespace trainwatch::model
