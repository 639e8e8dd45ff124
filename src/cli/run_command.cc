// trainwatch run -- COMMAND: runs a training job under trainwatch.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "agent/agent.h"
#include "app/client_endpoint.h"
#include "app/job_access.h"
#include "app/job_reports.h"
#include "app/local_rules.h"
#include "app/python_package.h"
#include "app/serve.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/rules_flags.h"
#include "extract/definitions.h"
#include "ingest/ingest.h"
#include "job/job_runner.h"
#include "job/runner_identity.h"
#include "job/training_run.h"
#include "profiler/profiler_options.h"
#include "query/store_reader.h"
#include "server/listen_address.h"
#include "util/clock.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

// How often a run that sends to a server tells it that it is alive (and asks
// whether a stop was requested).
constexpr int64_t kHeartbeatMs = 1000;
constexpr const char* kDefaultUiAddress = "127.0.0.1:9400";

// "running job NAME (where its data goes)" once the training process has
// started: a run refused before (a name taken, a command that cannot start)
// says only why.
class StartLine final : public job::JobObserver {
 public:
  explicit StartLine(std::string where) : where_(std::move(where)) {}
  void OnTrainingStarted(const model::JobRecord& job, pid_t /*pid*/) override {
    std::fprintf(stderr, "trainwatch: running job %s (%s)\n", job.name.c_str(), where_.c_str());
  }

 private:
  const std::string where_;
};

struct RunFlags {
  std::string name;
  std::vector<std::string> metrics;
  std::string definitions_file;
  std::string max_runtime = "1d";
  std::string stop_grace = "120s";
  std::string profile_interval = "1s";
  bool sagemaker_escaped = false;
  bool quiet = false;
  std::string endpoint;
  std::string delivery_timeout = "10m";
  int host = 1;
  // --ui [ADDR]: serve the dashboard from this process while the job runs.
  bool ui = false;
  std::string ui_address;
  RulesFlags rules;
  std::vector<std::string> command;
};

// Jobs left InProgress by a runner that died are recorded as Failed now that
// this run holds the folder.
void SweepDeadRunners(store::Db& db) {
  auto jobs = query::StoreReader(db).ListJobs();
  if (!jobs.ok()) return;
  for (model::JobRecord& job : *jobs) {
    if (!model::IsTerminal(job.status)) app::ReconcileJob(db, &job);
  }
}

std::string Summary(const job::RunResult& result) {
  const model::JobRecord& job = result.job;
  std::string text = absl::StrFormat("trainwatch: job %s%s %s", job.name,
                                     job.host_index == 1
                                         ? std::string()
                                         : absl::StrFormat(" (host algo-%d)", job.host_index),
                                     model::JobStatusName(job.status));
  if (job.secondary_status != model::SecondaryStatus::kCompleted &&
      job.secondary_status != model::SecondaryStatus::kFailed &&
      job.secondary_status != model::SecondaryStatus::kStopped) {
    text += absl::StrFormat(" (%s)", model::SecondaryStatusName(job.secondary_status));
  }
  if (job.training_start_ms && job.training_end_ms) {
    text += " after " + FormatElapsed(*job.training_end_ms - *job.training_start_ms);
  }
  text += absl::StrFormat(", exit status %d", result.exit_code);
  if (!job.final_metrics.empty()) {
    std::vector<std::string> parts;
    for (const model::FinalMetric& m : job.final_metrics) {
      parts.push_back(m.name + "=" + FormatDouble(m.value));
    }
    text += "; final metrics: " + absl::StrJoin(parts, ", ");
  }
  text += absl::StrFormat("\ntrainwatch: `trainwatch describe %s` for details, `trainwatch logs %s` "
                          "for its output\n",
                          job.name, job.name);
  return text;
}

