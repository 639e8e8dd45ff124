#include "archive/late_journal.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/log_event.h"
#include "store/test_util.h"

namespace trainwatch::archive {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kLateT0 = 1736942400000;

model::SampleBatch LateLoss(const std::string& job, std::vector<int64_t> seconds) {
  model::SeriesSamples s{*model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "train:loss",
                                               {{"TrainingJobName", job}}),
                         1, {}, {}, {}};
  for (int64_t sec : seconds) s.samples.push_back({kLateT0 + sec * 1000, static_cast<double>(sec)});
  model::SampleBatch batch;
  batch.series.push_back(std::move(s));
  return batch;
}

model::LogBatch LateLines(const std::string& job, std::vector<int64_t> seconds) {
  model::LogBatch batch{{std::string(model::kTrainingJobsLogGroup), job + "/algo-1-1"}, {}};
  for (int64_t sec : seconds) batch.events.push_back({kLateT0 + sec * 1000, "line " + std::to_string(sec)});
  return batch;
}

LateJournalOptions Options(util::Clock* clock, const std::string& target) {
  LateJournalOptions options;
  options.clock = clock;
  options.target = target;
  return options;
}

// The seconds (after kLateT0) of a drain's loss rows and log events.
std::vector<int64_t> LateSeconds(const LateData& data) {
  std::vector<int64_t> out;
  for (const auto& [key, rows] : data.series) {
    for (const query::StoredRow& r : rows) out.push_back((r.t_ms - kLateT0) / 1000);
  }
  for (const auto& [stream, events] : data.streams) {
    for (const LateEvent& e : events) out.push_back(-(e.t_ms - kLateT0) / 1000);  // logs negative
  }
  return out;
}

class LateJournalTest : public ::testing::Test {
 protected:
  void Open() {
    journal_.reset();
    auto journal = LateJournal::Open(dir_.path() + "/late", Options(&clock_, ""));
    ASSERT_TRUE(journal.ok()) << journal.status();
    journal_ = *std::move(journal);
  }
  store::testing::TempDir dir_;
  util::FakeClock clock_{kLateT0 + 3'600'000};
  std::unique_ptr<LateJournal> journal_;
};

