// Db: open modes, job records and log events, through the public API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/log_event.h"
#include "store/db.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DbOptions Options(const std::string& dir, OpenMode mode, util::Clock* clock) {
  DbOptions o;
  o.data_dir = dir;
  o.mode = mode;
  o.clock = clock;
  o.background_thread = false;
  return o;
}

model::JobRecord Job(const std::string& name, int64_t t_ms) {
  model::JobRecord j;
  j.name = name;
  j.arn = model::TrainingJobArn(name);
  j.creation_ms = t_ms;
  j.last_modified_ms = t_ms;
  j.command = {"python3", "train.py"};
  j.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
  j.hyperparameters = {{"lr", "0.1"}};
  j.transitions = {{model::SecondaryStatus::kStarting, t_ms, std::nullopt, "Starting"}};
  j.runner.pid = 42;
  j.runner.boot_id = "b";
  return j;
}

class DbTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  util::FakeClock clock_{1736942400000};
  std::string data() const { return dir_.Sub("data"); }
  std::unique_ptr<Db> OpenOrDie(OpenMode mode) {
    auto db = Db::Open(Options(data(), mode, &clock_));
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
};

TEST_F(DbTest, JobsRoundTripAndNamesAreUniqueIgnoringCase) {
  auto db = OpenOrDie(OpenMode::kWriter);
  model::JobRecord job = Job("Mnist-7", clock_.NowMs());
  job.training_start_ms = 5;
  job.exit_code = 0;
  job.final_metrics = {{"train:loss", 0.25, 9}};
  ASSERT_TRUE(db->CreateJob(job).ok());
  auto dup = db->CreateJob(Job("mnist-7", 1));
  EXPECT_TRUE(absl::IsAlreadyExists(dup)) << dup;
  EXPECT_THAT(dup.message(), HasSubstr("mnist-7"));

  auto got = db->GetJob("MNIST-7");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, job);

  job.status = model::JobStatus::kCompleted;
  job.secondary_status = model::SecondaryStatus::kCompleted;
  ASSERT_TRUE(db->UpdateJob(job).ok());
  EXPECT_EQ(db->GetJob("mnist-7")->value().status, model::JobStatus::kCompleted);
  EXPECT_TRUE(absl::IsNotFound(db->UpdateJob(Job("ghost", 1))));
  EXPECT_FALSE(db->GetJob("ghost")->has_value());
}

// The runner and the rule engine both write a job's record: neither loses
// what the other wrote, whichever comes last.
TEST_F(DbTest, RuleStatusesAndRunnerUpdatesKeepEachOther) {
  auto db = OpenOrDie(OpenMode::kWriter);
  model::JobRecord job = Job("ruled", clock_.NowMs());
  job.rule_configurations = {{"nan", "ExplodingTensor", {}, {}}};
  ASSERT_TRUE(db->CreateJob(job).ok());
  model::RuleStatus status;
  status.configuration_name = "nan";
  status.rule = "ExplodingTensor";
  status.status = model::RuleStatusKind::kIssuesFound;
  status.details = "train:loss was NaN.";
  ASSERT_TRUE(db->SetRuleStatuses("ruled", 1, {status}).ok());

  job.status = model::JobStatus::kCompleted;  // the runner knows nothing of rule statuses
  job.secondary_status = model::SecondaryStatus::kCompleted;
  ASSERT_TRUE(db->UpdateJob(job).ok());
  model::JobRecord got = db->GetJob("ruled")->value();
  EXPECT_EQ(got.status, model::JobStatus::kCompleted);
  ASSERT_EQ(got.rule_statuses.size(), 1u);
  EXPECT_EQ(got.rule_statuses[0], status);

  status.details = "changed";
  ASSERT_TRUE(db->SetRuleStatuses("ruled", 1, {status}).ok());
  got = db->GetJob("ruled")->value();
  EXPECT_EQ(got.status, model::JobStatus::kCompleted);
  EXPECT_EQ(got.rule_statuses[0].details, "changed");
  EXPECT_TRUE(absl::IsNotFound(db->SetRuleStatuses("ghost", 1, {status})));
  EXPECT_TRUE(absl::IsNotFound(db->SetRuleStatuses("ruled", 2, {status})));
}

