// trainwatch rules: the built-in rules (list), a job's rule statuses and
// findings (JOB), and a stored job replayed through rules (replay JOB).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/rules_flags.h"
#include "model/job_record_json.h"
#include "app/archiver.h"
#include "query/store_reader.h"
#include "rules/catalog.h"
#include "rules/config.h"
#include "rules/engine.h"
#include "rules/inputs.h"
#include "rules/replay.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct RulesFlagsAll {
  std::string job;
  bool json = false;
  bool all = false;
  // replay
  std::string replay_job;
  std::vector<std::string> rules;
  std::string profile;
  bool replay_json = false;
};

void Print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

int RunList() {
  std::string out;
  for (rules::RuleFamily family : {rules::RuleFamily::kProfiler, rules::RuleFamily::kDebug}) {
    out += family == rules::RuleFamily::kProfiler ? "Profiler rules (system metrics):\n\n"
                                                  : "Rules over the job's metrics and output:\n\n";
    for (const rules::RuleInfo& info : rules::BuiltinRules()) {
      if (info.family != family) continue;
      out += absl::StrFormat("%s%s\n  %s\n  watches: %s\n", info.name,
                             info.in_default_set ? "  (default set)" : "", info.summary,
                             info.watches);
      for (const rules::ParamSpec& p : info.params) {
        std::string def = p.default_value.empty() ? "none" : std::string(p.default_value);
        if (!p.compat_value.empty()) {
          def += absl::StrFormat("; sagemaker_compat %s", p.compat_value);
        }
        out += absl::StrFormat("    %-28s %-10s default %s: %s\n", p.name,
                               rules::ParamTypeName(p.type), def, p.help);
      }
      out += "\n";
    }
  }
  out +=
      "Every rule also takes name=CONFIG_NAME and action=StopTraining | exec:/path/prog |\n"
      "webhook:http://host:port/path | signal:SIGUSR1 (repeatable) in --rule.\n";
  Print(out);
  return 0;
}

nlohmann::ordered_json StatusesJson(const std::string& job,
                                    const std::vector<model::RuleStatus>& statuses) {
  model::JobRecord carrier;
  carrier.name = job;
  carrier.rule_statuses = statuses;
  nlohmann::ordered_json wire = model::WireJobRecordJson(carrier);
  nlohmann::ordered_json out;
  out["job"] = job;
  out["rule_statuses"] = wire.contains("rule_statuses") ? wire["rule_statuses"]
                                                        : nlohmann::ordered_json::array();
  return out;
}

int RunShow(const RulesFlagsAll& flags, const GlobalOptions& options) {
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.job);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.job, data_dir));
  const model::JobRecord& record = **job;
  if (flags.all) {
    // Every recorded finding, from the job's rules log stream.
    query::StoreReader reader(**db);
    app::ReadersWithArchive readers(&reader, &reader, &reader, data_dir,
                                    app::FindRecordedArchive(data_dir));
    query::LogReadQuery q;
    q.stream = {std::string(model::kTrainingJobsLogGroup), rules::RulesLogStream(record.name)};
    q.forward = true;
    q.limit = 10000;
    std::string out;
    while (true) {
      absl::StatusOr<std::vector<query::StoredLogEvent>> page = readers.logs().ReadLogStream(q);
      if (absl::IsNotFound(page.status())) break;
      if (!page.ok()) return ReportError(page.status(), 1);
      for (const query::StoredLogEvent& e : *page) {
        out += flags.json ? e.message + "\n"
                          : util::FormatIso8601Ms(e.position.t_ms) + " " + e.message + "\n";
      }
      if (page->size() < q.limit) break;
      q.from = page->back().position;
      q.from->seq += 1;
    }
    Print(out);
    return 0;
  }
  if (flags.json) {
    Print(StatusesJson(record.name, record.rule_statuses).dump(2) + "\n");
    return 0;
  }
  if (record.rule_configurations.empty()) {
    std::fprintf(stderr, "job %s ran without rules (--no-rules)\n", record.name.c_str());
    return 0;
  }
  Print(FormatRuleStatuses(record));
  return 0;
}

