// trainwatch stop NAME: stops a running job from another terminal, as
// StopTrainingJob does (Stopping, SIGTERM, SIGKILL after the grace period, Stopped).
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "agent/remote_sink.h"
#include "agent/server_discovery.h"
#include "app/job_access.h"
#include "nlohmann/json.hpp"
#include "cli/commands.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct StopFlags {
  std::string name;
  bool wait = true;
  std::string timeout = "5m";
};

int RunStop(const StopFlags& flags, const GlobalOptions& options) {
  absl::StatusOr<int64_t> timeout_ms = util::ParseDurationMs(flags.timeout);
  if (!timeout_ms.ok()) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrFormat("--timeout: %s", timeout_ms.status().message())));
  }
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.name);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.name, data_dir));
  if (model::IsTerminal((*job)->status)) {
    return ReportError(absl::FailedPreconditionError(absl::StrFormat(
        "job %s has already ended (%s): nothing to stop; `trainwatch describe %s` says how",
        (*job)->name, model::JobStatusName((*job)->status), (*job)->name)));
  }
  if (std::optional<std::string> server = agent::FindServer(data_dir)) {
    // The server may run the job itself (CreateTrainingJob): ask it, it knows.
    agent::HttpResult r = agent::HttpCall("POST", *server + "/api/v1/jobs/" + (*job)->name + "/stop",
                                      "", 2000, 30000);
    if (r.status != 200) {
      nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
      std::string message = r.status == 0 ? r.error : r.body;
      if (body.is_object() && body.contains("error") && body["error"].is_object() &&
          body["error"].value("message", "") != "") {
        message = body["error"]["message"].get<std::string>();
      }
      return ReportError(absl::FailedPreconditionError(absl::StrFormat(
                             "the server at %s did not stop %s: %s", *server, (*job)->name,
                             message)),
                         r.status == 0 ? 1 : 2);
    }
  } else if (absl::Status s = app::StopJobHosts(**db, **job); !s.ok()) {
    return ReportError(s, absl::IsPermissionDenied(s) ? 1 : 2);
  }
  std::fprintf(stderr, "trainwatch: stopping %s...\n", (*job)->name.c_str());
  if (!flags.wait) return 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto latest = app::LoadJob(**db, flags.name);
    if (!latest.ok()) return ReportError(latest.status(), 1);
    if (latest->has_value() && model::IsTerminal((*latest)->status)) {
      std::fprintf(stderr, "trainwatch: %s is %s (%s)\n", (*latest)->name.c_str(),
                   std::string(model::JobStatusName((*latest)->status)).c_str(),
                   std::string(model::SecondaryStatusName((*latest)->secondary_status)).c_str());
      return 0;
    }
  }
  return ReportError(absl::DeadlineExceededError(absl::StrFormat(
                         "%s was asked to stop but is still running after %s; `trainwatch "
                         "describe %s` shows its status",
                         flags.name, util::FormatDurationMs(*timeout_ms), flags.name)),
                     1);
}

}  // namespace

void RegisterStopCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<StopFlags>();
  CLI::App* cmd = root.add_subcommand(
      "stop", "stop a running job (SIGTERM to the training process, SIGKILL after the grace period)");
  cmd->add_option("name", flags->name, "the job's name")->required();
  cmd->add_flag("!--no-wait", flags->wait, "return once the stop is requested");
  cmd->add_option("--timeout", flags->timeout,
                  "how long to wait for the job to stop: 300s, 5m... (default 5m)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch stop mnist-7\n"
      "  trainwatch stop mnist-7 --no-wait");
  cmd->callback([flags, options, exit_code] { *exit_code = RunStop(*flags, *options); });
}

}  // namespace trainwatch::cli
