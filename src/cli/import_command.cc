// trainwatch import FILE: bulk-load metrics history (docs/import.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "app/data_dir.h"
#include "cli/commands.h"
#include "ingest/importer.h"
#include "app/open_store.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

struct ImportFlags {
  std::string file;
  std::string format = "auto";
  std::string ns = "trainwatch/Imported";
  std::string keep;
  bool compact = false;
  bool quiet = false;
  int threads = 0;
  int64_t from_line = 1;
};

// "1234567" -> "1,234,567"
std::string Thousands(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Rate(double samples, double seconds) {
  double r = seconds > 0 ? samples / seconds : 0;
  if (r >= 1e6) return absl::StrFormat("%.2f M samples/s", r / 1e6);
  if (r >= 1e3) return absl::StrFormat("%.1f k samples/s", r / 1e3);
  return absl::StrFormat("%.0f samples/s", r);
}

int ExitCodeFor(const absl::Status& s) {
  if (absl::IsInvalidArgument(s) || absl::IsFailedPrecondition(s) || absl::IsNotFound(s) ||
      absl::IsPermissionDenied(s)) {
    return 2;
  }
  return 1;
}

int RunImport(const ImportFlags& flags, const GlobalOptions& global) {
  ingest::ImportOptions options;
  if (flags.format == "jsonl") {
    options.format = ingest::ImportFormat::kJsonl;
  } else if (flags.format == "csv") {
    options.format = ingest::ImportFormat::kCsv;
  } else if (flags.format == "vmimport") {
    options.format = ingest::ImportFormat::kVmImport;
  } else if (flags.format != "auto") {
    std::fprintf(stderr,
                 "trainwatch import: --format \"%s\": want jsonl, csv, vmimport or auto\n",
                 flags.format.c_str());
    return 2;
  }
  if (flags.from_line < 1) {
    std::fprintf(stderr,
                 "trainwatch import: --from-line %lld: lines are numbered from 1, as the "
                 "messages about a bad line number them\n",
                 static_cast<long long>(flags.from_line));
    return 2;
  }
  options.from_line = flags.from_line;
  options.default_namespace = flags.ns;
  options.parse_threads = flags.threads;
  if (!flags.keep.empty()) {
    if (flags.keep == "forever") {
      options.keep_ms = ingest::kKeepForever;
    } else {
      absl::StatusOr<int64_t> ms = util::ParseDurationMs(flags.keep);
      if (!ms.ok() || *ms <= 0) {
        std::fprintf(stderr,
                     "trainwatch import: --keep \"%s\": want a duration such as 90d or 2w, or "
                     "\"forever\"\n",
                     flags.keep.c_str());
        return 2;
      }
      options.keep_ms = *ms;
    }
  }
  const bool show_progress = !flags.quiet && ::isatty(STDERR_FILENO) != 0;
  if (show_progress) {
    options.progress = [&](const ingest::ImportProgress& p) {
      double pct = p.bytes_total > 0 ? 100.0 * p.bytes_read / p.bytes_total : 100.0;
      std::fprintf(stderr, "\rimporting %s: %5.1f%%  %s samples  %s   ", flags.file.c_str(), pct,
                   Thousands(p.samples).c_str(), Rate(p.samples, p.seconds).c_str());
      std::fflush(stderr);
    };
  }

  absl::StatusOr<std::unique_ptr<store::Db>> db =
      app::OpenForImport(app::ResolveDataDir(global.data_dir));
  if (!db.ok()) {
    std::fprintf(stderr, "trainwatch import: %s\n", std::string(db.status().message()).c_str());
    return ExitCodeFor(db.status());
  }
  absl::StatusOr<ingest::ImportResult> result = ingest::ImportFile(db->get(), flags.file, options);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!result.ok()) {
    std::fprintf(stderr, "trainwatch import: %s\n", std::string(result.status().message()).c_str());
    return ExitCodeFor(result.status());
  }
  std::printf("imported %s samples of %s series from %s (%s) in %.2f s (%s)\n",
              Thousands(result->samples).c_str(), Thousands(result->series).c_str(),
              flags.file.c_str(), std::string(ingest::ImportFormatName(result->format)).c_str(),
              result->seconds, Rate(result->samples, result->seconds).c_str());
  for (const ingest::ImportResult::BeyondRetention& b : result->beyond_retention) {
    // Told, not refused: a user may want only the rollups of old history.
    std::fprintf(stderr,
                 "trainwatch import: note: %s got samples older than its raw retention (%s): "
                 "%s drops them, and its rollups past their own retention; keep them with "
                 "--keep forever or --keep DURATION (docs/import.md)\n",
                 b.ns.c_str(), util::FormatDurationMs(b.raw_keep_ms).c_str(),
                 flags.compact ? "--compact" : "the next compaction");
  }
  if (flags.compact) {
    auto t0 = std::chrono::steady_clock::now();
    absl::Status s = (*db)->CompactAll();
    if (!s.ok()) {
      std::fprintf(stderr, "trainwatch import: compacting: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("compacted %s in %.2f s\n", (*db)->data_dir().c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

void RegisterImportCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<ImportFlags>();
  CLI::App* cmd = root.add_subcommand(
      "import", "bulk-load metrics history from a file (JSON lines, CSV or VictoriaMetrics' "
                "JSON lines export); see docs/import.md");
  cmd->add_option("file", flags->file, "the file to load")->required();
  cmd->add_option("--format", flags->format,
                  "jsonl, csv or vmimport (default: from the file name and its first line)");
  cmd->add_option("--namespace", flags->ns,
                  "namespace for lines that name none (default trainwatch/Imported)");
  cmd->add_option("--keep", flags->keep,
                  "keep the imported namespaces this long on every tier (e.g. 400d) or "
                  "\"forever\"; written to <data>/retention.conf. Without it the usual "
                  "retention applies, which drops raw history older than 3 hours");
  cmd->add_flag("--compact", flags->compact,
                "fully compact the data folder afterwards (smallest on-disk size; retention "
                "applies at once: without --keep, raw samples older than 3 h are dropped)");
  cmd->add_option("--from-line", flags->from_line,
                  "skip the lines before this one (a CSV header is still read): after an "
                  "import stopped at a bad line, fix it and load the rest from there");
  cmd->add_option("--threads", flags->threads, "parsing threads (default: one per CPU)");
  cmd->add_flag("-q,--quiet", flags->quiet, "no progress line on a terminal");
  AddDataOption(cmd, options);
  cmd->footer(
      "Examples:\n"
      "  trainwatch import history.vmimport --keep forever\n"
      "  trainwatch import metrics.csv --namespace team/experiments --keep 400d\n"
      "  trainwatch import metrics.csv --keep 400d --from-line 81734   # the rest, after a fix");
  cmd->callback([flags, options, exit_code] { *exit_code = RunImport(*flags, *options); });
}

}  // namespace trainwatch::cli