TEST_F(DbTest, EachHostOfAJobHasItsOwnRecordAndReadersSeeThemMerged) {
  auto db = OpenOrDie(OpenMode::kWriter);
  model::JobRecord second = Job("ddp-3", clock_.NowMs());
  second.host_index = 2;
  ASSERT_TRUE(db->CreateJob(second).ok());  // a host may start before host 1
  model::JobRecord first = Job("DDP-3", clock_.NowMs());
  ASSERT_TRUE(db->CreateJob(first).ok());
  model::JobRecord tenth = Job("ddp-3", clock_.NowMs());
  tenth.host_index = 10;
  ASSERT_TRUE(db->CreateJob(tenth).ok());
  // A job whose name extends this one's sorts between its keys' bytes.
  ASSERT_TRUE(db->CreateJob(Job("ddp-3-b", clock_.NowMs())).ok());
  absl::Status again = db->CreateJob(second);
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
  EXPECT_THAT(again.message(), HasSubstr("host algo-2"));
  model::JobRecord eleventh = tenth;
  eleventh.host_index = 11;
  EXPECT_TRUE(absl::IsNotFound(db->UpdateJob(eleventh)));

  auto got = db->GetJob("ddp-3");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  ASSERT_EQ((*got)->hosts.size(), 3u);
  EXPECT_EQ((*got)->hosts[0].host_index, 1);
  EXPECT_EQ((*got)->hosts[1].host_index, 2);
  EXPECT_EQ((*got)->hosts[2].host_index, 10);
  // A merged record is not written back: each host writes its own.
  absl::Status merged_write = db->UpdateJob(**got);
  EXPECT_TRUE(absl::IsInvalidArgument(merged_write)) << merged_write;

  std::vector<std::pair<std::string, size_t>> listed;
  auto view = db->View();
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(view->ForEachJob([&](model::JobRecord&& job) {
                    listed.emplace_back(job.name, job.hosts.size());
                    return true;
                  }).ok());
  EXPECT_THAT(listed, ElementsAre(std::pair<std::string, size_t>{"DDP-3", 3},
                                  std::pair<std::string, size_t>{"ddp-3-b", 0}));

  // A stop request survives the runner's own updates until it ends.
  second.stop_requested_ms = clock_.NowMs();
  ASSERT_TRUE(db->UpdateJob(second).ok());
  second.stop_requested_ms.reset();
  second.secondary_status = model::SecondaryStatus::kTraining;
  ASSERT_TRUE(db->UpdateJob(second).ok());
  got = db->GetJob("ddp-3");
  EXPECT_EQ(model::FindHost(**got, 2)->stop_requested_ms, clock_.NowMs());
  EXPECT_EQ((*got)->status, model::JobStatus::kStopping);
  second.status = model::JobStatus::kStopped;
  second.secondary_status = model::SecondaryStatus::kStopped;
  ASSERT_TRUE(db->UpdateJob(second).ok());
  EXPECT_EQ(model::FindHost(db->GetJob("ddp-3")->value(), 2)->stop_requested_ms, std::nullopt);
}

