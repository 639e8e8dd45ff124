// The job report on a real store: what it says about a job (phases, step
// times, utilisation per core and GPU, efficiency, rules, charts that keep a
// spike), and that a job that ends gets its report file.
#include "app/job_reports.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ingest/ingest.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "profiler/metric_names.h"
#include "query/store_reader.h"
#include "report/report.h"
#include "store/test_util.h"
#include "util/clock.h"
#include "util/testing/temp_dir.h"

namespace trainwatch::app {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using store::testing::OpenWriterOrDie;
namespace pm = profiler::metric;

constexpr int64_t kT0 = 1736942400000;

model::SeriesKey Key(std::string_view ns, std::string_view metric,
                     std::vector<model::Dimension> dims, std::string_view unit = "None") {
  return *model::MakeSeriesKey(std::string(ns), std::string(metric), std::move(dims),
                               std::string(unit));
}

class JobReportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenWriterOrDie(dir_.path(), &clock_);
    ASSERT_NE(db_, nullptr);
    ingest_ = std::make_unique<ingest::Ingest>(db_.get());
    job_.name = "mnist-7";
    job_.arn = model::TrainingJobArn(job_.name);
    job_.creation_ms = job_.last_modified_ms = kT0;
    job_.training_start_ms = kT0;
    job_.step_metric = "step";
    job_.profiling_interval_ms = 1000;
    job_.command = {"python3", "train.py", "--lr", "<0.1>"};
  }

  void Put(const model::SeriesKey& key, std::vector<model::Sample> samples) {
    model::SampleBatch b;
    b.series.push_back({key, 1, std::move(samples), {}, {}});
    ASSERT_TRUE(ingest_->Put(b).ok());
  }

  // 100 s of a job: a loss with one spike, steps 1 s apart but step 60 that
  // took 5 s, two cores (one busy), the job's CPU, one GPU idle the first 10 s.
  void WriteJob() {
    ASSERT_TRUE(ingest_->CreateJob(job_).ok());
    const std::string host = profiler::HostDimensionValue(job_.name, 1);
    const model::Dimension by_job{std::string(model::kTrainingJobNameDim), job_.name};
    const model::Dimension by_host{std::string(profiler::kHostDim), host};
    std::vector<model::Sample> loss, step, core0, core1, job_cpu, gpu, cores, mem;
    int64_t t = kT0 + 10'000;  // initialization: 10 s
    for (int s = 0; s < 100; ++s) {
      t += s == 60 ? 5000 : 1000;
      step.push_back({t, static_cast<double>(s)});
      loss.push_back({t, s == 42 ? 1000.0 : 2.0 - s * 0.01});
    }
    for (int64_t ts = kT0; ts <= t; ts += 1000) {
      const bool warm = ts >= kT0 + 10'000;
      core0.push_back({ts, 100});
      core1.push_back({ts, 0});
      job_cpu.push_back({ts, warm ? 150.0 : 1.0});
      gpu.push_back({ts, warm ? 80.0 : 0.0});
      cores.push_back({ts, 2});
      mem.push_back({ts, 40});
    }
    end_ms_ = t + 2000;
    Put(Key(model::kTrainingJobsNamespace, "train:loss", {by_job}), loss);
    Put(Key(model::kTrainingJobsNamespace, "step", {by_job}), step);
    Put(Key(profiler::kProfilerNamespace, pm::kHostCPUUtilization, {by_host, {"Core", "0"}},
            "Percent"),
        core0);
    Put(Key(profiler::kProfilerNamespace, pm::kHostCPUUtilization, {by_host, {"Core", "1"}},
            "Percent"),
        core1);
    Put(Key(profiler::kProfilerNamespace, pm::kJobCPU, {by_host}, "Percent"), job_cpu);
    Put(Key(profiler::kProfilerNamespace, pm::kGpuUtil, {by_host, {"GPU", "0"}}, "Percent"), gpu);
    Put(Key(profiler::kProfilerNamespace, pm::kCPUCores, {by_host}, "Count"), cores);
    Put(Key(profiler::kProfilerNamespace, pm::kMemoryUsedPercent, {by_host}, "Percent"), mem);
    Put(Key(profiler::kSageMakerNamespace, pm::kCPUUtilization, {by_host}, "Percent"), core0);
    job_.status = model::JobStatus::kCompleted;
    job_.secondary_status = model::SecondaryStatus::kCompleted;
    job_.training_end_ms = end_ms_;
    job_.last_modified_ms = end_ms_;
    job_.final_metrics = {{"train:loss", 1.01, t}};
    ASSERT_TRUE(ingest_->UpdateJob(job_).ok());
    model::RuleStatus rule;
    rule.configuration_name = "StepOutlier";
    rule.rule = "StepOutlier";
    rule.family = "profiler";
    rule.status = model::RuleStatusKind::kIssuesFound;
    rule.findings_total = 1;
    model::RuleFinding f;
    f.rule = "StepOutlier";
    f.reason = "outlier";
    f.subject = "step";
    f.step = 60;
    f.t_ms = kT0 + 75'000;
    f.message = "step 60 took 5 s <slow>";
    f.recommendation = "correlate with the CPU and I/O bottleneck findings";
    rule.findings.push_back(f);
    // A rule that had nothing to check: no issue, and a "no data" warning.
    model::RuleStatus unchecked;
    unchecked.configuration_name = "LowGPUUtilization";
    unchecked.rule = "LowGPUUtilization";
    unchecked.family = "profiler";
    unchecked.status = model::RuleStatusKind::kNoIssuesFound;
    unchecked.details = "No data: no GPU utilisation was reported";
    unchecked.findings_total = 1;
    model::RuleFinding no_data;
    no_data.rule = "LowGPUUtilization";
    no_data.reason = "no_data";
    no_data.severity = model::FindingSeverity::kWarning;
    no_data.message = "no GPU utilisation was reported";
    unchecked.findings.push_back(no_data);
    ASSERT_TRUE(ingest_->SetRuleStatuses(job_.name, 1, {rule, unchecked}).ok());
  }

  absl::StatusOr<report::JobReport> Build(int64_t now_ms = 0) {
    query::StoreReader reader(*db_);
    absl::StatusOr<std::optional<model::JobRecord>> job = reader.GetJob(job_.name);
    if (!job.ok()) return job.status();
    report::ReportOptions options;
    options.generated_ms = end_ms_;
    options.now_ms = now_ms;
    return report::BuildReport(**job, reader, reader, options);
  }

  util::testing::TempDir dir_;
  util::FakeClock clock_{kT0 + 200'000};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<ingest::Ingest> ingest_;
  model::JobRecord job_;
  int64_t end_ms_ = 0;
};

