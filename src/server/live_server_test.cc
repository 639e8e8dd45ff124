// GET /api/v1/live over real loopback sockets: the events as ingest's
// observer sees data, resuming with Last-Event-ID, a client that does not
// read, heartbeats, and stopping the server with streams open.
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "api/live/live_hub.h"
#include "api/live/live_stream.h"
#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/router.h"
#include "server/server.h"
#include "server/testing/raw_client.h"
#include "util/clock.h"

namespace trainwatch::server {
namespace {

using testing::RawClient;
using testing::RawRequest;

constexpr int64_t kNow = 1'700'000'000'000;

struct Event {
  std::string id, event;
  nlohmann::json data;
  std::string raw;
};

// The next event of the stream (comments and retry skipped unless asked), or
// nullopt when the connection ended.
std::optional<Event> NextEvent(RawClient& c, bool keep_comments = false, bool parse = true) {
  while (true) {
    std::optional<std::string> block = c.ReadUntil("\n\n");
    if (!block) return std::nullopt;
    Event e;
    e.raw = *block;
    for (absl::string_view line : absl::StrSplit(*block, '\n', absl::SkipEmpty())) {
      if (absl::ConsumePrefix(&line, "id: ")) e.id = std::string(line);
      if (absl::ConsumePrefix(&line, "event: ")) e.event = std::string(line);
      if (parse && absl::ConsumePrefix(&line, "data: ")) {
        e.data = nlohmann::json::parse(std::string(line));
      }
    }
    if (!e.event.empty() || keep_comments) return e;
  }
}

model::SampleBatch Loss(const std::string& job, int64_t t_ms, double v) {
  model::SeriesSamples s;
  s.key.ns = std::string(model::kTrainingJobsNamespace);
  s.key.metric = "train:loss";
  s.key.dimensions = {{"TrainingJobName", job}};
  s.samples = {{t_ms, v}};
  model::SampleBatch batch;
  batch.series.push_back(std::move(s));
  return batch;
}

model::LogBatch Line(const std::string& job, std::string message) {
  return {{std::string(model::kTrainingJobsLogGroup), job + "/algo-1-1700000000"},
          {{kNow, std::move(message)}}};
}

class LiveServerTest : public ::testing::Test {
 protected:
  void Start(api::live::LiveOptions live = {}, ServerOptions options = {}) {
    hub_ = std::make_unique<api::live::LiveHub>(live);
    live_ = std::make_unique<api::live::LiveApi>(hub_.get(), &backend_);
    router_ = std::make_unique<Router>(nullptr, nullptr, &metrics_, live_.get());
    options.port = 0;
    absl::StatusOr<std::unique_ptr<Server>> s = Server::Start(options, *router_, metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  // Connects to the live stream and reads up to the retry line: from then on
  // the stream sees everything the hub takes.
  std::unique_ptr<RawClient> Open(const std::string& query, const std::string& headers = "",
                                  int receive_buffer_bytes = 0) {
    auto c = std::make_unique<RawClient>(server_->port(), 10000, receive_buffer_bytes);
    EXPECT_TRUE(c->connected());
    EXPECT_TRUE(c->Send(RawRequest("GET", "/api/v1/live" + query, "", headers)));
    std::optional<api::HttpResponse> head = c->ReadResponse();
    EXPECT_TRUE(head.has_value());
    if (!head) return c;
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(*head->headers.Find("Content-Type"), "text/event-stream");
    EXPECT_EQ(*head->headers.Find("Cache-Control"), "no-cache");
    EXPECT_EQ(head->headers.Find("Content-Length"), nullptr);
    std::optional<Event> retry = NextEvent(*c, /*keep_comments=*/true);
    EXPECT_TRUE(retry.has_value());
    if (retry) {
      EXPECT_EQ(retry->raw, "retry: 1000\n\n");
    }
    return c;
  }
  std::string Metrics() {
    RawClient c(server_->port());
    c.Send(RawRequest("GET", "/metrics"));
    std::optional<api::HttpResponse> r = c.ReadResponse();
    return r ? r->body : "";
  }

  util::FakeClock clock_{kNow};
  api::testing::FakeBackend backend_{clock_};
  ServerMetrics metrics_;
  std::unique_ptr<api::live::LiveHub> hub_;
  std::unique_ptr<api::live::LiveApi> live_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<Server> server_;
};

TEST_F(LiveServerTest, StreamsSamplesLogsAndJobChangesAsIngestTakesThem) {
  Start();
  std::unique_ptr<RawClient> c = Open("?job=mnist-7");
  EXPECT_THAT(Metrics(), ::testing::HasSubstr("trainwatch_http_streams_open 1\n"));

  model::JobRecord job;
  job.name = "mnist-7";
  job.creation_ms = job.last_modified_ms = kNow;
  backend_.SetJob(job);
  hub_->OnJob(job);
  hub_->OnSamples(Loss("mnist-7", kNow, 0.5));
  hub_->OnSamples(Loss("other-job", kNow, 9));  // not followed
  hub_->OnLogs(Line("mnist-7", "epoch 1 loss: 0.5"));
  job.status = model::JobStatus::kCompleted;
  backend_.SetJob(job);
  hub_->OnRuleStatuses("mnist-7", 1, {});

  std::vector<double> values;
  std::vector<std::string> messages, statuses;
  // Changes found together come as one event (the record as it is then): a
  // stream that first reads after all of them sends the job's first event
  // already Completed, before the samples and the line.
  while (values.empty() || messages.empty() || statuses.empty() ||
         statuses.back() != "Completed") {
    std::optional<Event> e = NextEvent(*c);
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(absl::StartsWith(e->id, hub_->epoch() + ".")) << e->raw;
    if (e->event == "samples") {
      EXPECT_EQ(e->data["job"], "mnist-7");
      for (const auto& s : e->data["series"]) {
        for (const auto& v : s["v"]) values.push_back(v);
      }
    } else if (e->event == "logs") {
      for (const auto& ev : e->data["events"]) messages.push_back(ev["message"]);
    } else if (e->event == "job") {
      statuses.push_back(e->data["status"]);
    } else {
      ADD_FAILURE() << e->raw;
    }
  }
  EXPECT_EQ(values, std::vector<double>{0.5});
  EXPECT_EQ(messages, std::vector<std::string>{"epoch 1 loss: 0.5"});
  EXPECT_EQ(statuses.back(), "Completed");

  // The client leaves: the stream ends.
  c.reset();
  while (metrics_.streams_open() != 0) std::this_thread::yield();
}

TEST_F(LiveServerTest, ReconnectWithLastEventIdMissesNothingAndRepeatsNothing) {
  Start();
  std::unique_ptr<RawClient> c = Open("?job=mnist-7");
  std::vector<double> seen;
  std::string last_id;
  for (int i = 0; i < 10; ++i) hub_->OnSamples(Loss("mnist-7", kNow + i, i));
  while (seen.empty() || seen.back() != 9) {
    std::optional<Event> e = NextEvent(*c);
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->event, "samples") << e->raw;
    for (const auto& v : e->data["series"][0]["v"]) seen.push_back(v);
    last_id = e->id;
  }
  c.reset();  // gone, while more comes
  for (int i = 10; i < 20; ++i) hub_->OnSamples(Loss("mnist-7", kNow + i, i));
  c = Open("?job=mnist-7", "Last-Event-ID: " + last_id + "\r\n");
  while (seen.back() != 19) {
    std::optional<Event> e = NextEvent(*c);
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->event, "samples") << e->raw;
    for (const auto& v : e->data["series"][0]["v"]) seen.push_back(v);
  }
  std::vector<double> want;
  for (int i = 0; i < 20; ++i) want.push_back(i);
  EXPECT_EQ(seen, want);

