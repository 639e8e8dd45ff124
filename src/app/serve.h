#pragma once
// The HTTP side of a process that holds a data folder's store, composed once
// for `trainwatch server` and `trainwatch run --ui`: the api's backends over
// the store (StoreServices), and on one port (Serving) the AWS endpoints, the
// native API, the dashboard's live stream (a LiveHub subscribed to the
// process's ingest) and /metrics (api/prometheus/metrics_page.h: the
// server's counters, then ingest's, the store's, the rule engine's and the
// live stream's).
//
//   app::StoreServices services(*db, ingest.get());
//   auto serving = app::Serving::Start(options, services.backends(), ingest.get());
//   ... (*serving)->url() ...
//   serving->reset();   // stops the server, then leaves the ingest
//
// Thread-safe as its parts are.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/remote_write.h"
#include "api/api.h"
#include "api/live/live_hub.h"
#include "api/live/live_stream.h"
#include "api/native/native_api.h"
#include "api/prometheus/metrics_page.h"
#include "app/api_backends.h"
#include "app/archiver.h"
#include "ingest/ingest.h"
#include "job/local_jobs.h"
#include "query/store_reader.h"
#include "rules/engine.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/server.h"
#include "store/db.h"

namespace trainwatch::app {

// The api's backends over one store: reads through query::StoreReader,
// writes through `ingest` (null for a follower, which refuses them).
class StoreServices {
 public:
  // Everything given must outlive this; `local_jobs` (CreateTrainingJob),
  // `contacts` and `agents` may be null.
  StoreServices(store::Db& db, ingest::Ingest* ingest, job::LocalJobs* local_jobs = nullptr,
                const RunnerContacts* contacts = nullptr, api::AgentBackend* agents = nullptr);

  query::StoreReader& reader() { return reader_; }
  StoreJobsBackend& jobs() { return jobs_; }
  api::Backends backends();

 private:
  query::StoreReader reader_;
  StoreSampleWriter samples_;
  StoreLogsWriter log_writer_;
  StoreJobsBackend jobs_;
  api::AgentBackend* agents_;
};

struct ServeOptions {
  server::ServerOptions server;
  api::ApiOptions api;
  std::string version = "unknown";
  api::live::LiveOptions live;
  // What /metrics reports on besides the server and ingest (each may be
  // null; each must outlive the Serving).
  store::Db* db = nullptr;
  const rules::Engine* rules = nullptr;
  std::vector<const agent::RemoteWriteOut*> remote_writes;  // --remote-write's receivers
  const Archiver* archiver = nullptr;                        // --archive's
};

class Serving {
 public:
  // Subscribes the live hub to `ingest` (null: a follower, whose live stream
  // stays quiet) and starts the server. `backends`' pointers and `ingest`
  // must outlive the Serving. Errors as server::Server::Start.
  static absl::StatusOr<std::unique_ptr<Serving>> Start(const ServeOptions& options,
                                                        const api::Backends& backends,
                                                        ingest::Ingest* ingest);
  ~Serving();  // stops the server (streams end), then unsubscribes

  server::Server& server() { return *server_; }
  // "http://127.0.0.1:9400"
  std::string url() const { return "http://" + server_->address(); }
  api::live::LiveHub& hub() { return hub_; }

 private:
  Serving(const ServeOptions& options, const api::Backends& backends, ingest::Ingest* ingest);

  ingest::Ingest* const ingest_;
  api::live::LiveHub hub_;
  api::Api aws_;
  api::NativeApi native_;
  api::live::LiveApi live_;
  api::MetricsPage metrics_page_;
  server::ServerMetrics metrics_;
  server::Router router_;
  std::unique_ptr<server::Server> server_;  // last: stopped first
};

}  // namespace trainwatch::app