TEST_F(JobReportsTest, SaysWhereTheTimeWentAndHowLongStepsTook) {
  WriteJob();
  absl::StatusOr<report::JobReport> r = Build();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phases.start_ms, kT0);
  EXPECT_EQ(r->phases.end_ms, end_ms_);
  ASSERT_TRUE(r->phases.loop_from_steps);
  EXPECT_EQ(*r->phases.loop_start_ms, kT0 + 11'000);  // the first step
  EXPECT_EQ(*r->phases.loop_end_ms, end_ms_ - 2000);
  // The 10 s of initialization: job CPU 1 % of a core, GPU at 0 (10 samples).
  EXPECT_EQ(r->phases.idle_ms, 10 * 1000);
  ASSERT_TRUE(r->step_times.has_value());
  const report::StepTimes& s = *r->step_times;
  EXPECT_EQ(s.steps, 99);
  EXPECT_DOUBLE_EQ(s.p50_ms, 1000);
  EXPECT_DOUBLE_EQ(s.max_ms, 5000);
  ASSERT_FALSE(s.slowest.empty());
  EXPECT_EQ(s.slowest[0].step, 60);
  EXPECT_DOUBLE_EQ(s.slowest[0].duration_ms, 5000);
  int64_t counted = 0;
  for (int64_t c : s.counts) counted += c;
  EXPECT_EQ(counted, 99);
  EXPECT_EQ(s.counts.back(), 1) << "the outlier is in the last bucket";
}