// The runner and the rule engine write one record at once; writes that meet
// in one group commit build on each other (a lost rule status once left a
// finished job's verdict InProgress).
TEST_F(DbTest, ConcurrentRunnerUpdatesAndRuleStatusesKeepEachOther) {
  auto db = OpenOrDie(OpenMode::kWriter);
  model::JobRecord job = Job("shared", clock_.NowMs());
  ASSERT_TRUE(db->CreateJob(job).ok());
  constexpr int kWrites = 1000;
  std::atomic<int> lost_statuses{0}, lost_updates{0};
  std::thread engine([&] {
    for (int i = 0; i < kWrites; ++i) {
      model::RuleStatus status;
      status.configuration_name = "nan";
      status.rule = "ExplodingTensor";
      status.details = absl::StrCat("evaluation ", i);
      if (!db->SetRuleStatuses("shared", 1, {status}).ok()) return;
      auto got = db->GetJob("shared");
      if (!got.ok() || !got->has_value() || (*got)->rule_statuses.size() != 1 ||
          (*got)->rule_statuses[0].details != status.details) {
        ++lost_statuses;
      }
    }
  });
  std::thread runner([&] {
    model::JobRecord update = job;
    for (int i = 0; i < kWrites; ++i) {
      update.failure_reason = absl::StrCat("update ", i);
      if (!db->UpdateJob(update).ok()) return;
      auto got = db->GetJob("shared");
      if (!got.ok() || !got->has_value() || (*got)->failure_reason != update.failure_reason) {
        ++lost_updates;
      }
    }
  });
  engine.join();
  runner.join();
  EXPECT_EQ(lost_statuses.load(), 0);
  EXPECT_EQ(lost_updates.load(), 0);
  model::JobRecord got = db->GetJob("shared")->value();
  ASSERT_EQ(got.rule_statuses.size(), 1u);
  EXPECT_EQ(got.rule_statuses[0].details, absl::StrCat("evaluation ", kWrites - 1));
  EXPECT_EQ(got.failure_reason, absl::StrCat("update ", kWrites - 1));
}

TEST_F(DbTest, ConcurrentCreatesOfOneNameLetExactlyOneWin) {
  auto db = OpenOrDie(OpenMode::kWriter);
  std::atomic<int> wins{0}, exists{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 20; ++k) {
        absl::Status s = db->CreateJob(Job(absl::StrFormat("job-%d", k), i));
        if (s.ok()) ++wins;
        if (absl::IsAlreadyExists(s)) ++exists;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 20);
  EXPECT_EQ(exists.load(), 8 * 20 - 20);
  auto view = db->View();
  ASSERT_TRUE(view.ok());
  int n = 0;
  ASSERT_TRUE(view->ForEachJob([&](model::JobRecord&&) { return ++n, true; }).ok());
  EXPECT_EQ(n, 20);
}

TEST_F(DbTest, LogEventsKeepTimestampThenArrivalOrder) {
  auto db = OpenOrDie(OpenMode::kWriter);
  model::LogBatch b{{"/aws/sagemaker/TrainingJobs", "job/algo-1-1"},
                    {{100, "a"}, {100, "b"}, {50, "early"}, {200, "c"}}};
  ASSERT_TRUE(db->PutLogs(b).ok());
  clock_.AdvanceMs(10);
  ASSERT_TRUE(db->PutLogs({b.stream, {{100, "d"}}}).ok());

  auto view = db->View();
  ASSERT_TRUE(view.ok());
  auto stream = view->GetLogStream(b.stream.group, b.stream.stream);
  ASSERT_TRUE(stream.ok() && stream->has_value());
  const LogStreamInfo& info = **stream;
  EXPECT_EQ(info.first_event_ms, 50);
  EXPECT_EQ(info.last_event_ms, 200);
  EXPECT_EQ(info.last_ingestion_ms, clock_.NowMs());
  EXPECT_EQ(info.creation_ms, clock_.NowMs() - 10);
  EXPECT_EQ(info.event_count, 5u);

  std::vector<std::string> messages;
  auto cursor = view->NewLogCursor(info);
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
    messages.push_back(cursor->event()->message);
  }
  EXPECT_THAT(messages, ElementsAre("early", "a", "b", "d", "c"));

  // Resume after a position, and walk backwards from one.
  cursor->SeekToFirst();
  cursor->Next();
  LogPosition a = cursor->position();
  cursor->Seek({a.t_ms, a.seq + 1});
  EXPECT_EQ(cursor->event()->message, "b");
  cursor->SeekForPrev({100, a.seq});
  EXPECT_EQ(cursor->event()->message, "a");
  cursor->Prev();
  EXPECT_EQ(cursor->event()->message, "early");
}

