// The live hub's history (order, resume, reset, bounds) and the events a
// LiveStream makes of it.
#include "api/live/live_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "api/live/live_stream.h"
#include "api/testing/fake_backend.h"
#include "nlohmann/json.hpp"
#include "util/clock.h"

namespace trainwatch::api::live {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1'700'000'000'000;

model::SampleBatch Samples(const std::string& job, int64_t t_ms, double v,
                           const std::string& metric = "train:loss") {
  model::SeriesSamples s;
  s.key.ns = std::string(model::kTrainingJobsNamespace);
  s.key.metric = metric;
  s.key.dimensions = {{"TrainingJobName", job}};
  s.samples = {{t_ms, v}};
  model::SampleBatch batch;
  batch.series.push_back(std::move(s));
  return batch;
}

model::SampleBatch HostSample(const std::string& job, int64_t t_ms, double v) {
  model::SeriesSamples s;
  s.key.ns = std::string(model::kTrainingJobsNamespace);
  s.key.metric = "CPUUtilization";
  s.key.dimensions = {{"Host", job + "/algo-1"}};
  s.key.unit = "Percent";
  s.samples = {{t_ms, v}};
  model::SampleBatch batch;
  batch.series.push_back(std::move(s));
  return batch;
}

model::LogBatch Logs(const std::string& job, const std::string& message,
                     const std::string& stream = "algo-1-1700000000") {
  return {{std::string(model::kTrainingJobsLogGroup), job + "/" + stream}, {{kNow, message}}};
}

model::JobRecord Job(const std::string& name) {
  model::JobRecord job;
  job.name = name;
  job.creation_ms = job.last_modified_ms = kNow;
  return job;
}

std::vector<uint64_t> Seqs(const LiveHub::Read& read) {
  std::vector<uint64_t> out;
  for (const auto& e : read.entries) out.push_back(e->seq);
  return out;
}

TEST(LiveHubTest, LogStreamsBelongToTheirJob) {
  EXPECT_EQ(JobOfLogStream({"/aws/sagemaker/TrainingJobs", "mnist-7/rules"}), "mnist-7");
  EXPECT_EQ(JobOfLogStream({"/aws/sagemaker/TrainingJobs", "mnist-7/algo-1-17"}), "mnist-7");
  EXPECT_EQ(JobOfLogStream({"my-group", "mnist-7/algo-1-17"}), "");
}

TEST(LiveHubTest, ReadsInOrderAndResumesAfterAPosition) {
  LiveHub hub;
  for (const char* job : {"a", "b", "unrelated-series"}) hub.KnowJob(job);
  LiveHub::Filter a{.jobs = {"a"}};
  EXPECT_EQ(hub.head(), 0u);
  hub.OnSamples(Samples("a", kNow, 1));                 // 1
  hub.OnLogs(Logs("b", "other job"));                   // 2
  hub.OnLogs(Logs("a", "line"));                        // 3
  hub.OnJob(Job("a"));                                  // 4
  hub.OnSamples(HostSample("A", kNow, 50));             // 5: names compare case-insensitively
  hub.OnSamples(Samples("unrelated-series", kNow, 1));  // 6
  model::SampleBatch none;
  hub.OnSamples(none);  // nothing
  EXPECT_EQ(hub.head(), 6u);

  LiveHub::Read all = hub.ReadAfter(a, 0, 1 << 20, 1 << 20);
  EXPECT_FALSE(all.reset);
  EXPECT_EQ(Seqs(all), (std::vector<uint64_t>{1, 3, 4, 5}));
  EXPECT_EQ(all.next, 6u);  // caught up: the head

  // Resuming after any position gives exactly what follows it.
  for (uint64_t after = 0; after <= 6; ++after) {
    std::vector<uint64_t> want;
    for (uint64_t s : Seqs(all)) {
      if (s > after) want.push_back(s);
    }
    EXPECT_EQ(Seqs(hub.ReadAfter(a, after, 1 << 20, 1 << 20)), want) << after;
  }
  // Small reads: a prefix, then the rest after its last entry.
  LiveHub::Read first = hub.ReadAfter(a, 0, 1, 1 << 20);
  EXPECT_EQ(Seqs(first), (std::vector<uint64_t>{1}));
  EXPECT_EQ(first.next, 1u);
  EXPECT_EQ(Seqs(hub.ReadAfter(a, first.next, 1, 1 << 20)), (std::vector<uint64_t>{3}));

  // Two jobs at once: merged in sequence order.
  LiveHub::Filter ab{.jobs = {"b", "a", "A"}};
  EXPECT_EQ(Seqs(hub.ReadAfter(ab, 0, 1 << 20, 1 << 20)), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  // No job: the changes of every job only.
  hub.OnRuleStatuses("b", 1, {});  // 7
  EXPECT_EQ(Seqs(hub.ReadAfter(LiveHub::Filter{}, 0, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{4, 7}));
}

TEST(LiveHubTest, APositionNoLongerHeldOrUnknownIsAReset) {
  LiveHub hub(LiveOptions{.history_bytes_per_job = 2000, .job_changes_held = 2});
  hub.KnowJob("a");
  LiveHub::Filter a{.jobs = {"a"}};
  for (int i = 0; i < 100; ++i) hub.OnLogs(Logs("a", std::string(100, 'x')));
  EXPECT_LE(hub.HeldBytes(), 2000u);
  LiveHub::Read old = hub.ReadAfter(a, 10, 1 << 20, 1 << 20);
  EXPECT_TRUE(old.reset);
  EXPECT_EQ(old.reason, "position no longer held");
  EXPECT_EQ(old.next, 100u);
  EXPECT_TRUE(old.entries.empty());
  // Still held: read normally.
  LiveHub::Read recent = hub.ReadAfter(a, 95, 1 << 20, 1 << 20);
  EXPECT_FALSE(recent.reset);
  EXPECT_EQ(Seqs(recent), (std::vector<uint64_t>{96, 97, 98, 99, 100}));
  // A position this hub never gave (another process's).
  EXPECT_TRUE(hub.ReadAfter(a, 1000, 1 << 20, 1 << 20).reset);
  // A reader too far behind is reset even though its entries are held.
  LiveHub::Read behind = hub.ReadAfter(a, 95, 1 << 20, 300);
  EXPECT_TRUE(behind.reset);
  EXPECT_EQ(behind.reason, "too far behind");
  // Job changes: only the last two are held.
  for (int i = 0; i < 3; ++i) hub.OnJob(Job("a"));  // 101..103
  EXPECT_TRUE(hub.ReadAfter(LiveHub::Filter{}, 100, 1 << 20, 1 << 20).reset);
  EXPECT_EQ(Seqs(hub.ReadAfter(LiveHub::Filter{}, 101, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{102, 103}));
}

TEST(LiveHubTest, TheTotalBoundEvictsTheOldestJobFirst) {
  LiveHub hub(LiveOptions{.history_bytes_per_job = 1 << 20, .history_bytes_total = 3000});
  hub.KnowJob("old");
  hub.KnowJob("new");
  for (int i = 0; i < 10; ++i) hub.OnLogs(Logs("old", std::string(200, 'o')));
  for (int i = 0; i < 10; ++i) hub.OnLogs(Logs("new", std::string(200, 'n')));
  EXPECT_LE(hub.HeldBytes(), 3000u);
  // "old" is gone whole: a reader of it from before is reset, one from now is not.
  EXPECT_TRUE(hub.ReadAfter({.jobs = {"old"}}, 5, 1 << 20, 1 << 20).reset);
  EXPECT_FALSE(hub.ReadAfter({.jobs = {"old"}}, 20, 1 << 20, 1 << 20).reset);
  EXPECT_EQ(Seqs(hub.ReadAfter({.jobs = {"new"}}, 19, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{20}));
  // It comes back with new data; its old positions stay unknown.
  hub.OnLogs(Logs("old", "again"));
  EXPECT_TRUE(hub.ReadAfter({.jobs = {"old"}}, 5, 1 << 20, 1 << 20).reset);
  EXPECT_EQ(Seqs(hub.ReadAfter({.jobs = {"old"}}, 20, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{21}));
}

// A job's samples and logs are held once the hub has seen its record, or a
// reader has followed it; before, nobody can stream them (a new stream
// starts at the head), and nothing is copied.
TEST(LiveHubTest, OnlyTheDataOfKnownOrFollowedJobsIsHeld) {
  LiveHub hub;
  hub.OnSamples(Samples("a", kNow, 1));
  hub.OnLogs(Logs("a", "before its record"));
  EXPECT_EQ(hub.head(), 0u);
  EXPECT_EQ(hub.HeldBytes(), 0u);
  hub.OnJob(Job("A"));                   // 1 (names compare case-insensitively)
  hub.OnSamples(Samples("a", kNow, 2));  // 2
  hub.OnSamples(Samples("b", kNow, 1));
  EXPECT_EQ(Seqs(hub.ReadAfter({.jobs = {"a"}}, 0, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{1, 2}));
  // A reader of "b" holds it from then on, also after it went away (so that
  // it resumes exactly when it reconnects).
  hub.RemoveWaiter(hub.AddWaiter({.jobs = {"B"}}, [] {}));
  hub.OnLogs(Logs("b", "now held"));  // 3
  EXPECT_EQ(Seqs(hub.ReadAfter({.jobs = {"b"}}, 0, 1 << 20, 1 << 20)),
            (std::vector<uint64_t>{3}));
  // Rule statuses are a record too; KnowJob (the server's jobs in progress
  // at start) holds a job's data without an entry of its own.
  hub.OnRuleStatuses("c", 1, {});        // 4
  hub.OnSamples(Samples("c", kNow, 1));  // 5
  hub.KnowJob("d");
  hub.OnSamples(Samples("d", kNow, 1));  // 6
  EXPECT_EQ(hub.head(), 6u);
}

TEST(LiveHubTest, WaitersAreWokenForWhatTheyFollowUntilRemoved) {
  LiveHub hub;
  int a_wakes = 0, all_wakes = 0;
  uint64_t a = hub.AddWaiter({.jobs = {"A"}}, [&] { ++a_wakes; });
  uint64_t all = hub.AddWaiter({}, [&] { ++all_wakes; });
  hub.OnSamples(Samples("a", kNow, 1));
  hub.OnLogs(Logs("b", "x"));
  hub.OnJob(Job("b"));
  EXPECT_EQ(a_wakes, 1);
  EXPECT_EQ(all_wakes, 1);
  hub.RemoveWaiter(a);
  hub.RemoveWaiter(all);
  hub.OnJob(Job("a"));
  EXPECT_EQ(a_wakes, 1);
  EXPECT_EQ(all_wakes, 1);
}

// The events of a stream's text: (id, event, data) of each.
struct Ev {
  std::string id, event;
  nlohmann::json data;
};
std::vector<Ev> Parse(const std::string& text) {
  std::vector<Ev> out;
  for (absl::string_view block : absl::StrSplit(text, "\n\n", absl::SkipEmpty())) {
    Ev ev;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::ConsumePrefix(&line, "id: ")) ev.id = std::string(line);
      if (absl::ConsumePrefix(&line, "event: ")) ev.event = std::string(line);
      if (absl::ConsumePrefix(&line, "data: ")) ev.data = nlohmann::json::parse(std::string(line));
    }
    if (!ev.event.empty()) out.push_back(std::move(ev));
  }
  return out;
}

TEST(LiveStreamTest, CoalescesWhatOnePullFindsAndResumesByEventId) {
  util::FakeClock clock(kNow);
  testing::FakeBackend backend(clock);
  model::JobRecord record = Job("mnist-7");
  backend.SetJob(record);
  LiveHub hub(LiveOptions{.clock = &clock});
  LiveStream stream(&hub, &backend, {.jobs = {"mnist-7"}}, std::nullopt);
  int wakes = 0;
  stream.Start([&] { ++wakes; });
  std::string first = stream.Pull(64 * 1024);
  EXPECT_EQ(first, "retry: 1000\n\n");  // nothing yet: never the history
  EXPECT_EQ(stream.Pull(64 * 1024), "");

  hub.OnSamples(Samples("mnist-7", kNow + 2, 0.5));
  hub.OnSamples(Samples("mnist-7", kNow + 1, 0.9));
  hub.OnSamples(Samples("mnist-7", kNow + 3, 7, "validation:accuracy"));
  hub.OnLogs(Logs("mnist-7", "epoch 1 loss: 0.5"));
  hub.OnLogs(Logs("mnist-7", "epoch 2 loss: 0.4"));
  hub.OnJob(record);
  hub.OnRuleStatuses("mnist-7", 1, {});
  EXPECT_EQ(wakes, 7);
  std::vector<Ev> events = Parse(stream.Pull(64 * 1024));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "samples");
  EXPECT_EQ(events[0].id, hub.epoch() + ".3");
  ASSERT_EQ(events[0].data["series"].size(), 2u);
  EXPECT_EQ(events[0].data["job"], "mnist-7");
  EXPECT_EQ(events[0].data["series"][0]["metric"], "train:loss");
  EXPECT_EQ(events[0].data["series"][0]["dimensions"]["TrainingJobName"], "mnist-7");
  EXPECT_EQ(events[0].data["series"][0]["t"], (std::vector<int64_t>{kNow + 1, kNow + 2}));
  EXPECT_EQ(events[0].data["series"][0]["v"], (std::vector<double>{0.9, 0.5}));
  EXPECT_EQ(events[1].event, "logs");
  EXPECT_EQ(events[1].id, hub.epoch() + ".5");
  EXPECT_EQ(events[1].data["stream"], "mnist-7/algo-1-1700000000");
  ASSERT_EQ(events[1].data["events"].size(), 2u);
  EXPECT_EQ(events[1].data["events"][1]["message"], "epoch 2 loss: 0.4");
  EXPECT_EQ(events[1].data["events"][1]["ingestion_ms"], kNow);
  EXPECT_EQ(events[2].event, "job");  // two changes, one event: the record now
  EXPECT_EQ(events[2].id, hub.epoch() + ".7");
  EXPECT_EQ(events[2].data["name"], "mnist-7");
  EXPECT_EQ(events[2].data["status"], "InProgress");

  // A reconnect with the id of the logs event gets the job event only.
  LiveStream again(&hub, &backend, {.jobs = {"mnist-7"}}, events[1].id);
  again.Start([] {});
  std::vector<Ev> resumed = Parse(again.Pull(64 * 1024));
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].event, "job");
  EXPECT_EQ(resumed[0].id, events[2].id);
  // With an id of another server (or garbage): reset, then live.
  for (std::string id :
       {std::string("0123.5"), std::string("nonsense"), hub.epoch() + ".x", hub.epoch() + ".99"}) {
    LiveStream other(&hub, &backend, {.jobs = {"mnist-7"}}, id);
    other.Start([] {});
    std::vector<Ev> got = Parse(other.Pull(64 * 1024));
    ASSERT_EQ(got.size(), 1u) << id;
    EXPECT_EQ(got[0].event, "reset") << id;
    EXPECT_EQ(got[0].id, hub.epoch() + ".7") << id;
    EXPECT_EQ(other.Pull(64 * 1024), "") << id;
  }
  stream.Close();
  hub.OnSamples(Samples("mnist-7", kNow + 4, 1));
  EXPECT_EQ(wakes, 7);  // closed: never woken again
}

TEST(LiveStreamTest, AllJobsStreamCarriesOnlyJobEvents) {
  util::FakeClock clock(kNow);
  testing::FakeBackend backend(clock);
  backend.SetJob(Job("a"));
  LiveHub hub;
  LiveStream stream(&hub, &backend, {}, std::nullopt);
  stream.Start([] {});
  EXPECT_EQ(stream.Pull(1 << 16), "retry: 1000\n\n");
  hub.OnSamples(Samples("a", kNow, 1));
  hub.OnJob(Job("a"));
  hub.OnJob(Job("gone"));  // no record to send: skipped
  std::vector<Ev> events = Parse(stream.Pull(1 << 16));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "job");
  EXPECT_EQ(events[0].data["name"], "a");
}

TEST(LiveApiTest, RefusesBadRequests) {
  LiveHub hub;
  LiveApi api(&hub, nullptr);
  HttpRequest request;
  request.method = "GET";
  request.target = "/api/v1/live?job=a&job=b";
  HttpResponse ok = api.Handle(request);
  EXPECT_EQ(ok.status, 200);
  ASSERT_NE(ok.stream, nullptr);
  EXPECT_EQ(*ok.headers.Find("Content-Type"), "text/event-stream");
  EXPECT_EQ(*ok.headers.Find("Cache-Control"), "no-cache");
  request.target = "/api/v1/live?job=bad_name";
  EXPECT_THAT(api.Handle(request).body, HasSubstr("bad_name"));
  request.target = "/api/v1/live?jobs=a";
  EXPECT_EQ(api.Handle(request).status, 400);
  request.target = "/api/v1/live";
  request.method = "POST";
  EXPECT_EQ(api.Handle(request).status, 405);
}

}  // namespace
}  // namespace trainwatch::api::live