TEST_F(JobReportsTest, AJobOnTwoHostsHasTheCoresOfBothAndTheMeanHostsIdleTime) {
  WriteJob();
  // A second host like the first: two cores, idle for the same first 10 s.
  const model::Dimension by_host{std::string(profiler::kHostDim),
                                 profiler::HostDimensionValue(job_.name, 2)};
  std::vector<model::Sample> job_cpu, gpu, cores;
  for (int64_t ts = kT0; ts <= end_ms_ - 2000; ts += 1000) {
    const bool warm = ts >= kT0 + 10'000;
    job_cpu.push_back({ts, warm ? 150.0 : 1.0});
    gpu.push_back({ts, warm ? 80.0 : 0.0});
    cores.push_back({ts, 2});
  }
  Put(Key(profiler::kProfilerNamespace, pm::kJobCPU, {by_host}, "Percent"), job_cpu);
  Put(Key(profiler::kProfilerNamespace, pm::kGpuUtil, {by_host, {"GPU", "0"}}, "Percent"), gpu);
  Put(Key(profiler::kProfilerNamespace, pm::kCPUCores, {by_host}, "Count"), cores);
  model::JobRecord second = job_;
  second.host_index = 2;
  ASSERT_TRUE(ingest_->CreateJob(second).ok());
  absl::StatusOr<report::JobReport> r = Build();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->job.hosts.size(), 2u);
  EXPECT_EQ(r->efficiency.cpu_cores, 4);
  EXPECT_EQ(r->phases.idle_ms, 10 * 1000) << "not the two hosts' idle samples added up";
}

TEST_F(JobReportsTest, AJobThatFailedBeforeTrainingEndedSaysWhenItEnded) {
  WriteJob();
  job_.status = model::JobStatus::kFailed;
  job_.secondary_status = model::SecondaryStatus::kFailed;
  job_.training_end_ms.reset();
  ASSERT_TRUE(ingest_->UpdateJob(job_).ok());
  absl::StatusOr<report::JobReport> r = Build(/*now_ms=*/end_ms_ + 3'600'000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phases.end_ms, end_ms_) << "its last write, not when the report was made";
  const std::string html = report::RenderHtml(*r);
  EXPECT_THAT(html, Not(HasSubstr("still running")));
}

TEST_F(JobReportsTest, GivesUtilisationPerCoreAndGpuAndTheEfficiency) {
  WriteJob();
  absl::StatusOr<report::JobReport> r = Build();
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, report::UsageRow> rows;
  for (const report::UsageRow& u : r->usage) rows[u.resource] = u;
  ASSERT_TRUE(rows.count("CPU core 0") && rows.count("CPU core 1") && rows.count("GPU 0") &&
              rows.count("CPU") && rows.count("Memory"))
      << r->usage.size() << " rows";
  EXPECT_DOUBLE_EQ(rows["CPU core 0"].p50, 100);
  EXPECT_DOUBLE_EQ(rows["CPU core 1"].max, 0);
  EXPECT_DOUBLE_EQ(rows["CPU"].p50, 50);  // the mean of the cores
  EXPECT_DOUBLE_EQ(rows["GPU 0"].max, 80);
  EXPECT_DOUBLE_EQ(rows["GPU 0"].min, 0);
  EXPECT_DOUBLE_EQ(rows["Memory"].p95, 40);
  const report::Efficiency& e = r->efficiency;
  EXPECT_EQ(e.cpu_cores, 2);
  EXPECT_EQ(e.gpus, 1);
  const double hours = static_cast<double>(end_ms_ - kT0) / 3.6e6;
  EXPECT_NEAR(e.cpu_core_hours, 2 * hours, 1e-9);
  EXPECT_NEAR(e.gpu_hours, hours, 1e-9);
  // 10 samples at 1 % of a core, the rest at 150 %, one second each.
  const double samples = static_cast<double>((end_ms_ - 2000 - kT0) / 1000 + 1);
  EXPECT_NEAR(e.job_cpu_hours, (10 * 0.01 + (samples - 10) * 1.5) / 3600, 1e-9);
}