TEST_F(DbTest, LogStreamsListByPrefixBothWays) {
  auto db = OpenOrDie(OpenMode::kWriter);
  for (std::string s : {"job-a/algo-1-1", "job-a/algo-2-1", "job-b/algo-1-1", "job-ab/algo-1-1"}) {
    ASSERT_TRUE(db->PutLogs({{"g", s}, {{1, "x"}}}).ok());
  }
  ASSERT_TRUE(db->PutLogs({{"other", "job-a/algo-9"}, {{1, "x"}}}).ok());
  auto view = db->View();
  ASSERT_TRUE(view.ok());
  auto list = [&](std::string_view prefix, std::string_view after, bool desc) {
    std::vector<std::string> out;
    EXPECT_TRUE(view->ForEachLogStream("g", prefix, after, desc, [&](LogStreamInfo&& i) {
                      out.push_back(i.stream);
                      return true;
                    }).ok());
    return out;
  };
  EXPECT_THAT(list("job-a/", "", false), ElementsAre("job-a/algo-1-1", "job-a/algo-2-1"));
  EXPECT_THAT(list("job-a", "job-a/algo-1-1", false), ElementsAre("job-a/algo-2-1", "job-ab/algo-1-1"));
  EXPECT_THAT(list("", "", true),
              ElementsAre("job-b/algo-1-1", "job-ab/algo-1-1", "job-a/algo-2-1", "job-a/algo-1-1"));
  EXPECT_THAT(list("", "job-ab/algo-1-1", true), ElementsAre("job-a/algo-2-1", "job-a/algo-1-1"));
  EXPECT_TRUE(view->GetLogGroup("g")->has_value());
  EXPECT_FALSE(view->GetLogGroup("nope")->has_value());
  std::vector<std::string> groups;
  auto list_groups = [&](std::string_view prefix) {
    std::vector<std::string> out;
    EXPECT_TRUE(view->ForEachLogGroup(prefix, [&](LogGroupInfo&& g) {
                      out.push_back(g.name);
                      return true;
                    }).ok());
    return out;
  };
  EXPECT_THAT(list_groups(""), ElementsAre("g", "other"));
  EXPECT_THAT(list_groups("ot"), ElementsAre("other"));
  EXPECT_THAT(list_groups("x"), ElementsAre());
}

