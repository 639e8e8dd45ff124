// The agent path end to end in one process: RemoteSink -> spool -> HTTP ->
// server -> NativeApi -> StoreAgentBackend -> ingest -> store, with the server
// going away, coming back, and answers getting lost. It puts the agent
// together with the server's side, so it lives in the composition root; the
// agent's own tests are in agent/.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "agent/remote_sink.h"
#include "api/native/native_api.h"
#include "app/api_backends.h"
#include "ingest/ingest.h"
#include "job/runner_identity.h"
#include "nlohmann/json.hpp"
#include "server/server.h"
#include "store/db.h"
#include "store/read_view.h"
#include "store/test_util.h"

namespace trainwatch::app {
namespace {

using agent::RemoteSink;
using agent::RemoteSinkOptions;
using store::testing::TempDir;

// The server side: the native API over a writer Db, with answers that can be
// lost on the way back (the batch is stored, the agent hears 503).
class Receiver : public server::RequestHandler {
 public:
  explicit Receiver(const std::string& data_dir) {
    store::DbOptions options;
    options.data_dir = data_dir;
    db_ = *store::Db::Open(options);
    ingest_ = std::make_unique<ingest::Ingest>(db_.get());
    agents_ = std::make_unique<StoreAgentBackend>(*ingest_);
    jobs_ = std::make_unique<StoreJobsBackend>(*db_);
    native_ = std::make_unique<api::NativeApi>(
        api::NativeOptions{}, api::Backends{.jobs = jobs_.get(), .agents = agents_.get()},
        util::SystemClock::Get());
  }
  size_t BodyLimit(const api::HttpRequest&) const override { return native_->BodyLimit(); }
  api::HttpResponse TooLarge(const api::HttpRequest&, size_t limit) const override {
    return native_->TooLarge(limit);
  }
  api::HttpResponse Handle(const api::HttpRequest& request) const override {
    const std::string* encoding = request.headers.Find("Content-Encoding");
    if (request.target == "/api/v1/agent/deliver") {
      std::lock_guard<std::mutex> lock(mu_);
      deliver_encodings_.push_back(encoding != nullptr ? *encoding : "");
    }
    if (older_server) {
      // A server from before compressed agent batches: its health does not
      // list them, and it reads any body as JSON.
      if (encoding != nullptr && request.target == "/api/v1/agent/deliver") {
        api::HttpResponse refused;
        refused.status = 400;
        refused.body = R"({"error": {"code": "InvalidArgument", "message": "the body must be a JSON object"}})";
        return refused;
      }
      if (request.target == "/api/v1/health") {
        api::HttpResponse r = native_->Handle(request);
        nlohmann::json j = nlohmann::json::parse(r.body);
        j.erase("content_encodings");
        r.body = j.dump();
        return r;
      }
    }
    api::HttpResponse r = native_->Handle(request);
    if (lose_answers > 0 && request.method == "POST") {
      --lose_answers;
      r.status = 503;
      r.body = R"({"error": {"code": "Unavailable", "message": "answer lost"}})";
    }
    return r;
  }
  store::Db& db() { return *db_; }
  // The Content-Encoding of each agent batch received ("" for none).
  std::vector<std::string> deliver_encodings() const {
    std::lock_guard<std::mutex> lock(mu_);
    return deliver_encodings_;
  }

  mutable std::atomic<int> lose_answers{0};
  std::atomic<bool> older_server{false};