// A pass reads [from, cut) of a job: what is journaled from `from` on is
// dropped at its start (its read of the store has it); during the pass what
// is stamped before the cut is journaled; at its end what is stamped after
// where it got to is dropped (the next pass reads it from the store).
TEST_F(LateJournalTest, KeepsWhatNoPassReadsFromTheStore) {
  Open();
  // Before the first pass, everything (a server that just started).
  journal_->OnSamples(LateLoss("job-1", {5, 15}));
  journal_->OnLogs(LateLines("job-1", {5, 15}));
  journal_->OnSamples(LateLoss("job-2", {1}));  // no pass plans job-2: dropped at its start
  journal_->BeginPass({{"job-1", kLateT0 + 10'000, kLateT0 + 60'000}}, {});
  // During the pass: before the cut, kept; after it, the store's.
  journal_->OnSamples(LateLoss("job-1", {7, 30, 90}));
  journal_->OnSamples(LateLoss("job-2", {1}));  // no pass plans it: not a late datum
  journal_->OnLogs(LateLines("job-1", {30}));
  EXPECT_EQ(journal_->stats().rows, 3);    // 5, 7, 30
  EXPECT_EQ(journal_->stats().events, 2);  // 5, 30
  // The pass stopped at 20 s: 30 s is read again by the next one.
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 20'000).ok());
  EXPECT_EQ(journal_->ReadTo("job-1"), kLateT0 + 20'000);
  auto drains = journal_->TakeLate();
  ASSERT_TRUE(drains.ok()) << drains.status();
  ASSERT_EQ(drains->size(), 1u);
  EXPECT_EQ((*drains)[0].job, "job-1");
  EXPECT_THAT(LateSeconds((*drains)[0].data), ::testing::UnorderedElementsAre(5, 7, -5));
  // After the pass, before where it got to.
  journal_->OnSamples(LateLoss("job-1", {19, 20}));
  EXPECT_EQ(journal_->stats().rows, 3);  // the drain's 2, and 19
}

// Drains and journaled data survive a restart; a drain is given again with
// the same id until it is written, and then never again.
TEST_F(LateJournalTest, ARestartLosesNothingAndWritesNothingTwice) {
  Open();
  journal_->BeginPass({{"job-1", kLateT0, kLateT0 + 60'000}}, {});
  journal_->OnSamples(LateLoss("job-1", {5}));
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 60'000).ok());
  auto first = journal_->TakeLate();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  journal_->OnSamples(LateLoss("job-1", {6}));  // pending, not drained
  Open();
  // Until its first pass a restarted journal keeps everything.
  journal_->OnSamples(LateLoss("job-1", {600}));
  auto again = journal_->TakeLate();
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].id, (*first)[0].id);
  EXPECT_THAT(LateSeconds((*again)[0].data), ::testing::ElementsAre(5));
  ASSERT_TRUE(journal_->Written({(*again)[0].id}).ok());
  EXPECT_EQ(journal_->stats().written, 1);
  // Drops 600 s.
  journal_->BeginPass({{"job-1", kLateT0 + 60'000, kLateT0 + 120'000}}, {});
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 120'000).ok());
  Open();
  journal_->BeginPass({{"job-1", kLateT0 + 120'000, kLateT0 + 180'000}}, {});
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 180'000).ok());
  auto last = journal_->TakeLate();
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->size(), 1u);
  EXPECT_NE((*last)[0].id, (*first)[0].id);
  EXPECT_THAT(LateSeconds((*last)[0].data), ::testing::ElementsAre(6));
}

// What a pass reads itself from the store is gone from the journal's file
// too, so a restart does not find it there and archive it twice.
TEST_F(LateJournalTest, WhatAPassReadsIsNotFoundAgainAfterARestart) {
  Open();
  journal_->OnSamples(LateLoss("job-1", {5, 15}));
  journal_->BeginPass({{"job-1", kLateT0 + 10'000, kLateT0 + 60'000}}, {});
  ASSERT_TRUE(journal_->SaveDrops().ok());
  Open();
  EXPECT_EQ(journal_->stats().rows, 1);  // 5 s: before the pass's `from`
}

// A job archived complete takes everything as late; a job whose plan failed
// keeps what is stamped before its last pass's end.
TEST_F(LateJournalTest, CompleteAndUnplannedJobs) {
  Open();
  journal_->BeginPass({{"done-1", LateJournal::kEndOfTime, LateJournal::kEndOfTime},
                       {"job-1", kLateT0, kLateT0 + 60'000}},
                      {});
  ASSERT_TRUE(journal_->EndJob("done-1", LateJournal::kEndOfTime).ok());
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 60'000).ok());
  journal_->BeginPass({{"done-1", LateJournal::kEndOfTime, LateJournal::kEndOfTime}}, {"job-1"});
  journal_->OnSamples(LateLoss("done-1", {1'000'000}));
  journal_->OnSamples(LateLoss("job-1", {30, 90}));
  EXPECT_EQ(journal_->stats().rows, 2);  // done-1's, and job-1's 30 s
}

// A server that restarts journals everything for a job whose first plan
// fails, not only what is stamped before where the journal's file last said
// the passes read to (several passes old).
TEST_F(LateJournalTest, AfterARestartAJobWhosePlanFailsKeepsEverything) {
  Open();
  journal_->BeginPass({{"job-1", kLateT0, kLateT0 + 60'000}}, {});
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 60'000).ok());
  journal_->OnSamples(LateLoss("job-1", {5}));
  ASSERT_TRUE(journal_->TakeLate().ok());  // a rewrite: read to 60 s, on disk
  journal_->BeginPass({{"job-1", kLateT0 + 60'000, kLateT0 + 120'000}}, {});
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 120'000).ok());  // no rewrite
  Open();
  journal_->BeginPass({}, {"job-1"});
  journal_->OnSamples(LateLoss("job-1", {90}));  // read by no segment: the pass read to 120 s
  EXPECT_EQ(journal_->stats().rows, 2);          // the drain's 5, and 90
}

// A job whose pass failed keeps its late data for a pass that does not: the
// next pass may read that window again (no job.json in the archive yet).
TEST_F(LateJournalTest, AJobWhosePassFailedKeepsItsLateDataForThePassThatDoesNot) {
  Open();
  journal_->BeginPass({{"job-1", kLateT0, kLateT0 + 60'000}}, {});
  journal_->OnSamples(LateLoss("job-1", {5, 30}));
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 40'000, /*pass_ok=*/false).ok());
  auto drains = journal_->TakeLate();
  ASSERT_TRUE(drains.ok()) << drains.status();
  EXPECT_TRUE(drains->empty());
  // The next pass reads from 20 s (its last segment's end): 30 s is its own.
  journal_->BeginPass({{"job-1", kLateT0 + 20'000, kLateT0 + 60'000}}, {});
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 60'000).ok());
  drains = journal_->TakeLate();
  ASSERT_TRUE(drains.ok()) << drains.status();
  ASSERT_EQ(drains->size(), 1u);
  EXPECT_THAT(LateSeconds((*drains)[0].data), ::testing::ElementsAre(5));
}

// A journal kept for another archive starts afresh: the new archive takes
// every job's data from the store, from the start.
TEST_F(LateJournalTest, AnotherArchiveStartsAfresh) {
  auto open = [&](const std::string& target) {
    journal_.reset();
    auto journal = LateJournal::Open(dir_.path() + "/late", Options(&clock_, target));
    ASSERT_TRUE(journal.ok()) << journal.status();
    journal_ = *std::move(journal);
  };
  open("s3://old");
  journal_->BeginPass({{"job-1", kLateT0, kLateT0 + 60'000}}, {});
  journal_->OnSamples(LateLoss("job-1", {5}));
  ASSERT_TRUE(journal_->EndJob("job-1", kLateT0 + 60'000).ok());
  ASSERT_TRUE(journal_->TakeLate().ok());  // writes down where the pass read to
  open("s3://old");
  EXPECT_EQ(journal_->stats().rows, 1);
  EXPECT_EQ(journal_->ReadTo("job-1"), kLateT0 + 60'000);
  open("s3://new");
  EXPECT_EQ(journal_->stats().rows, 0);
  EXPECT_EQ(journal_->ReadTo("job-1"), 0);
}

// A line cut short by a crash is dropped; a damaged line elsewhere stops the
// server with the file and line named.
TEST_F(LateJournalTest, ACutLineIsDroppedADamagedOneNamed) {
  Open();
  journal_->OnSamples(LateLoss("job-1", {5}));
  journal_.reset();
  {
    std::ofstream out(dir_.path() + "/late/journal.jsonl", std::ios::app);
    out << "{\"job\":\"job-1\",\"series\":[{\"ns\"";
  }
  Open();
  EXPECT_EQ(journal_->stats().rows, 1);
  journal_->OnSamples(LateLoss("job-1", {6}));
  EXPECT_EQ(journal_->stats().rows, 2);
  journal_.reset();
  {
    std::ofstream out(dir_.path() + "/late/journal.jsonl", std::ios::app);
    out << "not json\n";  // line 4: after the target line and two data lines
  }
  auto broken = LateJournal::Open(dir_.path() + "/late", Options(&clock_, ""));
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("journal.jsonl, line 4"));
}

}  // namespace
}  // namespace trainwatch::archive