TEST_F(DbTest, LogGroupsAndStreamsAreRecordsOfTheirOwn) {
  auto db = OpenOrDie(OpenMode::kWriter);
  EXPECT_EQ(*db->CreateLogStream({"g", "s"}), LogChange::kNoGroup);
  EXPECT_EQ(*db->CreateLogGroup("g"), LogChange::kDone);
  EXPECT_EQ(*db->CreateLogGroup("g"), LogChange::kExists);
  EXPECT_EQ(*db->CreateLogStream({"g", "s"}), LogChange::kDone);
  EXPECT_EQ(*db->CreateLogStream({"g", "s"}), LogChange::kExists);
  EXPECT_EQ(*db->SetLogRetention("nope", 1), LogChange::kNoGroup);
  EXPECT_EQ(*db->SetLogRetention("g", 7), LogChange::kDone);
  {
    auto view = db->View();
    ASSERT_TRUE(view.ok());
    auto group = view->GetLogGroup("g");
    ASSERT_TRUE(group.ok() && group->has_value());
    EXPECT_EQ((*group)->creation_ms, clock_.NowMs());
    EXPECT_EQ((*group)->retention_days, 7);
    auto stream = view->GetLogStream("g", "s");
    ASSERT_TRUE(stream.ok() && stream->has_value()) << "an empty stream is listed";
    EXPECT_EQ((*stream)->event_count, 0u);
    EXPECT_FALSE((*stream)->first_event_ms.has_value());
  }
  // Records survive a reopen; a deleted stream takes its events with it and
  // a stream of the same name starts empty.
  ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{clock_.NowMs(), "one"}}}).ok());
  db.reset();
  db = OpenOrDie(OpenMode::kWriter);
  EXPECT_EQ(*db->CreateLogGroup("g"), LogChange::kExists);
  EXPECT_EQ(*db->DeleteLogStream({"g", "nope"}), LogChange::kNoStream);
  EXPECT_EQ(*db->DeleteLogStream({"nope", "s"}), LogChange::kNoGroup);
  EXPECT_EQ(*db->DeleteLogStream({"g", "s"}), LogChange::kDone);
  EXPECT_EQ(*db->DeleteLogStream({"g", "s"}), LogChange::kNoStream);
  EXPECT_EQ(*db->CreateLogStream({"g", "s"}), LogChange::kDone);
  {
    auto view = db->View();
    auto stream = view->GetLogStream("g", "s");
    ASSERT_TRUE(stream.ok() && stream->has_value());
    auto cursor = view->NewLogCursor(**stream);
    cursor->SeekToFirst();
    EXPECT_FALSE(cursor->Valid()) << "the old stream's events are gone";
  }
  // Deleting a group deletes its streams, also one created in the same
  // commit as the delete would be.
  ASSERT_TRUE(db->PutLogs({{"g", "t"}, {{clock_.NowMs(), "two"}}}).ok());
  EXPECT_EQ(*db->DeleteLogGroup("g"), LogChange::kDone);
  EXPECT_EQ(*db->DeleteLogGroup("g"), LogChange::kNoGroup);
  {
    auto view = db->View();
    EXPECT_FALSE(view->GetLogGroup("g")->has_value());
    EXPECT_FALSE(view->GetLogStream("g", "s")->has_value());
    EXPECT_FALSE(view->GetLogStream("g", "t")->has_value());
  }
  // A job's stream is created with its first events, group included.
  ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{clock_.NowMs(), "again"}}}).ok());
  auto view = db->View();
  EXPECT_TRUE(view->GetLogGroup("g")->has_value());
  EXPECT_EQ((*view->GetLogStream("g", "s"))->event_count, 1u);
}

TEST_F(DbTest, LogRetentionDeletesOlderEventsAtTheNextMaintain) {
  std::unique_ptr<Db> db = OpenOrDie(OpenMode::kWriter);  // Maintain() by hand
  ASSERT_NE(db, nullptr);
  const int64_t day = 86400 * 1000LL;
  const int64_t now = clock_.NowMs();
  ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{now - 3 * day, "old"}, {now - day / 2, "new"}}}).ok());
  ASSERT_TRUE(db->PutLogs({{"kept", "s"}, {{now - 3 * day, "old"}}}).ok());
  ASSERT_TRUE(db->Maintain().ok());
  EXPECT_EQ((*db->View()->GetLogStream("g", "s"))->event_count, 2u) << "no retention yet";
  ASSERT_EQ(*db->SetLogRetention("g", 1), LogChange::kDone);
  ASSERT_TRUE(db->Maintain().ok());
  auto view = db->View();
  auto stream = view->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 1u);
  EXPECT_EQ((*stream)->stored_bytes, 3u);
  EXPECT_EQ((*stream)->first_event_ms, now - day / 2);
  auto cursor = view->NewLogCursor(**stream);
  cursor->SeekToFirst();
  ASSERT_TRUE(cursor->Valid());
  EXPECT_EQ(cursor->event()->message, "new");
  EXPECT_EQ((*view->GetLogStream("kept", "s"))->event_count, 1u) << "other groups keep theirs";
  // An event older than the retention is not stored (nor counted).
  ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{now - 2 * day, "late"}}}).ok());
  EXPECT_EQ((*db->View()->GetLogStream("g", "s"))->event_count, 1u);
  // A day later the rest expires too, and the stream stays, empty.
  clock_.AdvanceMs(25 * 3600 * 1000LL);
  ASSERT_TRUE(db->Maintain().ok());
  stream = db->View()->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 0u);
  EXPECT_FALSE((*stream)->first_event_ms.has_value());
}

