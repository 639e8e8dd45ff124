#include "app/serve.h"

#include "util/clock.h"

namespace trainwatch::app {

StoreServices::StoreServices(store::Db& db, ingest::Ingest* ingest, job::LocalJobs* local_jobs,
                             const RunnerContacts* contacts, api::AgentBackend* agents)
    : reader_(db),
      samples_(db, ingest),
      log_writer_(db, reader_, ingest),
      jobs_(db, local_jobs, contacts),
      agents_(agents) {}

api::Backends StoreServices::backends() {
  return api::Backends{.samples = &samples_,
                       .metrics = &reader_,
                       .logs = &reader_,
                       .log_writer = &log_writer_,
                       .jobs = &jobs_,
                       .agents = agents_};
}

Serving::Serving(const ServeOptions& options, const api::Backends& backends, ingest::Ingest* ingest)
    : ingest_(ingest),
      hub_(options.live),
      aws_(options.api, backends, util::SystemClock::Get()),
      native_(api::NativeOptions{.version = options.version}, backends, util::SystemClock::Get()),
      live_(&hub_, backends.jobs),
      router_(&aws_, &native_, &metrics_, &live_) {}

absl::StatusOr<std::unique_ptr<Serving>> Serving::Start(const ServeOptions& options,
                                                        const api::Backends& backends,
                                                        ingest::Ingest* ingest) {
  std::unique_ptr<Serving> serving(new Serving(options, backends, ingest));
  if (ingest != nullptr) ingest->Subscribe(&serving->hub_);
  absl::StatusOr<std::unique_ptr<server::Server>> server =
      server::Server::Start(options.server, serving->router_, serving->metrics_);
  if (!server.ok()) return server.status();  // ~Serving unsubscribes
  serving->server_ = *std::move(server);
  return serving;
}

Serving::~Serving() {
  if (server_ != nullptr) server_->Stop();
  if (ingest_ != nullptr) ingest_->Unsubscribe(&hub_);
}

}  // namespace trainwatch::app
