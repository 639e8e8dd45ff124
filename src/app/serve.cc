#include "app/serve.h"

#include "store/kv/kv.h"
#include "util/clock.h"

namespace trainwatch::app {

namespace {

void Counter(util::PromText* t, std::string_view name, std::string_view help, double v) {
  t->Family(name, "counter", help);
  t->Sample(name, {}, v);
}

void Gauge(util::PromText* t, std::string_view name, std::string_view help, double v) {
  t->Family(name, "gauge", help);
  t->Sample(name, {}, v);
}

double Load(const std::atomic<uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); }

void WriteIngest(const ingest::Ingest::Stats& s, util::PromText* t) {
  Counter(t, "trainwatch_ingest_samples_total", "Datapoints stored (every sender).", Load(s.samples));
  Counter(t, "trainwatch_ingest_sample_batches_total", "Sample batches stored.", Load(s.sample_batches));
  Counter(t, "trainwatch_ingest_log_events_total", "Log events stored.", Load(s.log_events));
  t->Family("trainwatch_ingest_rejected_batches_total", "counter",
            "Batches refused as invalid (nothing of them stored; the sender got a 400).");
  t->Sample("trainwatch_ingest_rejected_batches_total", {{"kind", "samples"}}, Load(s.sample_batches_rejected));
  t->Sample("trainwatch_ingest_rejected_batches_total", {{"kind", "logs"}}, Load(s.log_batches_rejected));
  Counter(t, "trainwatch_ingest_duplicate_deliveries_total",
          "Batches an agent sent again after a lost answer, not stored twice.", Load(s.duplicate_deliveries));
  Counter(t, "trainwatch_ingest_write_errors_total",
          "Writes the store refused after the batch was found valid (I/O, or a conflict).",
          Load(s.write_errors));
  t->Histogram("trainwatch_ingest_write_seconds",
               "Time to make a batch durable (the store's group commit).", s.write_seconds);
}

void WriteStore(store::Db& db, util::PromText* t) {
  if (db.writable()) {
    const store::Db::HeadStats h = db.GetHeadStats();
    Gauge(t, "trainwatch_store_series", "Series the store knows.", static_cast<double>(h.series));
    Gauge(t, "trainwatch_store_open_series", "Series with unsealed data in memory.",
          static_cast<double>(h.open_series));
    Gauge(t, "trainwatch_store_head_bytes", "Memory of the unsealed chunks and their series.",
          static_cast<double>(h.head_bytes + h.registry_bytes));
    Gauge(t, "trainwatch_store_head_log_bytes", "The head log since its last checkpoint.",
          static_cast<double>(h.head_log_bytes));
  }
  t->Family("trainwatch_store_sst_bytes", "gauge", "Bytes of table files, by part of the store.");
  for (int i = 0; i < store::kv::kCfCount; ++i) {
    const auto cf = static_cast<store::kv::Cf>(i);
    t->Sample("trainwatch_store_sst_bytes", {{"part", std::string(store::kv::CfName(cf))}},
              static_cast<double>(db.kv().SstBytes(cf)));
  }
  t->Family("trainwatch_store_memtable_bytes", "gauge", "Bytes of write buffers, by part of the store.");
  for (int i = 0; i < store::kv::kCfCount; ++i) {
    const auto cf = static_cast<store::kv::Cf>(i);
    t->Sample("trainwatch_store_memtable_bytes", {{"part", std::string(store::kv::CfName(cf))}},
              static_cast<double>(db.kv().MemtableBytes(cf)));
  }
}

void WriteRules(const rules::Engine& engine, util::PromText* t) {
  const rules::Engine::Stats s = engine.GetStats();
  Counter(t, "trainwatch_rules_items_total",
          "Batches and job records the rule engine took from ingest.", static_cast<double>(s.items_queued));
  Gauge(t, "trainwatch_rules_queue_items", "Items waiting for the rule engine's thread.",
        static_cast<double>(s.items_pending));
  Counter(t, "trainwatch_rules_inputs_total", "Datapoints and log events the rules evaluated.",
          static_cast<double>(s.inputs_evaluated));
  Gauge(t, "trainwatch_rules_jobs", "Jobs whose rules are being evaluated.", static_cast<double>(s.jobs_watched));
  t->Histogram("trainwatch_rules_evaluation_seconds",
               "From ingest to the rules' results written, per item (queue wait included).",
               engine.evaluation_seconds());
}

void WriteLive(const api::live::LiveHub& hub, util::PromText* t) {
  Gauge(t, "trainwatch_live_held_bytes", "What the dashboard's live stream holds for readers.",
        static_cast<double>(hub.HeldBytes()));
  Counter(t, "trainwatch_live_evicted_entries_total", "Live entries dropped by the memory bounds.",
          static_cast<double>(hub.entries_evicted()));
  Counter(t, "trainwatch_live_reader_resets_total",
          "Live reads that had fallen behind (or asked for what was gone) and refetched.",
          static_cast<double>(hub.readers_reset()));
}

// Per receiver of --remote-write (label url).
void WriteRemoteWrites(const std::vector<const agent::RemoteWriteOut*>& outs, util::PromText* t) {
  using Stats = agent::RemoteWriteOut::Stats;
  const auto family = [&](std::string_view name, std::string_view type, std::string_view help,
                          auto value) {
    t->Family(name, type, help);
    for (const agent::RemoteWriteOut* o : outs) {
      t->Sample(name, {{"url", o->url()}}, static_cast<double>(value(o->GetStats())));
    }
  };
  family("trainwatch_remote_write_samples_queued_total", "counter",
         "Samples put in a remote-write receiver's durable queue.",
         [](const Stats& s) { return s.samples_queued; });
  family("trainwatch_remote_write_samples_dropped_total", "counter",
         "Samples not queued for a receiver: its queue was full.",
         [](const Stats& s) { return s.samples_dropped; });
  family("trainwatch_remote_write_requests_sent_total", "counter",
         "Remote-write requests a receiver took.", [](const Stats& s) { return s.requests_sent; });
  family("trainwatch_remote_write_requests_refused_total", "counter",
         "Remote-write requests a receiver refused for good (4xx): their samples were dropped.",
         [](const Stats& s) { return s.requests_refused; });
  family("trainwatch_remote_write_retries_total", "counter",
         "Remote-write requests sent again after an error, a 5xx or a 429.",
         [](const Stats& s) { return s.retries; });
  family("trainwatch_remote_write_queue_bytes", "gauge",
         "Bytes in a receiver's queue on disk, not yet taken.",
         [](const Stats& s) { return s.queue_bytes; });
}

void WriteArchive(const Archiver& archiver, util::PromText* t) {
  const Archiver::Counts c = archiver.counts();
  Counter(t, "trainwatch_archive_passes_total", "Passes of --archive over the jobs.",
          static_cast<double>(c.passes));
  Counter(t, "trainwatch_archive_segments_total", "Segments written to the archive.",
          static_cast<double>(c.segments));
  Counter(t, "trainwatch_archive_bytes_total", "Bytes written to the archive.",
          static_cast<double>(c.bytes));
  Counter(t, "trainwatch_archive_failures_total",
          "Jobs a pass could not archive (tried again at the next pass).",
          static_cast<double>(c.failures));
  Gauge(t, "trainwatch_archive_last_pass_seconds", "When the last pass ran (Unix time).",
        static_cast<double>(c.last_pass_ms) / 1000.0);
  Counter(t, "trainwatch_archive_late_segments_total",
          "Late segments written: data that came after a pass read its window.",
          static_cast<double>(c.late_segments));
  Gauge(t, "trainwatch_archive_late_pending",
        "Late samples and log events kept in the data folder for the next pass.",
        static_cast<double>(c.late_pending));
  Counter(t, "trainwatch_archive_late_dropped_total",
          "Late samples and log events not kept: the late-data journal was full.",
          static_cast<double>(c.late_dropped));
}

std::vector<api::MetricsPage::Writer> HealthWriters(const ServeOptions& options, ingest::Ingest* ingest,
                                                    const api::live::LiveHub* hub) {
  std::vector<api::MetricsPage::Writer> out;
  if (ingest != nullptr) out.push_back([ingest](util::PromText* t) { WriteIngest(ingest->stats(), t); });
  if (options.db != nullptr) out.push_back([db = options.db](util::PromText* t) { WriteStore(*db, t); });
  if (options.rules != nullptr) {
    out.push_back([engine = options.rules](util::PromText* t) { WriteRules(*engine, t); });
  }
  if (!options.remote_writes.empty()) {
    out.push_back([outs = options.remote_writes](util::PromText* t) { WriteRemoteWrites(outs, t); });
  }
  if (options.archiver != nullptr) {
    out.push_back([a = options.archiver](util::PromText* t) { WriteArchive(*a, t); });
  }
  out.push_back([hub](util::PromText* t) { WriteLive(*hub, t); });
  return out;
}

}  // namespace

StoreServices::StoreServices(store::Db& db, ingest::Ingest* ingest, job::LocalJobs* local_jobs,
                             const RunnerContacts* contacts, api::AgentBackend* agents)
    : reader_(db),
      samples_(db, ingest),
      log_writer_(db, reader_, ingest),
      jobs_(db, ingest, local_jobs, contacts),
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
      native_(api::NativeOptions{.version = options.version, .live_updates = ingest != nullptr},
              backends, util::SystemClock::Get()),
      live_(&hub_, backends.jobs),
      metrics_page_(backends, HealthWriters(options, ingest, &hub_)),
      router_(&aws_, &native_, &metrics_, &live_, &metrics_page_) {}

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