  // An id from before a restart (another hub): reset, then live.
  c = Open("?job=mnist-7", "Last-Event-ID: 0000000000000000.19\r\n");
  std::optional<Event> reset = NextEvent(*c);
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->event, "reset");
  EXPECT_EQ(reset->data["reason"], "unknown position");
  hub_->OnSamples(Loss("mnist-7", kNow + 20, 20));
  std::optional<Event> next = NextEvent(*c);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->data["series"][0]["v"][0], 20);
}

TEST_F(LiveServerTest, AReaderThatNeverReadsBlocksNeitherIngestNorOthers) {
  Start({.history_bytes_per_job = 256 * 1024, .reader_backlog_bytes = 128 * 1024});
  std::unique_ptr<RawClient> slow = Open("?job=big", "", /*receive_buffer_bytes=*/4096);
  std::unique_ptr<RawClient> fast = Open("?job=big");
  // Lines of 64 KiB, more in all than the sockets between the server and the
  // slow client can buffer (the kernel's largest send buffer, a small
  // receive buffer) and the hub holds: each taken by the hub at once and read
  // by the fast client; the slow one reads nothing meanwhile.
  int64_t send_buffer_max = 4 << 20;
  if (std::ifstream wmem("/proc/sys/net/ipv4/tcp_wmem"); wmem) {
    int64_t min = 0, def = 0;
    wmem >> min >> def >> send_buffer_max;
  }
  const int lines = static_cast<int>((send_buffer_max + (2 << 20)) / (64 * 1024));
  for (int i = 0; i < lines; ++i) {
    const std::string tag = absl::StrFormat("\"%d ", i);
    hub_->OnLogs(Line("big", tag.substr(1) + std::string(64 * 1024, 'x')));
    bool got = false;
    while (!got) {
      std::optional<Event> e = NextEvent(*fast, false, /*parse=*/false);
      ASSERT_TRUE(e.has_value()) << i;
      ASSERT_EQ(e->event, "logs") << e->raw.substr(0, 200);
      got = absl::StrContains(e->raw, tag);
    }
    EXPECT_LE(hub_->HeldBytes(), 256u * 1024);
  }
  // The slow client, reading at last, finds what its sockets held, resets
  // (one each time it fell too far behind), the last one at the newest
  // entry; then live data.
  const std::string head_id = absl::StrFormat("%s.%d", hub_->epoch(), hub_->head());
  int resets = 0;
  for (bool at_head = false; !at_head;) {
    std::optional<Event> e = NextEvent(*slow, false, /*parse=*/false);
    ASSERT_TRUE(e.has_value());
    if (e->event == "reset") ++resets;
    at_head = e->event == "reset" && e->id == head_id;
  }
  EXPECT_GE(resets, 1);
  hub_->OnLogs(Line("big", "after"));
  for (RawClient* c : {slow.get(), fast.get()}) {
    std::optional<Event> e = NextEvent(*c);
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->event, "logs");
    EXPECT_EQ(e->data["events"][0]["message"], "after");
  }
}