 private:
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<ingest::Ingest> ingest_;
  std::unique_ptr<StoreAgentBackend> agents_;
  std::unique_ptr<StoreJobsBackend> jobs_;
  std::unique_ptr<api::NativeApi> native_;
  mutable std::mutex mu_;
  mutable std::vector<std::string> deliver_encodings_;
};

model::JobRecord Job(const std::string& name) {
  model::JobRecord job;
  job.name = name;
  job.arn = model::TrainingJobArn(name);
  job.creation_ms = 1764500000000;
  job.last_modified_ms = job.creation_ms;
  job.command = {"python3", "train.py"};
  job.environment = {{"A", "b"}};
  job.runner = job::CurrentRunnerIdentity();  // alive: no reconciling to Failed
  job.log_stream = name + "/algo-1-1";
  return job;
}

model::LogBatch Lines(int from, int to) {
  model::LogBatch b{{"/aws/sagemaker/TrainingJobs", "job-a/algo-1-1"}, {}};
  const int64_t now = util::SystemClock::Get().NowMs();
  for (int i = from; i < to; ++i) b.events.push_back({now, "line " + std::to_string(i)});
  return b;
}

uint64_t EventCount(store::Db& db) {
  auto view = db.View();
  auto stream = view->GetLogStream("/aws/sagemaker/TrainingJobs", "job-a/algo-1-1");
  return stream.ok() && stream->has_value() ? (*stream)->event_count : 0;
}

// A Receiver over a folder of the test's, behind a real server.
class RemoteSinkTest : public ::testing::Test {
 protected:
  RemoteSinkTest() { options_.port = 0; }
  // Starts the server; again after StopServer, on the same port.
  void StartServer() {
    auto srv = server::Server::Start(options_, receiver_, metrics_);
    ASSERT_TRUE(srv.ok()) << srv.status();
    server_ = *std::move(srv);
    options_.port = server_->port();
  }
  void StopServer() {
    server_->Stop();
    server_.reset();
  }
  // A sink named `agent`, sending to the server, spooling in the test's folder.
  RemoteSinkOptions SinkOptions(const std::string& agent) const {
    RemoteSinkOptions o;
    o.endpoint = "http://127.0.0.1:" + std::to_string(options_.port) + "/";
    o.spool_dir = dir_.path() + "/spool/" + agent;
    o.agent = agent;
    return o;
  }

