// The live stream end to end, as `trainwatch server` and `run --ui` compose
// it: what goes through ingest (samples, log lines, job updates and the rule
// engine's statuses) reaches a client of GET /api/v1/live on a real socket.
#include "app/serve.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ingest/ingest.h"
#include "job/runner_identity.h"
#include "nlohmann/json.hpp"
#include "server/testing/raw_client.h"
#include "store/test_util.h"
#include "util/clock.h"
#include "util/testing/temp_dir.h"

namespace trainwatch::app {
namespace {

using server::testing::RawClient;
using server::testing::RawRequest;

struct Event {
  std::string event;
  nlohmann::json data;
};

std::optional<Event> NextEvent(RawClient& c) {
  while (true) {
    std::optional<std::string> block = c.ReadUntil("\n\n");
    if (!block) return std::nullopt;
    Event e;
    for (absl::string_view line : absl::StrSplit(*block, '\n', absl::SkipEmpty())) {
      if (absl::ConsumePrefix(&line, "event: ")) e.event = std::string(line);
      if (absl::ConsumePrefix(&line, "data: ")) e.data = nlohmann::json::parse(std::string(line));
    }
    if (!e.event.empty()) return e;
  }
}

TEST(ServeTest, WhatIngestTakesReachesTheLiveStream) {
  util::testing::TempDir dir;
  util::FakeClock clock(1736942400000);
  std::unique_ptr<store::Db> db = store::testing::OpenWriterOrDie(dir.path(), &clock);
  ASSERT_NE(db, nullptr);
  ingest::Ingest ingest(db.get());
  StoreServices services(*db, &ingest);
  ServeOptions options;
  options.server.port = 0;
  absl::StatusOr<std::unique_ptr<Serving>> serving =
      Serving::Start(options, services.backends(), &ingest);
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_TRUE(absl::StartsWith((*serving)->url(), "http://127.0.0.1:"));

  RawClient c((*serving)->server().port());
  ASSERT_TRUE(c.Send(RawRequest("GET", "/api/v1/health")));
  std::optional<api::HttpResponse> health = c.ReadResponse();
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(nlohmann::json::parse(health->body)["live_updates"], true);
  ASSERT_TRUE(c.Send(RawRequest("GET", "/api/v1/live?job=mnist-7")));
  std::optional<api::HttpResponse> head = c.ReadResponse();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  ASSERT_EQ(c.ReadUntil("\n\n"), "retry: 1000\n\n");

  model::JobRecord job;
  job.name = "mnist-7";
  job.creation_ms = job.last_modified_ms = clock.NowMs();
  job.runner = job::CurrentRunnerIdentity();  // alive: read as it is, not as Failed
  ASSERT_TRUE(ingest.CreateJob(job).ok());
  model::SeriesSamples loss;
  loss.key.ns = std::string(model::kTrainingJobsNamespace);
  loss.key.metric = "train:loss";
  loss.key.dimensions = {{"TrainingJobName", "mnist-7"}};
  loss.samples = {{clock.NowMs(), 0.25}};
  ASSERT_TRUE(ingest.Put(model::SampleBatch{{loss}}).ok());
  ASSERT_TRUE(
      ingest
          .PutLogs({{std::string(model::kTrainingJobsLogGroup), "mnist-7/algo-1-1736942400"},
                    {{clock.NowMs(), "loss: 0.25"}}})
          .ok());
  job.status = model::JobStatus::kCompleted;
  job.training_end_ms = clock.NowMs();
  ASSERT_TRUE(ingest.UpdateJob(job).ok());
  model::RuleStatus status;
  status.configuration_name = status.rule = "LossNotDecreasing";
  status.family = "debug";
  status.status = model::RuleStatusKind::kIssuesFound;
  status.details = "the loss stopped decreasing";
  ASSERT_TRUE(ingest.SetRuleStatuses("mnist-7", 1, {status}).ok());

  bool samples = false, logs = false, rules = false;
  while (!(samples && logs && rules)) {
    std::optional<Event> e = NextEvent(c);
    ASSERT_TRUE(e.has_value());
    if (e->event == "samples") {
      EXPECT_EQ(e->data["series"][0]["v"][0], 0.25);
      samples = true;
    } else if (e->event == "logs") {
      EXPECT_EQ(e->data["events"][0]["message"], "loss: 0.25");
      logs = true;
    } else if (e->event == "job") {
      // The record as GET /api/v1/jobs/mnist-7 answers it.
      EXPECT_EQ(e->data["name"], "mnist-7");
      if (e->data.contains("rule_statuses")) {
        EXPECT_EQ(e->data["status"], "Completed");
        EXPECT_EQ(e->data["rule_statuses"][0]["status"], "IssuesFound");
        rules = true;
      }
    } else {
      ADD_FAILURE() << e->event;
    }
  }
  serving->reset();  // ends the stream
  EXPECT_TRUE(c.WaitForClose());
}

}  // namespace
}  // namespace trainwatch::app
