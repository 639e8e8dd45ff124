// trainwatch describe NAME: the training job as DescribeTrainingJob shows it.
#include <cstdio>
#include <memory>
#include <string>

#include "api/sagemaker/sagemaker.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/job_format.h"

namespace trainwatch::cli {
namespace {

struct DescribeFlags {
  std::string name;
  bool json = false;
};

int RunDescribe(const DescribeFlags& flags, const GlobalOptions& options) {
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.name);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.name, data_dir));
  const int64_t now_ms = (*db)->clock().NowMs();
  std::string text;
  if (flags.json) {
    // The exact body DescribeTrainingJob answers through `trainwatch server`.
    api::sagemaker::Context context;
    context.now_ms = now_ms;
    text = api::sagemaker::DescribeJson(**job, context) + "\n";
  } else {
    text = FormatJobDescription(**job, now_ms);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void RegisterDescribeCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<DescribeFlags>();
  CLI::App* cmd = root.add_subcommand(
      "describe", "show a training job: status, transitions, times, failure reason, final metrics");
  cmd->add_option("name", flags->name, "the job's name")->required();
  cmd->add_flag("--json", flags->json,
                "print DescribeTrainingJob's JSON response (field names as in SageMaker)");
  AddDataOption(cmd, options);
  cmd->footer(
      "Works while the job runs, from any terminal.\n"
      "Examples:\n"
      "  trainwatch describe mnist-7\n"
      "  trainwatch describe mnist-7 --json | jq .FinalMetricDataList\n"
      "  trainwatch describe mnist-7 --data /scratch/tw");
  cmd->callback([flags, options, exit_code] { *exit_code = RunDescribe(*flags, *options); });
}

}  // namespace trainwatch::cli