int RunReplay(const RulesFlagsAll& flags, const GlobalOptions& options) {
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.replay_job);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.replay_job, data_dir));
  rules::ReplayOptions replay;
  for (const std::string& flag : flags.rules) {
    absl::StatusOr<model::RuleConfiguration> c = rules::ParseRuleFlag(flag);
    if (!c.ok()) return ReportError(c.status());
    replay.configurations.push_back(std::move(*c));
  }
  if (!flags.profile.empty()) replay.profile = flags.profile;
  if (replay.configurations.empty() && (*job)->rule_configurations.empty()) {
    return ReportError(absl::InvalidArgumentError(absl::StrFormat(
        "job %s ran without rules; name the rules to replay with --rule NAME[:param=value,...]",
        (*job)->name)));
  }
  const bool show_progress = ::isatty(2) && !flags.replay_json;
  replay.progress = [&](int64_t t_ms) {
    if (show_progress) {
      std::fprintf(stderr, "\rtrainwatch: replayed up to %s", util::FormatIso8601Ms(t_ms).c_str());
    }
  };
  query::StoreReader reader(**db);
  // A job archived complete replays on every sample, whatever the folder has dropped since.
  app::ReadersWithArchive readers(&reader, &reader, &reader, (*db)->data_dir(),
                                  app::FindRecordedArchive((*db)->data_dir()));
  replay.environment.reference = rules::StoreReferenceLoader(&readers.metrics(), &reader);
  absl::StatusOr<rules::ReplayResult> result =
      rules::ReplayJob(**job, readers.metrics(), readers.logs(), replay);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!result.ok()) return ReportError(result.status());
  if (flags.replay_json) {
    nlohmann::ordered_json out = StatusesJson((*job)->name, result->statuses);
    out["inputs"] = result->inputs;
    Print(out.dump(2) + "\n");
    return 0;
  }
  model::JobRecord shown = **job;
  if (!replay.configurations.empty()) shown.rule_configurations = replay.configurations;
  if (replay.profile) shown.rules_profile = *replay.profile;
  // Names as ValidateRuleConfigurations gave them.
  shown.rule_configurations.clear();
  for (const model::RuleStatus& s : result->statuses) {
    shown.rule_configurations.push_back({s.configuration_name, s.rule, {}, {}});
  }
  shown.rule_statuses = result->statuses;
  Print(absl::StrFormat("Replayed %d inputs of job %s (%s to %s).\n", result->inputs,
                        (*job)->name, util::FormatIso8601Ms(result->start_ms),
                        util::FormatIso8601Ms(result->end_ms)) +
        FormatRuleStatuses(shown));
  return 0;
}

}  // namespace

void RegisterRulesCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<RulesFlagsAll>();
  CLI::App* cmd = root.add_subcommand(
      "rules", "the built-in rules, a job's rule statuses and findings, and offline replay");
  cmd->add_option("job", flags->job, "the job whose rule statuses and findings to show");
  cmd->add_flag("--json", flags->json, "statuses and findings as JSON");
  cmd->add_flag("--all", flags->all,
                "every finding recorded, from the job's rules log stream (not only the first "
                "ones kept with the job)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch rules list\n"
      "  trainwatch rules mnist-7\n"
      "  trainwatch rules mnist-7 --json | jq '.rule_statuses[].findings'\n"
      "  trainwatch rules replay mnist-7 --rule LowGPUUtilization:threshold_p95=50");
  cmd->callback([cmd, flags, options, exit_code] {
    if (!cmd->get_subcommands().empty()) return;
    if (flags->job.empty()) {
      *exit_code = ReportError(absl::InvalidArgumentError(
          "name a job (trainwatch rules JOB), or use `trainwatch rules list` or "
          "`trainwatch rules replay JOB`"));
      return;
    }
    *exit_code = RunShow(*flags, *options);
  });

  CLI::App* list = cmd->add_subcommand("list", "every built-in rule, its parameters and defaults");
  list->callback([exit_code] { *exit_code = RunList(); });

  CLI::App* replay = cmd->add_subcommand(
      "replay", "run rules over a stored job's data, as they ran live (tune thresholds)");
  replay->add_option("job", flags->replay_job, "the job to replay")->required();
  replay->add_option("--rule", flags->rules,
                     "replay this rule instead of the job's own (repeatable), as run --rule")
      ->type_name("NAME[:P=V,...]")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  replay->add_option("--rules-profile", flags->profile, "default or sagemaker_compat");
  replay->add_flag("--json", flags->replay_json, "statuses and findings as JSON");
  AddDataOption(replay, options);
  replay->footer(
      "Examples:\n"
      "  trainwatch rules replay mnist-7\n"
      "  trainwatch rules replay mnist-7 --rule StepOutlier:stddev=5 --json");
  replay->callback([flags, options, exit_code] { *exit_code = RunReplay(*flags, *options); });
}

}  // namespace trainwatch::cli