  TempDir dir_;
  Receiver receiver_{dir_.path() + "/server-data"};
  server::ServerMetrics metrics_;
  server::ServerOptions options_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(RemoteSinkTest, DeliversEverythingExactlyOnceThroughLostAnswersAndAServerOutage) {
  Receiver& receiver = receiver_;
  StartServer();
  auto sink = RemoteSink::Create(SinkOptions("agent-1"));
  ASSERT_TRUE(sink.ok()) << sink.status();

  EXPECT_FALSE((*sink)->GetJob("job-a")->has_value());
  ASSERT_TRUE((*sink)->CreateJob(Job("job-a")).ok());
  auto fetched = (*sink)->GetJob("job-a");
  ASSERT_TRUE(fetched.ok() && fetched->has_value()) << fetched.status();
  EXPECT_EQ(**fetched, Job("job-a")) << "every field of the record travels";

  // Answers lost on the way back: the batches are stored and sent again.
  receiver.lose_answers = 3;
  ASSERT_TRUE((*sink)->PutLogs(Lines(0, 10)).ok());
  ASSERT_TRUE((*sink)->PutLogs(Lines(10, 20)).ok());
  ASSERT_TRUE((*sink)->Drain(20000, nullptr));
  EXPECT_EQ(EventCount(receiver.db()), 20u);

  // The server goes away; the sink keeps taking data without waiting.
  StopServer();
  for (int i = 20; i < 100; i += 10) ASSERT_TRUE((*sink)->PutLogs(Lines(i, i + 10)).ok());
  model::JobRecord done = Job("job-a");
  done.status = model::JobStatus::kCompleted;
  ASSERT_TRUE((*sink)->UpdateJob(done).ok());
  EXPECT_FALSE((*sink)->Drain(500, nullptr));
  EXPECT_EQ((*sink)->pending(), 9);

  StartServer();
  ASSERT_TRUE((*sink)->Drain(20000, nullptr));
  EXPECT_EQ(EventCount(receiver.db()), 100u);
  EXPECT_EQ(receiver.db().GetJob("job-a")->value().status, model::JobStatus::kCompleted);

  // A name another run already has is refused, and said so.
  auto other = RemoteSink::Create(SinkOptions("agent-2"));
  ASSERT_TRUE(other.ok());
  absl::Status taken = (*other)->CreateJob(Job("job-a"));
  EXPECT_TRUE(absl::IsAlreadyExists(taken)) << taken;
}

// Batches travel snappy-compressed over one kept-open connection to a
// server that lists snappy in its health, and as plain JSON to one from
// before, which refuses a compressed batch for good (400): a sink whose
// server is replaced by such a one sends that batch again uncompressed, and
// nothing is dropped.
TEST_F(RemoteSinkTest, CompressesBatchesForAServerThatTakesThemAndNotForAnOlderOne) {
  Receiver& receiver = receiver_;
  StartServer();
  auto sink = RemoteSink::Create(SinkOptions("agent-1"));
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE((*sink)->CreateJob(Job("job-a")).ok());
  for (int i = 0; i < 50; i += 10) {
    ASSERT_TRUE((*sink)->PutLogs(Lines(i, i + 10)).ok());
    ASSERT_TRUE((*sink)->Drain(20000, nullptr));  // one request at a time
  }
  EXPECT_EQ(EventCount(receiver.db()), 50u);
  std::vector<std::string> encodings = receiver.deliver_encodings();
  ASSERT_EQ(encodings.size(), 6u);
  for (const std::string& e : encodings) EXPECT_EQ(e, "snappy");
  // The health request, the job's creation and five batches: all over the
  // sender's one connection.
  EXPECT_EQ(metrics_.connections(), 1u) << "the sender keeps its connection open";

  // The server is replaced by an older build; the connection stays up.
  receiver.older_server = true;
  for (int i = 50; i < 70; i += 10) {
    ASSERT_TRUE((*sink)->PutLogs(Lines(i, i + 10)).ok());
    ASSERT_TRUE((*sink)->Drain(20000, nullptr));
  }
  EXPECT_EQ(EventCount(receiver.db()), 70u) << "nothing dropped";
  encodings = receiver.deliver_encodings();
  EXPECT_EQ(std::vector<std::string>(encodings.begin() + 6, encodings.end()),
            (std::vector<std::string>{"snappy", "", ""}))
      << "refused once, then sent plain after asking the server again";

  // A sink that starts against the older server never compresses.
  auto older = RemoteSink::Create(SinkOptions("agent-2"));
  ASSERT_TRUE(older.ok());
  ASSERT_TRUE((*older)->PutLogs(Lines(70, 80)).ok());
  ASSERT_TRUE((*older)->Drain(20000, nullptr));
  EXPECT_EQ(EventCount(receiver.db()), 80u);
  encodings = receiver.deliver_encodings();
  ASSERT_EQ(encodings.size(), 10u);
  EXPECT_EQ(encodings.back(), "");
}

TEST_F(RemoteSinkTest, ASpoolLeftBehindIsDeliveredByTheServerOnce) {
  Receiver& receiver = receiver_;
  const std::string spool_dir = dir_.path() + "/spool/gone";
  {
    RemoteSinkOptions sink_options;
    sink_options.endpoint = "http://127.0.0.1:1";  // nobody listens there
    sink_options.connect_timeout_ms = 100;
    sink_options.spool_dir = spool_dir;
    sink_options.agent = "gone";
    auto sink = RemoteSink::Create(sink_options);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->PutLogs(Lines(0, 30)).ok());
    ASSERT_TRUE((*sink)->PutLogs(Lines(30, 40)).ok());
  }  // the agent ends with its batches spooled

  ingest::Ingest ingest(&receiver.db());
  StoreAgentBackend backend(ingest);
  auto delivered = agent::DeliverLeftoverSpool(
      spool_dir, [&backend](const api::AgentBatch& batch) { return backend.Deliver(batch); });
  ASSERT_TRUE(delivered.ok()) << delivered.status();
  EXPECT_EQ(*delivered, 2);
  EXPECT_EQ(EventCount(receiver.db()), 40u);
  EXPECT_FALSE(std::filesystem::exists(spool_dir));
}

}  // namespace
}  // namespace trainwatch::app