TEST_F(LiveServerTest, HeartbeatsKeepAnIdleStreamOpen) {
  ServerOptions options;
  options.stream_heartbeat_ms = 20;
  options.idle_timeout_ms = 100;  // a stream is not idle
  Start({}, options);
  std::unique_ptr<RawClient> c = Open("");
  for (int i = 0; i < 10; ++i) {
    std::optional<Event> ping = NextEvent(*c, /*keep_comments=*/true);
    ASSERT_TRUE(ping.has_value());
    EXPECT_EQ(ping->raw, ": ping\n\n");
  }
  // Without a job: job events of every job, nothing else.
  model::JobRecord job;
  job.name = "any-job";
  job.creation_ms = job.last_modified_ms = kNow;
  backend_.SetJob(job);
  hub_->OnSamples(Loss("any-job", kNow, 1));
  hub_->OnJob(job);
  std::optional<Event> e = NextEvent(*c);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, "job");
  EXPECT_EQ(e->data["name"], "any-job");
}

TEST_F(LiveServerTest, StopEndsOpenStreamsWithoutWaitingForThem) {
  ServerOptions options;
  // Were Stop to wait for the streams, it would wait this long.
  options.shutdown_grace_ms = 3'600'000;
  Start({.reader_backlog_bytes = 64 * 1048576}, options);
  std::unique_ptr<RawClient> idle = Open("?job=a");
  std::unique_ptr<RawClient> stuck = Open("?job=a");
  for (int i = 0; i < 100; ++i) hub_->OnLogs(Line("a", std::string(100 * 1024, 'y')));
  server_->Stop();
  EXPECT_EQ(metrics_.streams_open(), 0);
  EXPECT_EQ(metrics_.connections_open(), 0);
  EXPECT_TRUE(idle->WaitForClose());
}

}  // namespace
}  // namespace trainwatch::server
