// trainwatch server: the CloudWatch, CloudWatch Logs and SageMaker compatible
// APIs, trainwatch's own JSON API and /metrics on one port (docs/api.md).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/native/native_api.h"
#include "agent/remote_sink.h"
#include "agent/remote_write.h"
#include "agent/server_discovery.h"
#include "api/sigv4.h"
#include "app/api_backends.h"
#include "app/archiver.h"
#include "app/local_alarms.h"
#include "app/client_endpoint.h"
#include "app/job_reports.h"
#include "app/local_rules.h"
#include "app/python_package.h"
#include "app/serve.h"
#include "cli/allocator.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "archive/late_journal.h"
#include "ingest/ingest.h"
#include "job/local_jobs.h"
#include "query/store_reader.h"
#include "server/listen_address.h"
#include "server/router.h"
#include "server/server.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/time_parse.h"
#include "util/mutex.h"

namespace trainwatch::cli {
namespace {

struct ServerFlags {
  std::string listen = "127.0.0.1:9400";
  std::string auth_file;
  int threads = 2;
  int64_t poll_us = server::ServerOptions{}.poll_us;
  std::string runner_timeout = "5m";
  std::vector<std::string> remote_write;         // receivers' URLs
  std::vector<std::string> remote_write_headers;  // "Name: value", sent to each
  std::string archive;           // a folder or s3://BUCKET[/PREFIX]
  std::string archive_endpoint;  // its S3-compatible service
  std::string archive_every = "10m";
  std::string archive_settle = "5m";
};

// Every sample this server ingests, on to each --remote-write receiver
// (agent/remote_write.h); unsubscribed before the writers go.
struct RemoteWrites {
  ingest::Ingest* ingest = nullptr;
  std::vector<std::unique_ptr<agent::RemoteWriteOut>> outs;
  RemoteWrites() = default;
  RemoteWrites(const RemoteWrites&) = delete;
  RemoteWrites& operator=(const RemoteWrites&) = delete;
  ~RemoteWrites() {
    for (auto& o : outs) ingest->Unsubscribe(o.get());
  }
};

// An observer subscribed to an ingest for the scope of this (declared after
// what it subscribes, so that it unsubscribes first).
class Subscription {
 public:
  Subscription(ingest::Ingest* ingest, model::IngestObserver* observer)
      : ingest_(ingest), observer_(observer) {
    ingest_->Subscribe(observer_);
  }
  ~Subscription() { ingest_->Unsubscribe(observer_); }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  ingest::Ingest* ingest_;
  model::IngestObserver* observer_;
};

// The queue folder of a receiver: <data>/remote-write/<hash of its URL>
// (without user and password, so that a new password keeps the queue).
std::string RemoteWriteQueueDir(const std::string& data_dir, const std::string& url) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : url) h = (h ^ c) * 1099511628211ULL;
  return absl::StrFormat("%s/remote-write/%016x", data_dir, h);
}

// Spools that agents left behind (they ended while the server was away):
// delivered before anything else is served, so jobs end as their runners saw
// them, and after every observer of the ingest is in place (the rules, alarms,
// reports, remote write and the archive's journal take them as any data).
void DeliverLeftoverSpools(const std::string& data_dir, app::StoreAgentBackend& agents) {
  std::error_code ec;
  std::filesystem::directory_iterator it(agent::SpoolRoot(data_dir), ec);
  if (ec) return;
  for (const auto& entry : it) {
    if (!entry.is_directory()) continue;
    if (std::optional<agent::SpoolTarget> target = agent::ReadSpoolTarget(entry.path().string());
        target && !target->server_of_data_folder) {
      // A run here sent to another server (--endpoint): its rest is that one's.
      std::fprintf(stderr,
                   "trainwatch: spool %s holds batches for the server at %s, not this one; "
                   "`trainwatch admin deliver --data %s` sends them there\n",
                   entry.path().c_str(), target->endpoint.c_str(), data_dir.c_str());
      continue;
    }
    absl::StatusOr<int64_t> n = agent::DeliverLeftoverSpool(
        entry.path().string(),
        [&agents](const api::AgentBatch& batch) { return agents.Deliver(batch); });
    if (n.ok()) {
      if (*n > 0) {
        std::fprintf(stderr, "trainwatch: delivered %lld batches that %s had spooled\n",
                     static_cast<long long>(*n), entry.path().filename().c_str());
      }
    } else if (!absl::IsFailedPrecondition(n.status())) {  // else: a live agent's
      std::fprintf(stderr, "trainwatch: spool %s: %s\n", entry.path().c_str(),
                   std::string(n.status().message()).c_str());
    }
  }
}

