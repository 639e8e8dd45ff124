// The rule engine on a real store: statuses and findings written back through
// ingest, kept across runner updates, and rebuilt when a server restarts.
#include "app/local_rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ingest/ingest.h"
#include "model/job_events.h"
#include "query/store_reader.h"
#include "rules/inputs.h"
#include "store/db.h"
#include "store/test_util.h"
#include "util/clock.h"
#include "util/testing/temp_dir.h"

namespace trainwatch::app {
namespace {

using ::testing::HasSubstr;

using store::testing::OpenWriterOrDie;

model::SampleBatch NonFinite(const std::string& job, const std::string& metric, int64_t t_ms) {
  model::SampleBatch b;
  b.series.push_back({*model::MakeSeriesKey(std::string(model::kJobEventsNamespace),
                                            std::string(model::kNonFiniteMetricValues),
                                            {{"TrainingJobName", job},
                                             {"MetricName", metric},
                                             {"Value", "NaN"}},
                                            "Count"),
                      1,
                      {{t_ms, 1}},
                      {},
                      {}});
  return b;
}

class LocalRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenWriterOrDie(dir_.path(), &clock_);
    ASSERT_NE(db_, nullptr);
    ingest_ = std::make_unique<ingest::Ingest>(db_.get());
    job_.name = "nan-7";
    job_.arn = model::TrainingJobArn(job_.name);
    job_.creation_ms = job_.last_modified_ms = clock_.NowMs();
    job_.rule_configurations = {{"nan", "ExplodingTensor", {}, {}}};
  }
  model::JobRecord Stored() {
    return query::StoreReader(*db_).GetJob(job_.name)->value();
  }

  util::testing::TempDir dir_;
  util::FakeClock clock_{1736942400000};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<ingest::Ingest> ingest_;
  model::JobRecord job_;
};

TEST_F(LocalRulesTest, FindingsAreStoredWithTheJobAndInItsRulesStream) {
  LocalRules rules(ingest_.get(), {}, {}, &clock_);
  ASSERT_TRUE(ingest_->CreateJob(job_).ok());
  ASSERT_TRUE(ingest_->Put(NonFinite(job_.name, "train:loss", clock_.NowMs() + 5)).ok());
  rules.Flush();
  model::JobRecord stored = Stored();
  ASSERT_EQ(stored.rule_statuses.size(), 1u);
  EXPECT_EQ(stored.rule_statuses[0].status, model::RuleStatusKind::kIssuesFound);
  // The runner's own updates keep them.
  job_.secondary_status = model::SecondaryStatus::kTraining;
  ASSERT_TRUE(ingest_->UpdateJob(job_).ok());
  rules.Flush();
  EXPECT_EQ(Stored().rule_statuses.at(0).status, model::RuleStatusKind::kIssuesFound);
  query::LogReadQuery q;
  q.stream = {std::string(model::kTrainingJobsLogGroup), rules::RulesLogStream(job_.name)};
  absl::StatusOr<std::vector<query::StoredLogEvent>> events =
      query::StoreReader(*db_).ReadLogStream(q);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_THAT(events->at(0).message, HasSubstr("\"reason\":\"nan\""));
}

TEST_F(LocalRulesTest, AServerThatRestartsRebuildsTheRulesFromTheStore) {
  {
    LocalRules rules(ingest_.get(), {}, {}, &clock_);
    ASSERT_TRUE(ingest_->CreateJob(job_).ok());
    ASSERT_TRUE(ingest_->Put(NonFinite(job_.name, "train:loss", clock_.NowMs() + 5)).ok());
    rules.Flush();
  }
  ASSERT_EQ(Stored().rule_statuses.at(0).status, model::RuleStatusKind::kIssuesFound);
  // A new engine (a restarted server) watching the job in progress.
  clock_.AdvanceMs(1000);
  LocalRules restarted(ingest_.get(), {}, {}, &clock_);
  query::StoreReader reader(*db_);
  restarted.engine().Watch(Stored(), &reader, &reader);
  restarted.Flush();
  model::JobRecord stored = Stored();
  ASSERT_EQ(stored.rule_statuses.size(), 1u);
  EXPECT_EQ(stored.rule_statuses[0].status, model::RuleStatusKind::kIssuesFound)
      << "the issue found before the restart was lost";
  EXPECT_EQ(stored.rule_statuses[0].findings.size(), 1u);
  // The same issue again soon after is a repeat: counted, not recorded again.
  ASSERT_TRUE(ingest_->Put(NonFinite(job_.name, "train:loss", clock_.NowMs())).ok());
  restarted.Flush();
  stored = Stored();
  EXPECT_EQ(stored.rule_statuses[0].findings.size(), 1u);
  EXPECT_EQ(stored.rule_statuses[0].findings_total, 2);
  // The job ends: the statuses are final.
  job_.status = model::JobStatus::kCompleted;
  job_.secondary_status = model::SecondaryStatus::kCompleted;
  job_.training_end_ms = clock_.NowMs();
  ASSERT_TRUE(ingest_->UpdateJob(job_).ok());
  restarted.Flush();
  EXPECT_EQ(Stored().rule_statuses.at(0).status, model::RuleStatusKind::kIssuesFound);
}

}  // namespace
}  // namespace trainwatch::app
