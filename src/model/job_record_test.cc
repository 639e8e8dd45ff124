#include "model/job_record.h"

#include <gtest/gtest.h>

#include "absl/strings/str_format.h"

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

TEST(JobRecord, HostNamesAndSeriesNameTheirJobAndHost) {
  EXPECT_EQ(ParseHostName("mnist-7/algo-2"), (JobHost{"mnist-7", 2}));
  EXPECT_EQ(ParseHostName("a/algo-2/algo-3"), (JobHost{"a/algo-2", 3}));  // the last one
  EXPECT_EQ(ParseHostName("j/algo-1024"), (JobHost{"j", kMaxJobHosts}));
  for (const char* other : {"j/algo-0", "j/algo-1025", "j/algo-2x", "j/algo-", "/algo-1",
                            "j/algo--1", "j/algo-01", "ip-10-0-0-1", ""}) {
    EXPECT_EQ(ParseHostName(other), std::nullopt) << other;
  }
  SeriesKey key;
  key.dimensions = {{"TrainingJobName", "mnist-7"}};
  EXPECT_EQ(JobOfSeries(key), (JobHost{"mnist-7", 1}));
  key.dimensions = {{"Host", "mnist-7/algo-2"}};
  EXPECT_EQ(JobOfSeries(key), (JobHost{"mnist-7", 2}));
  key.dimensions = {{"Host", "mnist-7/algo-2"}, {"TrainingJobName", ""}};
  EXPECT_EQ(JobOfSeries(key), (JobHost{"mnist-7", 2}));
  key.dimensions = {{"InstanceId", "i-1"}};
  EXPECT_EQ(JobOfSeries(key), std::nullopt);
}

JobRecord Host(int index, JobStatus status, SecondaryStatus secondary) {
  JobRecord h;
  h.name = "ddp-3";
  h.host_index = index;
  h.status = status;
  h.secondary_status = secondary;
  h.creation_ms = 1000 + index;
  h.last_modified_ms = 5000 + index;
  h.training_start_ms = 2000 + index;
  if (IsTerminal(status)) h.training_end_ms = 4000 + index;
  h.metric_definitions = {{"train:loss", "loss=(.*)"}, {"val:acc", "acc=(.*)"}};
  h.log_stream = absl::StrFormat("ddp-3/algo-%d-1", index);
  return h;
}

TEST(JobRecord, OneHostIsTheJobAsItIs) {
  JobRecord one = Host(1, JobStatus::kInProgress, SecondaryStatus::kTraining);
  JobRecord merged = MergeHostRecords({one});
  EXPECT_EQ(merged, one);
  EXPECT_TRUE(merged.hosts.empty());
  EXPECT_EQ(FindHost(merged, 1), &merged);
  EXPECT_EQ(FindHost(merged, 2), nullptr);
  // A stop asked of a runner on another host shows until the runner acts on it.
  one.stop_requested_ms = 3000;
  merged = MergeHostRecords({one});
  EXPECT_EQ(merged.status, JobStatus::kStopping);
  EXPECT_EQ(merged.secondary_status, SecondaryStatus::kStopping);
}

TEST(JobRecord, AJobRunsUntilEveryHostEnded) {
  JobRecord done = Host(2, JobStatus::kCompleted, SecondaryStatus::kCompleted);
  done.final_metrics = {{"train:loss", 0.5, 3900}};
  JobRecord running = Host(1, JobStatus::kInProgress, SecondaryStatus::kTraining);
  JobRecord job = MergeHostRecords({done, running});
  EXPECT_EQ(job.status, JobStatus::kInProgress);
  EXPECT_EQ(job.secondary_status, SecondaryStatus::kTraining);
  EXPECT_EQ(job.host_index, 1);
  EXPECT_EQ(job.creation_ms, 1001);
  EXPECT_EQ(job.training_start_ms, 2001);
  EXPECT_EQ(job.training_end_ms, std::nullopt);
  EXPECT_EQ(job.last_modified_ms, 5002);
  EXPECT_TRUE(job.final_metrics.empty()) << "filled once the job is terminal";
  ASSERT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.hosts[0].host_index, 1);  // by host number
  EXPECT_EQ(FindHost(job, 2)->log_stream, "ddp-3/algo-2-1");
  EXPECT_EQ(HostRecords(job).size(), 2u);

  // Both done: the latest value of each metric over the hosts, in definition order.
  running = Host(1, JobStatus::kCompleted, SecondaryStatus::kCompleted);
  running.final_metrics = {{"val:acc", 91, 3950}, {"train:loss", 0.7, 3800}};
  job = MergeHostRecords({running, done});
  EXPECT_EQ(job.status, JobStatus::kCompleted);
  EXPECT_EQ(job.training_end_ms, 4002);
  EXPECT_EQ(job.final_metrics,
            (std::vector<FinalMetric>{{"train:loss", 0.5, 3900}, {"val:acc", 91, 3950}}));
}

TEST(JobRecord, OneFailedHostFailsTheJobAndNamesItsReason) {
  JobRecord failed = Host(3, JobStatus::kFailed, SecondaryStatus::kFailed);
  failed.failure_reason = "AlgorithmError: exit status 1";
  failed.exit_code = 1;
  JobRecord stopped = Host(2, JobStatus::kStopped, SecondaryStatus::kStopped);
  JobRecord job = MergeHostRecords({Host(1, JobStatus::kCompleted, SecondaryStatus::kCompleted),
                                    stopped, failed});
  EXPECT_EQ(job.status, JobStatus::kFailed);
  EXPECT_EQ(job.failure_reason, "AlgorithmError: exit status 1");
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_EQ(job.host_index, 3);
  job = MergeHostRecords({Host(1, JobStatus::kCompleted, SecondaryStatus::kCompleted), stopped});
  EXPECT_EQ(job.status, JobStatus::kStopped);
  // A host being stopped makes the running job Stopping.
  job = MergeHostRecords({Host(1, JobStatus::kInProgress, SecondaryStatus::kTraining),
                          Host(2, JobStatus::kStopping, SecondaryStatus::kStopping)});
  EXPECT_EQ(job.status, JobStatus::kStopping);
  EXPECT_EQ(job.secondary_status, SecondaryStatus::kStopping);
}

}  // namespace
}  // namespace trainwatch::model