int RunServer(const ServerFlags& flags, const GlobalOptions& options) {
  PrepareAllocatorForServing();
  absl::StatusOr<server::ListenAddress> address = server::ParseListenAddress(flags.listen);
  if (!address.ok()) return ReportError(address.status());
  absl::StatusOr<int64_t> runner_timeout_ms = util::ParseDurationMs(flags.runner_timeout);
  if (!runner_timeout_ms.ok()) return ReportError(runner_timeout_ms.status());
  if (*runner_timeout_ms < 3000) {
    return ReportError(absl::InvalidArgumentError(absl::StrFormat(
        "--runner-timeout %s is too short: runners beat once a second; want 3s or more",
        flags.runner_timeout)));
  }
  if (!server::IsLoopback(address->host) && flags.auth_file.empty()) {
    return ReportError(absl::FailedPreconditionError(absl::StrFormat(
        "--listen %s is reachable from other machines: pass --auth FILE so that requests must be "
        "signed (docs/api.md, \"Authentication\"), or listen on 127.0.0.1",
        flags.listen)));
  }
  api::sigv4::CredentialStore credentials;
  api::ApiOptions api_options;
  if (!flags.auth_file.empty()) {
    absl::StatusOr<api::sigv4::CredentialStore> loaded = api::sigv4::LoadAuthFile(flags.auth_file);
    if (!loaded.ok()) return ReportError(loaded.status());
    credentials = *std::move(loaded);
    api_options.credentials = &credentials;
  }

  const std::string data_dir = DataDir(options);
  absl::StatusOr<std::unique_ptr<store::Db>> db =
      app::OpenForServer(data_dir, nullptr, /*hold_for_archive=*/!flags.archive.empty());
  if (!db.ok()) return ReportError(db.status());
  // As the folder's writer the server takes runs' data (they find it through
  // server.json); as a follower (a run held the folder) it only reads.
  std::unique_ptr<ingest::Ingest> ingest;
  std::unique_ptr<app::StoreAgentBackend> agents;
  std::unique_ptr<job::LocalJobs> local_jobs;  // CreateTrainingJob's jobs
  app::RunnerContacts contacts(&util::SystemClock::Get(), *runner_timeout_ms);
  // --archive: data that comes for a window the archive has taken is kept
  // for the next pass (archive/late_journal.h), from before the first datum.
  std::unique_ptr<archive::LateJournal> late_journal;
  std::optional<Subscription> late_subscription;
  if ((*db)->writable()) {
    ingest = std::make_unique<ingest::Ingest>(db->get());
    if (!flags.archive.empty()) {
      absl::StatusOr<std::unique_ptr<archive::LateJournal>> journal =
          archive::LateJournal::Open(data_dir + "/archive-late", {.target = [&] {
            const app::RecordedArchive a =
                app::NormalizedArchive({flags.archive, flags.archive_endpoint});
            return a.endpoint.empty() ? a.url : a.url + " at " + a.endpoint;
          }()});
      if (!journal.ok()) return ReportError(journal.status(), 1);
      late_journal = *std::move(journal);
      late_subscription.emplace(ingest.get(), late_journal.get());
    }
    agents = std::make_unique<app::StoreAgentBackend>(*ingest, &contacts);
    local_jobs = std::make_unique<job::LocalJobs>(data_dir, ingest.get(),
                                                  &util::SystemClock::Get());
  } else {
    std::fprintf(stderr,
                 "trainwatch: %s is written by %s: serving it read-only (writes and runs through "
                 "this server need it to hold the folder: restart it once that run ends)\n",
                 data_dir.c_str(), (*db)->WriterDescription().c_str());
  }
  app::StoreServices services(**db, ingest.get(), local_jobs.get(), &contacts, agents.get());
  query::StoreReader& reader = services.reader();
  app::StoreJobsBackend& jobs = services.jobs();
  // Jobs that were running before this server started: the rules go on
  // watching them, and the live stream holds their data.
  std::vector<model::JobRecord> in_progress;
  if (absl::StatusOr<std::vector<model::JobRecord>> all = reader.ListJobs(); all.ok()) {
    for (model::JobRecord& job : *all) {
      if (!model::IsTerminal(job.status)) in_progress.push_back(std::move(job));
    }
  }
  // The rules of every job whose data this server takes, live on its ingest.
  std::unique_ptr<app::LocalRules> rules;
  if (ingest != nullptr) {
    rules::ActionTargets targets;
    targets.stop = [&jobs](const std::string& job, const std::string& message) {
      if (absl::Status s = jobs.StopJob(job, message); !s.ok()) {
        util::LogWarning("rules: cannot stop job " + job + ": " + std::string(s.message()));
      }
    };
    targets.signal = [&local_jobs](const std::string& job, int signo) {
      return local_jobs->Signal(job, signo);
    };
    rules = std::make_unique<app::LocalRules>(
        ingest.get(), std::move(targets),
        rules::RuleEnvironment{.reference = rules::StoreReferenceLoader(&reader, &reader)});
    for (const model::JobRecord& job : in_progress) rules->engine().Watch(job, &reader, &reader);
  }
  // CloudWatch alarms, evaluated live; their actions run with the rules'.
  std::unique_ptr<app::LocalAlarms> alarms;
  api::Backends backends = services.backends();
  // --archive: every job's data, a pass now and every --archive-every.
  std::unique_ptr<model::ObjectStore> archive_target;
  std::unique_ptr<app::Archiver> archiver;
  if (!flags.archive.empty()) {
    absl::StatusOr<int64_t> every_ms = util::ParseDurationMs(flags.archive_every);
    if (!every_ms.ok() || *every_ms < 1000) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--archive-every \"%s\": want a duration of at least 1s, such as 10m",
          flags.archive_every)));
    }
    absl::StatusOr<int64_t> settle_ms = util::ParseDurationMs(flags.archive_settle);
    if (!settle_ms.ok()) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--archive-settle \"%s\": %s", flags.archive_settle, settle_ms.status().message())));
    }
    absl::StatusOr<std::unique_ptr<model::ObjectStore>> target =
        app::OpenArchive(flags.archive, {.endpoint = flags.archive_endpoint});
    if (!target.ok()) return ReportError(target.status());
    archive_target = *std::move(target);
    app::ArchiverOptions archiver_options;
    archiver_options.interval_ms = *every_ms;
    archiver_options.settle_ms = *settle_ms;
    archiver_options.clock = &(*db)->clock();
    // As the folder's writer, its retention keeps what the archive has not taken.
    if (ingest != nullptr) {
      archiver_options.hold = db->get();
      archiver_options.ingest = ingest.get();
      archiver_options.late = late_journal.get();
      archiver_options.store = &reader;
    }
    archiver = std::make_unique<app::Archiver>(&reader, &reader, &reader, archive_target.get(),
                                               archiver_options);
    if (absl::Status s = app::RecordArchive(data_dir, {flags.archive, flags.archive_endpoint});
        !s.ok()) {
      return ReportError(s, 1);
    }
  }
  // Jobs archived complete read back whole (trainwatch.Trial, charts, replays).
  app::ReadersWithArchive with_archive(&reader, &reader, &reader, data_dir,
                                       app::FindRecordedArchive(data_dir));
  backends.metrics = &with_archive.metrics();
  backends.logs = &with_archive.logs();
  if (ingest != nullptr) {
    alarms = std::make_unique<app::LocalAlarms>(ingest.get(), &reader, &reader, &rules->actions());
    if (absl::Status s = alarms->Start(); !s.ok()) return ReportError(s);
    backends.alarms = alarms.get();
  }
  // Remote write out: queued in the data folder, sent in order.
  RemoteWrites remote_writes;
  remote_writes.ingest = ingest.get();
  if (!flags.remote_write.empty() && ingest == nullptr) {
    return ReportError(absl::FailedPreconditionError(
        "--remote-write needs this server to hold the data folder (a run holds it now); "
        "start the server once that run ends"));
  }
  for (size_t i = 0; i < flags.remote_write.size(); ++i) {
    const std::string& url = flags.remote_write[i];
    if (std::find(flags.remote_write.begin(), flags.remote_write.begin() + i, url) !=
        flags.remote_write.begin() + i) {
      return ReportError(absl::InvalidArgumentError(
          absl::StrFormat("--remote-write %s is given twice; give each receiver once",
                          agent::WithoutUserInfo(url))), 2);
    }
    agent::RemoteWriteOptions rw;
    rw.url = url;
    rw.headers = flags.remote_write_headers;
    rw.queue_dir = RemoteWriteQueueDir(data_dir, agent::WithoutUserInfo(url));
    absl::StatusOr<std::unique_ptr<agent::RemoteWriteOut>> out = agent::RemoteWriteOut::Create(rw);
    if (!out.ok()) return ReportError(out.status(), absl::IsInvalidArgument(out.status()) ? 2 : 1);
    ingest->Subscribe(out->get());
    remote_writes.outs.push_back(*std::move(out));
  }
  // Each job that ends gets its report in its folder (jobs/NAME/report.html).
  std::unique_ptr<app::JobReports> reports;
  if (ingest != nullptr) reports = std::make_unique<app::JobReports>(**db, data_dir, ingest.get());
  if (agents != nullptr) DeliverLeftoverSpools(data_dir, *agents);
  // The AWS api, the native api, the dashboard's live stream and /metrics.
  app::ServeOptions serve_options;
  serve_options.api = api_options;
  serve_options.version = VersionString();
  serve_options.server.host = address->host;
  serve_options.server.port = address->port;
  serve_options.server.authenticated = api_options.credentials != nullptr;
  serve_options.server.threads = flags.threads;
  serve_options.server.poll_us = flags.poll_us;
  serve_options.db = db->get();
  if (rules != nullptr) serve_options.rules = &rules->engine();
  for (const auto& out : remote_writes.outs) serve_options.remote_writes.push_back(out.get());
  serve_options.archiver = archiver.get();
  absl::StatusOr<std::unique_ptr<app::Serving>> served =
      app::Serving::Start(serve_options, backends, ingest.get());
  if (!served.ok()) {
    return ReportError(served.status(), absl::IsUnavailable(served.status()) ? 1 : 2);
  }
  for (const model::JobRecord& job : in_progress) (*served)->hub().KnowJob(job.name);
  server::Server* srv = &(*served)->server();
  const std::string url = (*served)->url();
  // Under --auth the scripts of CreateTrainingJob's jobs, which hold no key,
  // send to an endpoint of their own on loopback, as `trainwatch run`'s do.
  std::unique_ptr<app::ClientEndpoint> jobs_endpoint;
  if (local_jobs != nullptr) {
    // CreateTrainingJob's scripts send what they log through the Python
    // client to this server, as `trainwatch run`'s send to their run.
    absl::StatusOr<std::string> python_dir = app::WritePythonPackage(data_dir);
    if (!python_dir.ok()) {
      std::fprintf(stderr, "trainwatch: %s; jobs need `pip install` of it to import trainwatch\n",
                   std::string(python_dir.status().message()).c_str());
    }
    std::string runner_url = url;
    if (api_options.credentials != nullptr) {
      absl::StatusOr<std::unique_ptr<app::ClientEndpoint>> endpoint =
          app::ClientEndpoint::Start(ingest.get(), VersionString());
      if (!endpoint.ok()) return ReportError(endpoint.status(), 1);
      jobs_endpoint = *std::move(endpoint);
      runner_url = jobs_endpoint->url();
    }
    std::map<std::string, std::string> env{{"TRAINWATCH_RUNNER_URL", runner_url}};
    if (python_dir.ok()) env["PYTHONPATH"] = app::PythonPathWith(*python_dir);
    local_jobs->SetRunnerEnvironment(std::move(env));
  }
  if (agents != nullptr) {
    if (absl::Status s = agent::PublishServer(data_dir, url); !s.ok()) {
      std::fprintf(stderr, "trainwatch: %s; runs will not find this server\n",
                   std::string(s.message()).c_str());
    }
  }
  if (archiver != nullptr) archiver->Start();
  std::printf("trainwatch: serving %s (data %s%s); Ctrl-C stops\n", url.c_str(),
              data_dir.c_str(), api_options.credentials ? ", credentials required" : "");
  std::fflush(stdout);
  // Runners on other machines that went silent are recorded as Failed.
  util::Mutex sweep_mu;
  std::condition_variable sweep_cv;
  bool serving = true;
  std::thread sweeper([&] {
    const auto every =
        std::chrono::milliseconds(std::clamp<int64_t>(*runner_timeout_ms / 4, 250, 30000));
    util::MutexLock lock(sweep_mu);
    while (!lock.WaitFor(sweep_cv, every, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sweep_mu) { return !serving; })) {
      lock.Unlock();
      jobs.RecordSilentRunners();
      lock.Lock();
    }
  });
  srv->RunUntilSignal();
  {
    util::MutexLock lock(sweep_mu);
    serving = false;
  }
  sweep_cv.notify_all();
  sweeper.join();
  agent::WithdrawServer(data_dir);
  served->reset();   // the server has stopped; the live hub leaves the ingest
  archiver.reset();  // waits for a pass in progress
  alarms.reset();    // its thread runs actions through the rules'
  rules.reset();     // before the backends it acts through
  reports.reset();   // writes the reports still due
  // The jobs' last samples reach the remote-write queues, which go next.
  local_jobs.reset();
  return 0;
}

}  // namespace

void RegisterServerCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd = root.add_subcommand(
      "server", "serve the CloudWatch, CloudWatch Logs and SageMaker APIs for AWS clients");
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT to listen on (default 127.0.0.1:9400; other than loopback needs --auth)");
  cmd->add_option("--auth", flags->auth_file,
                  "file of access keys and secrets: AWS requests must then carry AWS Signature "
                  "V4, and /api/v1/, /metrics and the dashboard SigV4 or HTTP Basic credentials "
                  "(docs/api.md)");
  cmd->add_option("--threads", flags->threads, "threads that answer requests (default 2; one more accepts connections)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--poll-us", flags->poll_us,
                  "after answering, a request thread looks for the next request this many "
                  "microseconds before it sleeps: lower latency for clients that send one "
                  "request after another, at most that much CPU after each thing it runs "
                  "(default 200; 0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{100'000}));
  cmd->add_option("--runner-timeout", flags->runner_timeout,
                  "record a job host as Failed when its runner, on another machine, has not "
                  "been heard from for this long (runners beat every second; default 5m)");
  cmd->add_option("--remote-write", flags->remote_write,
                  "also send every sample this server ingests to this Prometheus remote-write "
                  "receiver (http://[user:password@]host:port/path; repeatable), through a "
                  "durable queue in the data folder (docs/prometheus.md)");
  cmd->add_option("--remote-write-header", flags->remote_write_headers,
                  "a header sent with every remote-write request, \"Name: value\" (repeatable; "
                  "e.g. \"Authorization: Bearer TOKEN\")");
  cmd->add_option("--archive", flags->archive,
                  "also archive every job's metrics, profiling data and logs to this folder or "
                  "s3://BUCKET[/PREFIX], as `trainwatch archive` does (docs/archive.md)");
  cmd->add_option("--archive-endpoint", flags->archive_endpoint,
                  "the S3-compatible service of an s3:// archive (default: $AWS_ENDPOINT_URL_S3, "
                  "$AWS_ENDPOINT_URL, else AWS S3)");
  cmd->add_option("--archive-every", flags->archive_every,
                  "how often the archive takes what is new (default 10m)");
  cmd->add_option("--archive-settle", flags->archive_settle,
                  "data is archived once it is this old, and a job once it ended this long ago "
                  "(later data may still come; default 5m)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch server\n"
      "  aws --endpoint-url http://127.0.0.1:9400 logs tail /aws/sagemaker/TrainingJobs\n"
      "  aws --endpoint-url http://127.0.0.1:9400 sagemaker describe-training-job "
      "--training-job-name mnist-7\n"
      "  aws --endpoint-url http://127.0.0.1:9400 cloudwatch put-metric-alarm --alarm-name loss-up "
      "--namespace /aws/sagemaker/TrainingJobs --metric-name train:loss --dimensions "
      "Name=TrainingJobName,Value=mnist-7 --statistic Maximum --period 60 --evaluation-periods 3 "
      "--threshold 5 --comparison-operator GreaterThanThreshold --alarm-actions StopTraining\n"
      "  trainwatch server --remote-write http://127.0.0.1:8428/api/v1/write\n"
      "  trainwatch server --archive s3://my-bucket/trainwatch --archive-every 5m\n"
      "  trainwatch server --listen 0.0.0.0:9400 --auth ~/.config/trainwatch/auth\n"
      "See docs/api.md for the operations served and the auth file format, docs/alarms.md for "
      "alarms.");
  cmd->callback([flags, options, exit_code] { *exit_code = RunServer(*flags, *options); });
}

}  // namespace trainwatch::cli
