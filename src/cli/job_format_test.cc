#include "cli/job_format.h"

#include <gtest/gtest.h>

namespace trainwatch::cli {
namespace {

model::JobRecord FinishedJob() {
  model::JobRecord job;
  job.name = "mnist-7";
  job.arn = model::TrainingJobArn(job.name);
  job.status = model::JobStatus::kCompleted;
  job.secondary_status = model::SecondaryStatus::kCompleted;
  job.creation_ms = 1736942400000;
  job.training_start_ms = 1736942400500;
  job.training_end_ms = 1736942409400;
  job.command = {"python3", "train.py", "--note", "it's"};
  job.metric_definitions = {{"train:loss", "loss: (\\S+)"}, {"validation:accuracy", "acc=(\\S+)"}};
  job.final_metrics = {{"train:loss", 0.1, 1736942409000}};
  job.transitions = {{model::SecondaryStatus::kStarting, 1736942400000, 1736942400500, "Starting"},
                     {model::SecondaryStatus::kCompleted, 1736942409400, 1736942409400,
                      "Training job completed"}};
  return job;
}

TEST(FormatJobDescription, ShowsStatusTimesCommandAndFinalMetrics) {
  std::string text = FormatJobDescription(FinishedJob(), 1736942500000);
  EXPECT_NE(text.find("Status:         Completed (Completed)"), std::string::npos) << text;
  EXPECT_NE(text.find("2025-01-15T12:00:00.500Z to 2025-01-15T12:00:09.400Z (8.9s)"),
            std::string::npos)
      << text;
  // Arguments are shell-quoted so the command can be copied back.
  EXPECT_NE(text.find("Command:        python3 train.py --note 'it'\\''s'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("train:loss  0.1"), std::string::npos) << text;
  EXPECT_EQ(text.find("validation:accuracy  "), std::string::npos) << "no value, no row";
}

TEST(FormatJobDescription, RunningJobSaysWhereToSeeMetricsLive) {
  model::JobRecord job = FinishedJob();
  job.status = model::JobStatus::kInProgress;
  job.secondary_status = model::SecondaryStatus::kTraining;
  job.training_end_ms.reset();
  job.final_metrics.clear();
  std::string text = FormatJobDescription(job, *job.training_start_ms + 65000);
  EXPECT_NE(text.find("(1m05s so far)"), std::string::npos) << text;
  EXPECT_NE(text.find("trainwatch metrics mnist-7"), std::string::npos) << text;
}

// As the report gives durations: tenths of short ones, never rounded up to
// the next second.
TEST(FormatElapsed, TenthsUnderTenSecondsThenWholeSecondsAndMinutes) {
  EXPECT_EQ(FormatElapsed(1050), "1.1s");
  EXPECT_EQ(FormatElapsed(2050), "2.1s");
  EXPECT_EQ(FormatElapsed(9949), "9.9s");
  EXPECT_EQ(FormatElapsed(9950), "10s");
  EXPECT_EQ(FormatElapsed(59500), "1m00s");
  EXPECT_EQ(FormatElapsed(0), "0.0s");
  EXPECT_EQ(FormatElapsed(12400), "12s");
  EXPECT_EQ(FormatElapsed(65000), "1m05s");
  EXPECT_EQ(FormatElapsed(2 * 3600000 + 61000), "2h01m");
}

TEST(FormatDouble, ShortestRoundTrip) {
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(1e-05), "1e-05");
  EXPECT_EQ(FormatDouble(3), "3");
  EXPECT_EQ(std::stod(FormatDouble(0.1 + 0.2)), 0.1 + 0.2);
}

TEST(FormatJobTable, OneRowPerJob) {
  std::string text = FormatJobTable({FinishedJob()}, 0);
  EXPECT_NE(text.find("NAME"), std::string::npos);
  EXPECT_NE(text.find("mnist-7  Completed"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainwatch::cli
