// trainwatch report: a job's report as one self-contained HTML file (or its
// content as JSON), from the data folder.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "app/job_access.h"
#include "app/job_reports.h"
#include "cli/commands.h"
#include "app/archiver.h"
#include "query/store_reader.h"
#include "report/report.h"
#include "util/clock.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct ReportFlags {
  std::string job;
  std::string output = "-";
  std::string format = "html";
  int width = 720;
};

int Run(const ReportFlags& flags, const GlobalOptions& options) {
  if (flags.format != "html" && flags.format != "json") {
    return ReportError(absl::InvalidArgumentError(absl::StrFormat(
        "--format %s: use html (one self-contained file) or json (the same content as data)",
        flags.format)));
  }
  const std::string data_dir = DataDir(options);
  auto db = app::OpenForRead(data_dir);
  if (!db.ok()) return ReportError(db.status());
  auto job = app::LoadJob(**db, flags.job);
  if (!job.ok()) return ReportError(job.status(), 1);
  if (!job->has_value()) return ReportError(app::JobNotFound(flags.job, data_dir));

  const bool show_progress = ::isatty(2);
  report::ReportOptions report_options;
  report_options.chart_width = flags.width;
  report_options.now_ms = report_options.generated_ms = util::SystemClock::Get().NowMs();
  report_options.progress = [&](int64_t t_ms) {
    if (show_progress) {
      std::fprintf(stderr, "\rtrainwatch: read the job's data up to %s",
                   util::FormatIso8601Ms(t_ms).c_str());
    }
  };
  query::StoreReader reader(**db);
  // A job archived complete reads back whole, whatever the folder has dropped since.
  app::ReadersWithArchive readers(&reader, &reader, &reader, (*db)->data_dir(),
                                  app::FindRecordedArchive((*db)->data_dir()));
  absl::StatusOr<report::JobReport> built =
      report::BuildReport(**job, readers.metrics(), readers.logs(), report_options);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!built.ok()) return ReportError(built.status(), 1);
  const std::string text =
      flags.format == "json" ? report::RenderJson(*built) : report::RenderHtml(*built);
  if (flags.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream out(flags.output, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    return ReportError(absl::UnavailableError(absl::StrFormat(
        "cannot write %s: check that its folder exists and is writable", flags.output)), 1);
  }
  std::fprintf(stderr, "trainwatch: report of job %s written to %s\n", (*job)->name.c_str(),
               flags.output.c_str());
  return 0;
}

}  // namespace

void RegisterReportCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd = root.add_subcommand(
      "report",
      "a job's report: summary, where the time went, rules that fired and what to do, metric "
      "charts, system utilisation, step times, efficiency; one HTML file that opens offline");
  cmd->add_option("job", flags->job, "the job")->required();
  cmd->add_option("-o,--output", flags->output, "the file to write (default -: standard output)");
  CLI::Option* format = cmd->add_option("--format", flags->format, "html (default) or json (the same content as data)");
  // As describe, rules and admin compact take it.
  cmd->add_flag_callback("--json", [flags] { flags->format = "json"; }, "the same as --format json")
      ->excludes(format);
  cmd->add_option("--width", flags->width, "pixel columns per chart (default 720)")
      ->check(CLI::Range(16, 4000));
  AddDataOption(cmd, options);
  cmd->footer(
      "A job that ends also gets its report in the data folder: jobs/JOB/report.html.\n"
      "Examples:\n"
      "  trainwatch report mnist-7 -o report.html\n"
      "  trainwatch report mnist-7 --format json | jq .efficiency");
  cmd->callback([flags, options, exit_code] { *exit_code = Run(*flags, *options); });
}

}  // namespace trainwatch::cli