// The archive's hold (Db::SetRetentionHold) keeps the training jobs' log
// events it has not taken yet, as it keeps raw samples; other groups expire
// as their retention says.
TEST_F(DbTest, LogRetentionKeepsHeldEventsUntilTheHoldMoves) {
  std::unique_ptr<Db> db = OpenOrDie(OpenMode::kWriter);  // Maintain() by hand
  ASSERT_NE(db, nullptr);
  const int64_t day = 86400 * 1000LL;
  const int64_t now = clock_.NowMs();
  const std::string jobs(model::kTrainingJobsLogGroup);
  for (const std::string& group : {jobs, std::string("g")}) {
    ASSERT_TRUE(
        db->PutLogs({{group, "s"}, {{now - 3 * day, "oldest"}, {now - 2 * day, "old"}}}).ok());
    ASSERT_EQ(*db->SetLogRetention(group, 1), LogChange::kDone);
  }
  db->SetRetentionHold(now - 2 * day);  // archived up to two days ago
  ASSERT_TRUE(db->Maintain().ok());
  auto stream = db->View()->GetLogStream(jobs, "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 1u) << "the held event stays";
  EXPECT_EQ((*stream)->first_event_ms, now - 2 * day);
  EXPECT_EQ((*db->View()->GetLogStream("g", "s"))->event_count, 0u) << "another group is not held";
  db->SetRetentionHold(Db::kNoHold);
  clock_.AdvanceMs(3600 * 1000LL);  // expiry runs hourly
  ASSERT_TRUE(db->Maintain().ok());
  EXPECT_EQ((*db->View()->GetLogStream(jobs, "s"))->event_count, 0u);
}

TEST_F(DbTest, SecondWriterIsRefusedWithTheHoldersCommand) {
  DbOptions o = Options(data(), OpenMode::kWriter, &clock_);
  o.command = "trainwatch run --name first";
  auto first = Db::Open(o);
  ASSERT_TRUE(first.ok());
  auto second = Db::Open(Options(data(), OpenMode::kWriter, &clock_));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status()));
  EXPECT_THAT(second.status().message(), HasSubstr("trainwatch run --name first"));
}

TEST_F(DbTest, ReaderOfMissingFolderIsNotFoundWithAHint) {
  auto db = Db::Open(Options(dir_.Sub("never-written"), OpenMode::kReader, &clock_));
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::IsNotFound(db.status()));
  EXPECT_THAT(db.status().message(), HasSubstr("--data"));
  auto db2 = Db::Open(Options(dir_.Sub("never-written"), OpenMode::kWriterIfFree, &clock_));
  EXPECT_TRUE(absl::IsNotFound(db2.status()));
}

TEST_F(DbTest, ReaderFollowsTheWriterAndCannotWrite) {
  auto writer = OpenOrDie(OpenMode::kWriter);
  ASSERT_TRUE(writer->CreateJob(Job("a", 1)).ok());
  auto reader = OpenOrDie(OpenMode::kReader);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->writable());
  EXPECT_TRUE(reader->GetJob("a")->has_value());

  ASSERT_TRUE(writer->CreateJob(Job("b", 2)).ok());
  ASSERT_TRUE(writer->PutLogs({{"g", "s"}, {{1, "line"}}}).ok());
  EXPECT_TRUE(reader->GetJob("b")->has_value());  // View() caught up
  auto view = reader->View();
  ASSERT_TRUE(view.ok());
  auto stream = view->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 1u);

  auto s = reader->UpdateJob(Job("a", 3));
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_THAT(s.message(), HasSubstr("read-only"));
  EXPECT_THAT(reader->WriterDescription(), HasSubstr(std::to_string(::getpid())));
}