// "trainwatch: rules: 9 NoIssuesFound, 1 IssuesFound: ExplodingTensor: train:loss was NaN ..."
std::string RulesSummary(const std::vector<model::RuleStatus>& statuses) {
  std::map<std::string, int> counts;
  std::string issues;
  std::vector<std::string> unchecked;  // found nothing for want of data
  for (const model::RuleStatus& s : statuses) {
    if (model::CheckedNothing(s)) {
      unchecked.push_back(s.configuration_name);
      continue;
    }
    ++counts[std::string(model::RuleStatusName(s.status))];
    if (s.status == model::RuleStatusKind::kIssuesFound ||
        s.status == model::RuleStatusKind::kError) {
      issues += absl::StrFormat("trainwatch:   %s %s: %s\n", s.configuration_name,
                                model::RuleStatusName(s.status), s.details);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts) parts.push_back(absl::StrFormat("%d %s", n, name));
  if (!unchecked.empty()) {
    parts.push_back(absl::StrFormat("%d without data to check (%s)", unchecked.size(),
                                    absl::StrJoin(unchecked, ", ")));
  }
  return absl::StrFormat("trainwatch: rules: %s\n", absl::StrJoin(parts, ", ")) + issues;
}

int RunRun(RunFlags flags, const GlobalOptions& options) {
  // A handful of threads (lines, logs, samples, profiler, store) each
  // allocating in bursts: glibc's default of 8 arenas per core leaves their
  // freed memory scattered; two arenas keep the runner's footprint small.
  // (For a build with the system allocator; jemalloc's two arenas are set in
  // allocator_jemalloc.cc.)
  ::mallopt(M_ARENA_MAX, 2);
  if (!flags.command.empty() && flags.command.front() == "--") flags.command.erase(flags.command.begin());
  if (flags.command.empty()) {
    return ReportError(absl::InvalidArgumentError(
        "no command to run; put it after --, e.g. trainwatch run -- python3 train.py"));
  }
  auto defs = MetricDefinitionsOf(flags.definitions_file, flags.metrics);
  if (!defs.ok()) return ReportError(defs.status());
  auto max_runtime_ms = util::ParseDurationMs(flags.max_runtime);
  if (!max_runtime_ms.ok()) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrFormat("--max-runtime: %s", max_runtime_ms.status().message())));
  }
  auto grace_ms = util::ParseDurationMs(flags.stop_grace);
  if (!grace_ms.ok()) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrFormat("--stop-grace: %s", grace_ms.status().message())));
  }
  auto interval_ms = profiler::ParseProfileInterval(flags.profile_interval);
  if (!interval_ms.ok()) return ReportError(interval_ms.status());

  absl::StatusOr<RulesSetup> rules_setup = LoadRulesFlags(flags.rules, *defs);
  if (!rules_setup.ok()) return ReportError(rules_setup.status());

  job::RunSpec spec;
  spec.name = flags.name;
  spec.rule_configurations = rules_setup->configurations;
  spec.rules_profile = rules_setup->profile;
  spec.step_metric = rules_setup->step_metric;
  spec.command = flags.command;
  spec.metric_definitions = std::move(*defs);
  spec.sagemaker_escaped = flags.sagemaker_escaped;
  spec.max_runtime_s = (*max_runtime_ms + 999) / 1000;
  spec.stop_grace_ms = *grace_ms;
  spec.profiling_interval_ms = *interval_ms;
  spec.host_index = flags.host;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) spec.working_dir = cwd;

  // --ui: where the dashboard listens (loopback only: a run has no --auth).
  server::ListenAddress ui_address;
  if (flags.ui) {
    const std::string text = flags.ui_address.empty() ? kDefaultUiAddress : flags.ui_address;
    absl::StatusOr<server::ListenAddress> parsed = server::ParseListenAddress(text);
    if (!parsed.ok()) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--ui \"%s\": want HOST:PORT, e.g. 127.0.0.1:9400, or 127.0.0.1:0 for any free port",
          text)));
    }
    if (!server::IsLoopback(parsed->host)) {
      return ReportError(absl::InvalidArgumentError(absl::StrFormat(
          "--ui %s: a run serves its dashboard on this machine only (127.0.0.1); to serve other "
          "machines, start `trainwatch server --listen %s --auth FILE` and run with --endpoint",
          text, text)));
    }
    ui_address = *parsed;
  }

  const std::string data_dir = DataDir(options);
  auto delivery_timeout_ms = util::ParseDurationMs(flags.delivery_timeout);
  if (!delivery_timeout_ms.ok()) return ReportError(delivery_timeout_ms.status());
  // Where the data goes: the server named, the server that holds the data
  // folder, or the folder itself.
  std::string endpoint = flags.endpoint;
  if (endpoint.empty()) {
    if (const char* env = std::getenv("TRAINWATCH_ENDPOINT"); env != nullptr) endpoint = env;
  }
  if (flags.ui && !endpoint.empty()) {
    return ReportError(absl::FailedPreconditionError(absl::StrFormat(
        "--ui serves the data this run keeps itself, but its data goes to the server at %s: "
        "open %s/ for the dashboard instead (and leave --ui out)",
        endpoint, absl::StripSuffix(endpoint, "/"))));
  }
  const bool named_endpoint = !endpoint.empty();
  if (endpoint.empty()) endpoint = agent::FindServer(data_dir).value_or("");

  std::unique_ptr<store::Db> db;
  std::unique_ptr<ingest::Ingest> local;
  // Without a server the rules run here, on this run's own ingest (a server
  // runs them for the runs that send to it). Their actions reach this job.
  std::atomic<job::TrainingRun*> this_run{nullptr};
  // Other jobs, for SimilarAcrossRuns (before the rules: it outlives their engine).
  std::unique_ptr<query::StoreReader> rules_reader;
  std::unique_ptr<app::LocalRules> local_rules;
  // The job's report, written into its folder when it ends (a server that
  // takes the data writes it there instead).
  std::unique_ptr<app::JobReports> reports;
  std::unique_ptr<agent::RemoteSink> remote;
  bool server_of_data_folder = false;  // the remote one was found through data_dir
  model::TelemetrySink* sink = nullptr;
  if (endpoint.empty()) {
    auto opened = app::OpenForRun(data_dir);
    if (!opened.ok()) return ReportError(opened.status());
    db = *std::move(opened);
    SweepDeadRunners(*db);
    local = std::make_unique<ingest::Ingest>(db.get());
    sink = local.get();
    reports = std::make_unique<app::JobReports>(*db, data_dir, local.get());
    if (!rules_setup->configurations.empty()) {
      rules::ActionTargets targets;
      targets.stop = [&this_run](const std::string&, const std::string& message) {
        if (job::TrainingRun* run = this_run.load()) run->RequestStop(message);
      };
      targets.signal = [&this_run](const std::string& job, int signo) -> absl::Status {
        job::TrainingRun* run = this_run.load();
        if (run == nullptr) return absl::FailedPreconditionError("job " + job + " is not running");
        return run->Signal(signo);
      };
      rules_reader = std::make_unique<query::StoreReader>(*db);
      local_rules = std::make_unique<app::LocalRules>(
          local.get(), std::move(targets),
          rules::RuleEnvironment{
              .reference = rules::StoreReferenceLoader(rules_reader.get(), rules_reader.get())});
    }
  } else {
    agent::RemoteSinkOptions remote_options;
    remote_options.endpoint = endpoint;
    remote_options.agent = agent::NewAgentName();
    remote_options.spool_dir = agent::SpoolRoot(data_dir) + "/" + remote_options.agent;
    remote_options.server_of_data_folder = server_of_data_folder =
        !named_endpoint || agent::FindServer(data_dir) == std::optional<std::string>(endpoint);
    auto created = agent::RemoteSink::Create(remote_options);
    if (!created.ok()) return ReportError(created.status());
    remote = *std::move(created);
    sink = remote.get();
  }
  // The dashboard, served from this process over its own store while the
  // job runs, composed as `trainwatch server` composes it.
  std::unique_ptr<app::StoreServices> ui_services;
  std::unique_ptr<app::Serving> ui;
  if (flags.ui) {
    if (local == nullptr) {
      // A server took the data folder after all (found, not named).
      std::fprintf(stderr,
                   "trainwatch: --ui: the server at %s takes this run's data: its dashboard is at "
                   "%s/\n",
                   endpoint.c_str(), std::string(absl::StripSuffix(endpoint, "/")).c_str());
    } else {
      ui_services = std::make_unique<app::StoreServices>(*db, local.get());
      app::ServeOptions serve_options;
      serve_options.version = VersionString();
      serve_options.server.host = ui_address.host;
      serve_options.server.port = ui_address.port;
      serve_options.db = db.get();
      if (local_rules != nullptr) serve_options.rules = &local_rules->engine();
      absl::StatusOr<std::unique_ptr<app::Serving>> served =
          app::Serving::Start(serve_options, ui_services->backends(), local.get());
      if (!served.ok()) {
        // Server::Start names --listen, the server's flag: say it in --ui's terms.
        if (!absl::IsUnavailable(served.status())) return ReportError(served.status());
        return ReportError(absl::UnavailableError(absl::StrFormat(
            "--ui %s:%d: cannot listen there; is another program using the port? Pick another "
            "address, e.g. --ui 127.0.0.1:0 for any free port",
            ui_address.host, ui_address.port)));
      }
      ui = *std::move(served);
      std::fprintf(stderr, "trainwatch: dashboard at %s/ (while the job runs)\n",
                   ui->url().c_str());
    }
  }
  // Where the process's Python client sends what it logs (docs/python.md):
  // through this run's sink, as the metrics of its lines.
  std::unique_ptr<app::ClientEndpoint> client;
  if (absl::StatusOr<std::unique_ptr<app::ClientEndpoint>> started =
          app::ClientEndpoint::Start(sink, VersionString());
      started.ok()) {
    client = *std::move(started);
    absl::StatusOr<std::string> python_dir = app::WritePythonPackage(data_dir);
    if (!python_dir.ok()) {
      std::fprintf(stderr, "trainwatch: %s; `import trainwatch` needs `pip install` of it\n",
                   std::string(python_dir.status().message()).c_str());
    }
    spec.runner_environment = client->Environment(python_dir.value_or(""));
  } else {
    std::fprintf(stderr,
                 "trainwatch: the endpoint for the Python client cannot start (%s): what the "
                 "job logs through it is not kept; its output still is\n",
                 std::string(started.status().message()).c_str());
  }
  auto runner = job::TrainingRun::Create(std::move(spec), sink);
  if (!runner.ok()) return ReportError(runner.status());
  this_run = runner->get();
  if (client) {
    client->Attach(runner->get());
    (*runner)->AddObserver(client.get());
  }
  // The heartbeat: a server on another machine can neither check nor signal
  // this process; it records a stop request that the heartbeat's answer carries.
  std::unique_ptr<agent::StopWatcher> stop_watcher;
  if (remote) {
    job::TrainingRun* job_runner = runner->get();
    stop_watcher = std::make_unique<agent::StopWatcher>(
        [&remote, job_runner, host = flags.host, identity = job::CurrentRunnerIdentity()] {
          return remote->Heartbeat(job_runner->Snapshot().name, host, identity);
        },
        kHeartbeatMs, [job_runner] { job_runner->RequestStop(); });
  }
  StartLine start_line(remote ? "data to the server at " + endpoint : "data in " + data_dir);
  if (!flags.quiet) (*runner)->AddObserver(&start_line);
  auto result = (*runner)->Run();
  // The heartbeat goes on while the rest is delivered below: a server that
  // heard nothing for its --runner-timeout would record a job that finished
  // as Failed while a long backlog drains.
  client.reset();  // the process has exited: what it sent is in
  std::string rules_summary;
  if (local_rules) {
    local_rules->Flush();  // the job's end is evaluated and recorded
    this_run = nullptr;
    if (result.ok()) {
      if (auto statuses = local_rules->engine().Statuses(result->job.name)) {
        rules_summary = RulesSummary(*statuses);
      }
    }
  }
  std::string report_line;
  if (reports) {
    // After the rules' final statuses, which the report shows.
    for (const std::string& path : reports->Flush()) {
      report_line += "trainwatch: report: " + path + "\n";
    }
    reports.reset();
  }
  ui.reset();  // the job has ended: streams close, the port is free
  ui_services.reset();
  local_rules.reset();  // after the UI, whose /metrics reads the engine
  if (remote && !result.ok() && !remote->delivered_any()) {
    // The server never took the job record (it stopped, or refused us): the
    // job did not start, and a later server must not find a record of it.
    const std::string spool_dir = remote->spool_dir();
    stop_watcher.reset();
    remote.reset();
    std::error_code ec;
    std::filesystem::remove_all(spool_dir, ec);
  }
  if (remote) {
    // Whatever the server has not taken yet is on disk: wait for it (a
    // server that is away for a while gets it when it is back).
    const bool delivered = remote->Drain(*delivery_timeout_ms, [&](int64_t pending,
                                                                   const std::string& error) {
      if (flags.quiet) return;
      std::fprintf(stderr, "trainwatch: %lld batches wait for the server at %s (%s)\n",
                   static_cast<long long>(pending), endpoint.c_str(), error.c_str());
    });
    stop_watcher.reset();
    if (!delivered && server_of_data_folder) {
      std::fprintf(stderr,
                   "trainwatch: %lld batches are not delivered yet; they stay in %s, and "
                   "`trainwatch server` on this data folder delivers them when it starts\n",
                   static_cast<long long>(remote->pending()), remote->spool_dir().c_str());
    } else if (!delivered) {
      std::fprintf(stderr,
                   "trainwatch: %lld batches are not delivered yet; they stay in %s, and "
                   "`trainwatch admin deliver --data %s` sends them to %s once it answers\n",
                   static_cast<long long>(remote->pending()), remote->spool_dir().c_str(),
                   data_dir.c_str(), endpoint.c_str());
    } else {
      const std::string spool_dir = remote->spool_dir();
      remote.reset();  // lets go of the spool's lock
      std::error_code ec;
      std::filesystem::remove_all(spool_dir, ec);
    }
  }
  if (!result.ok()) {
    if (absl::IsAlreadyExists(result.status()) &&
        !absl::StrContains(result.status().message(), "--name")) {
      return ReportError(absl::AlreadyExistsError(absl::StrFormat(
          "%s; pick another --name, or leave --name out for a generated one",
          result.status().message())));
    }
    return ReportError(result.status());
  }
  if (!flags.quiet) {
    std::string text = Summary(*result) + rules_summary + report_line;
    (void)!::write(STDERR_FILENO, text.data(), text.size());
  }
  return result->exit_code;
}

}  // namespace

void RegisterRunCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = root.add_subcommand(
      "run", "run a training command as a job: keep its output, turn its lines into metrics, "
             "profile it");
  cmd->add_option("--name", flags->name,
                  "job name: letters, digits and hyphens, at most 63 (default: from the command "
                  "and the time)");
  // One value per --metric: a vector option would otherwise also take the
  // "--" and the command after it.
  cmd->add_option("--metric", flags->metrics,
                  "a metric definition NAME=REGEX (repeatable); group 1 of the first match in a "
                  "line is the value")
      ->type_name("NAME=REGEX")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--definitions", flags->definitions_file,
                  "SageMaker MetricDefinitions JSON file: [{\"Name\": ..., \"Regex\": ...}]")
      ->type_name("FILE");
  cmd->add_option("--max-runtime", flags->max_runtime,
                  "stop the job after this long (seconds, or 90m, 12h, 2d; default 1d, at most 28d)");
  cmd->add_option("--stop-grace", flags->stop_grace,
                  "between SIGTERM and SIGKILL when the job is stopped (default 120s)");
  cmd->add_option("--profile-interval", flags->profile_interval,
                  "system profiling interval: 100ms, 200ms, 500ms, 1s, 5s, 1m or off (default 1s)");
  cmd->add_flag("--sagemaker-escaped", flags->sagemaker_escaped,
                "match definitions against CloudWatch's escaped text (tab as #011)");
  cmd->add_flag("-q,--quiet", flags->quiet, "no trainwatch lines before and after the job");
  cmd->add_option("--endpoint", flags->endpoint,
                  "send the job's data to the trainwatch server at this URL (default: "
                  "$TRAINWATCH_ENDPOINT, else the server that holds --data, else write --data "
                  "directly)")
      ->type_name("URL");
  cmd->add_option("--delivery-timeout", flags->delivery_timeout,
                  "with a server: how long to wait at the end for it to take what is spooled "
                  "(default 10m)");
  cmd->add_option("--host", flags->host,
                  "this host's number when one job runs on several hosts (1, 2, ...; default 1): "
                  "start `trainwatch run --name JOB --host N` on each, all sending to one server; "
                  "the Host dimension is JOB/algo-N")
      ->check(CLI::Range(1, model::kMaxJobHosts))
      ->type_name("N");
  cmd->add_option("--ui", flags->ui_address,
                  "serve the dashboard (live charts, logs, rule findings) from this run while "
                  "the job runs, at ADDR (default 127.0.0.1:9400; port 0: any free port; the URL "
                  "is printed); not with --endpoint: open the server's URL instead")
      ->expected(0, 1)
      ->type_name("[ADDR]");
  AddRulesFlags(cmd, &flags->rules);
  AddDataOption(cmd, options);
  cmd->add_option("command", flags->command, "the training command and its arguments, after --")
      ->expected(-1);
  cmd->footer(
      "The command's output reaches the terminal unchanged; trainwatch's exit status is the\n"
      "command's (128+signal when a signal ended it). Ctrl-C is passed on (twice kills).\n"
      "Examples:\n"
      "  trainwatch run --definitions examples/definitions.json -- python3 examples/train.py\n"
      "  trainwatch run --name mnist-7 --metric 'train:loss=loss: ([0-9.eE+-]+)' \\\n"
      "      --max-runtime 2h --profile-interval 100ms -- python3 train.py --epochs 10\n"
      "  trainwatch run --metric 'train:loss=loss: (\\S+)' \\\n"
      "      --rule ExplodingTensor:action=StopTraining --rule StalledTrainingRule:threshold=10m \\\n"
      "      -- python3 train.py          # stop the job when the loss turns nan\n"
      "  trainwatch run --ui --metric 'train:loss=loss: (\\S+)' -- python3 train.py\n"
      "      # live charts at the URL printed (http://127.0.0.1:9400/) while it runs\n"
      "  trainwatch run --ui 127.0.0.1:0 -- python3 train.py   # any free port\n"
      "  trainwatch run --endpoint http://gpu-head:9400 -- python3 train.py   # to a server\n"
      "  trainwatch run --endpoint http://gpu-head:9400 --name ddp-3 --host 2 -- torchrun ...\n"
      "With a server, data is spooled on disk first (<data>/spool) and delivered exactly once,\n"
      "however long the server is away; the training command never waits for it.");
  cmd->callback([flags, options, exit_code, cmd] {
    flags->ui = cmd->count("--ui") > 0;
    *exit_code = RunRun(*flags, *options);
  });
}

}  // namespace trainwatch::cli