TEST_F(JobReportsTest, ChartsKeepTheSpikeAndFinalMetricsAndRulesAreShown) {
  WriteJob();
  absl::StatusOr<report::JobReport> r = Build();
  ASSERT_TRUE(r.ok()) << r.status();
  const report::Chart* loss = nullptr;
  for (const report::Chart& c : r->metric_charts) {
    if (c.title == "train:loss") loss = &c;
  }
  ASSERT_NE(loss, nullptr);
  ASSERT_EQ(loss->lines.size(), 1u);
  EXPECT_DOUBLE_EQ(*std::max_element(loss->lines[0].values.begin(), loss->lines[0].values.end()),
                   1000);
  ASSERT_EQ(r->final_metrics.size(), 1u);
  EXPECT_DOUBLE_EQ(r->final_metrics[0].value, 1.01);
  ASSERT_EQ(r->system_charts.size(), 1u);  // CPUUtilization only was written
  ASSERT_EQ(r->rules.size(), 2u);

  const std::string html = report::RenderHtml(*r);
  for (const char* section : {"id=\"summary\"", "id=\"rules\"", "id=\"metrics\"",
                              "id=\"system\"", "id=\"steps\"", "id=\"efficiency\"",
                              "id=\"timeline\""}) {
    EXPECT_THAT(html, HasSubstr(section));
  }
  EXPECT_THAT(html, HasSubstr("correlate with the CPU and I/O bottleneck findings"));
  // A rule without data is told apart from one that checked and found nothing,
  // and its warning is not counted as an issue.
  EXPECT_THAT(html, HasSubstr("1 of 2 rules found issues; 1 had no data to check"));
  EXPECT_THAT(html, HasSubstr("NoIssuesFound</span> <span class=\"muted\">no data</span></td>"
                              "<td class=\"num\">0</td>"));
  EXPECT_THAT(html, HasSubstr("step 60 took 5 s &lt;slow&gt;"));  // escaped
  EXPECT_THAT(html, HasSubstr("&lt;0.1&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<slow>")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));  // nothing to run, nothing fetched
  EXPECT_THAT(html, Not(HasSubstr("http")));

  const nlohmann::json json = nlohmann::json::parse(report::RenderJson(*r));
  EXPECT_EQ(json["job"]["name"], "mnist-7");
  EXPECT_EQ(json["step_times"]["steps"], 99);
  EXPECT_EQ(json["efficiency"]["gpus"], 1);
  EXPECT_EQ(json["job"]["rule_statuses"][0]["findings"][0]["step"], 60);
  EXPECT_FALSE(json["metric_charts"].empty());
}

TEST_F(JobReportsTest, WithoutAStepMetricTheReportSaysSo) {
  job_.step_metric.clear();
  WriteJob();
  absl::StatusOr<report::JobReport> r = Build();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->step_times.has_value());
  EXPECT_FALSE(r->phases.loop_from_steps);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_THAT(r->notes[0], HasSubstr("--step-metric"));
  EXPECT_THAT(report::RenderHtml(*r), HasSubstr("--step-metric"));
}

TEST_F(JobReportsTest, AJobThatEndsGetsItsReportFile) {
  JobReports reports(*db_, dir_.path(), ingest_.get(), &clock_, std::chrono::hours(1));
  WriteJob();
  // Due an hour after the end (the delay), or now when flushed.
  const std::string path = JobReportPath(dir_.path(), job_.name);
  EXPECT_FALSE(std::filesystem::exists(path));
  std::vector<std::string> written = reports.Flush();
  ASSERT_EQ(written, std::vector<std::string>{path});
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("Training job report: mnist-7"));
  EXPECT_TRUE(reports.Flush().empty()) << "written once";
}

TEST_F(JobReportsTest, RuleStatusesThatComeAfterTheReportHaveItWrittenAgain) {
  JobReports reports(*db_, dir_.path(), ingest_.get(), &clock_, std::chrono::hours(1));
  model::RuleStatus late;
  late.configuration_name = late.rule = "LossNotDecreasing";
  late.status = model::RuleStatusKind::kIssuesFound;
  WriteJob();
  const std::string path = JobReportPath(dir_.path(), job_.name);
  ASSERT_EQ(reports.Flush(), std::vector<std::string>{path});
  // A busy engine's final statuses, after the report was written.
  late.details = "the final verdict, after the report";
  ASSERT_TRUE(ingest_->SetRuleStatuses(job_.name, 1, {late}).ok());
  ASSERT_EQ(reports.Flush(), std::vector<std::string>{path});
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("the final verdict, after the report"));
}

TEST_F(JobReportsTest, AReportIsWrittenAfterTheDelayWithoutAFlush) {
  JobReports reports(*db_, dir_.path(), ingest_.get(), &clock_, std::chrono::milliseconds(10));
  WriteJob();
  const std::string path = JobReportPath(dir_.path(), job_.name);
  for (int i = 0; i < 500 && !std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST_F(JobReportsTest, AnUnknownJobIsNotFound) {
  absl::StatusOr<std::string> path = WriteJobReport(*db_, dir_.path(), "nope", clock_);
  EXPECT_TRUE(absl::IsNotFound(path.status())) << path.status();
  path = WriteJobReport(*db_, dir_.path(), "../etc", clock_);
  EXPECT_TRUE(absl::IsInvalidArgument(path.status())) << path.status();
}

}  // namespace
}  // namespace trainwatch::app