// An agent that resends a batch (its answer was lost, the server restarted)
// gets it written once: the batch and the delivery note commit together.
TEST_F(DbTest, DeliveriesAreWrittenExactlyOnceAcrossRetriesAndReopen) {
  const Delivery first{"host-a/1234", 1}, second{"host-a/1234", 2}, other{"host-b/99", 1};
  {
    auto db = OpenOrDie(OpenMode::kWriter);
    EXPECT_EQ(*db->DeliveredUpTo("host-a/1234"), 0);
    EXPECT_TRUE(*db->CreateJob(Job("a", 1), first));
    EXPECT_FALSE(*db->CreateJob(Job("a", 1), first)) << "a resent create is not AlreadyExists";
    EXPECT_TRUE(*db->PutLogs({{"g", "s"}, {{1, "line"}}}, second));
    EXPECT_FALSE(*db->PutLogs({{"g", "s"}, {{1, "line"}}}, second));
    EXPECT_FALSE(*db->PutLogs({{"g", "s"}, {{1, "line"}}}, first)) << "older than the note";
    EXPECT_TRUE(*db->PutLogs({{"g", "s"}, {{2, "other"}}}, other)) << "agents are separate";
    EXPECT_EQ(*db->DeliveredUpTo("host-a/1234"), 2);
    // A batch that fails is not noted: the same number can be sent again.
    auto dup = db->CreateJob(Job("a", 1), Delivery{"host-c/1", 1});
    EXPECT_TRUE(absl::IsAlreadyExists(dup.status())) << dup.status();
    EXPECT_EQ(*db->DeliveredUpTo("host-c/1"), 0);
    EXPECT_TRUE(absl::IsInvalidArgument(db->PutLogs({{"g", "s"}, {{3, "x"}}}, Delivery{"", 1}).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(db->PutLogs({{"g", "s"}, {{3, "x"}}}, Delivery{"x", 0}).status()));
  }
  auto db = OpenOrDie(OpenMode::kWriter);
  EXPECT_EQ(*db->DeliveredUpTo("host-a/1234"), 2);
  EXPECT_FALSE(*db->PutLogs({{"g", "s"}, {{1, "line"}}}, second)) << "after reopen";
  auto view = db->View();
  ASSERT_TRUE(view.ok());
  auto stream = view->GetLogStream("g", "s");
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->event_count, 2u);  // "line" once, "other" once
}

// The same batch sent twice at once (a retry racing the original) is written once.
TEST_F(DbTest, ConcurrentDuplicateDeliveriesWriteOnce) {
  auto db = OpenOrDie(OpenMode::kWriter);
  for (int64_t seq = 1; seq <= 50; ++seq) {
    const Delivery d{"racer", seq};
    std::vector<std::thread> threads;
    std::atomic<int> written{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        auto r = db->PutLogs({{"g", "race"}, {{seq, "event"}}}, d);
        if (r.ok() && *r) ++written;
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(written.load(), 1) << "seq " << seq;
  }
  auto view = db->View();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view->GetLogStream("g", "race"))->event_count, 50u);
}

// A follower thread that holds a view and asks for another (a query helper
// that calls GetJob, say) must not wait for itself to catch up: it reads
// what its view reads, and catches up once the view is gone.
TEST_F(DbTest, FollowerViewInsideAViewDoesNotWaitForItself) {
  auto writer = OpenOrDie(OpenMode::kWriter);
  ASSERT_TRUE(writer->CreateJob(Job("a", 1)).ok());
  auto reader = OpenOrDie(OpenMode::kReader);
  {
    auto outer = reader->View();
    ASSERT_TRUE(outer.ok());
    ASSERT_TRUE(writer->CreateJob(Job("b", 2)).ok());
    auto inner = reader->GetJob("b");  // would block forever if it tried to catch up
    ASSERT_TRUE(inner.ok());
    EXPECT_FALSE(inner->has_value());
    EXPECT_TRUE(reader->GetJob("a")->has_value());
  }
  EXPECT_TRUE(reader->GetJob("b")->has_value());
}

TEST_F(DbTest, WriterIfFreeWritesWhenFreeAndFollowsOtherwise) {
  { auto w = OpenOrDie(OpenMode::kWriter); ASSERT_TRUE(w->CreateJob(Job("a", 1)).ok()); }
  {
    auto db = OpenOrDie(OpenMode::kWriterIfFree);
    EXPECT_TRUE(db->writable());
    model::JobRecord a = Job("a", 1);
    a.status = model::JobStatus::kFailed;
    ASSERT_TRUE(db->UpdateJob(a).ok());
  }
  auto writer = OpenOrDie(OpenMode::kWriter);
  auto follower = OpenOrDie(OpenMode::kWriterIfFree);
  EXPECT_FALSE(follower->writable());
  EXPECT_EQ(follower->GetJob("a")->value().status, model::JobStatus::kFailed);
}

TEST_F(DbTest, EverythingSurvivesReopen) {
  {
    auto db = OpenOrDie(OpenMode::kWriter);
    ASSERT_TRUE(db->CreateJob(Job("a", 1)).ok());
    ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{1, "one"}}}).ok());
  }
  auto db = OpenOrDie(OpenMode::kWriter);
  ASSERT_TRUE(db->PutLogs({{"g", "s"}, {{2, "two"}}}).ok());
  auto view = db->View();
  auto info = view->GetLogStream("g", "s");
  ASSERT_TRUE(info.ok() && info->has_value());
  EXPECT_EQ((*info)->event_count, 2u);
  std::vector<uint64_t> seqs;
  auto c = view->NewLogCursor(**info);
  for (c->SeekToFirst(); c->Valid(); c->Next()) seqs.push_back(c->position().seq);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_LT(seqs[0], seqs[1]);  // sequence numbers never repeat across restarts
}

// Requests naming streams and groups that do not exist (deletes here) do not
// grow what the writer remembers without bound; what exists is kept.
TEST(LogWriterTest, RemembersABoundedNumberOfMissingStreams) {
  testing::TempDir dir;
  kv::KvOptions o;
  o.path = dir.path() + "/kv";
  absl::StatusOr<std::unique_ptr<kv::Kv>> kv = kv::Kv::Open(o);
  ASSERT_TRUE(kv.ok()) << kv.status();
  LogWriter writer(kv->get());
  ASSERT_TRUE(writer.Load().ok());
  kv::WriteBatch batch;
  ASSERT_EQ(*writer.CreateGroup("g", 1000, &batch), LogChange::kDone);
  ASSERT_EQ(*writer.CreateStream({"g", "kept"}, 1000, &batch), LogChange::kDone);
  ASSERT_TRUE((*kv)->Write(&batch, {}).ok());
  for (int i = 0; i < 20000; ++i) {
    kv::WriteBatch b;
    absl::StatusOr<LogChange> change = writer.DeleteStream({"g", "nope-" + std::to_string(i)}, &b);
    ASSERT_TRUE(change.ok()) << change.status();
    writer.ForgetMisses();  // as each commit does
  }
  EXPECT_LE(writer.remembered(), LogWriter::kMaxRememberedMisses + 3);
  kv::WriteBatch b;
  absl::StatusOr<LogChange> again = writer.CreateStream({"g", "kept"}, 2000, &b);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, LogChange::kExists);
}

}  // namespace
}  // namespace trainwatch::store
