// trainwatch admin compact: store maintenance (docs/store.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "app/data_dir.h"
#include "cli/commands.h"
#include "app/open_store.h"

namespace trainwatch::cli {
namespace {

int RunCompact(const GlobalOptions& global, bool json) {
  const std::string data_dir = app::ResolveDataDir(global.data_dir);
  absl::StatusOr<app::CompactionReport> report = app::CompactDataFolder(data_dir);
  if (!report.ok()) {
    std::fprintf(stderr, "trainwatch admin compact: %s\n",
                 std::string(report.status().message()).c_str());
    return absl::IsFailedPrecondition(report.status()) || absl::IsNotFound(report.status()) ? 2
                                                                                            : 1;
  }
  if (json) {
    std::string cfs;
    for (const auto& [name, bytes] : report->sst_bytes) {
      cfs += absl::StrFormat("%s\"%s\": %d", cfs.empty() ? "" : ", ", name, bytes);
    }
    std::printf("%s\n", absl::StrFormat("{\"seconds\": %.3f, \"bytes_before\": %d, "
                                         "\"bytes_after\": %d, \"sst_bytes\": {%s}}",
                                         report->seconds, report->bytes_before,
                                         report->bytes_after, cfs)
                            .c_str());
  } else {
    std::printf("compacted %s in %.2f s: %s -> %s bytes\n", data_dir.c_str(), report->seconds,
                std::to_string(report->bytes_before).c_str(),
                std::to_string(report->bytes_after).c_str());
  }
  return 0;
}

}  // namespace

void RegisterAdminCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  CLI::App* admin = root.add_subcommand("admin", "maintenance of the data folder");
  admin->require_subcommand(1);
  admin->footer(
      "Examples:\n"
      "  trainwatch admin compact --data /mnt/runs");
  auto json = std::make_shared<bool>(false);
  CLI::App* compact = admin->add_subcommand(
      "compact",
      "seal open chunks, flush, and compact the data folder fully: the smallest size on disk, "
      "and retention applied now (needs the folder's writer lock)");
  compact->add_flag("--json", *json, "print sizes per column family as JSON");
  AddDataOption(compact, options);
  // A nested command: its footer ends in the newline main() adds to the others'.
  compact->footer(
      "Examples:\n"
      "  trainwatch admin compact\n"
      "  trainwatch admin compact --data /mnt/runs --json\n");
  compact->callback([options, exit_code, json] { *exit_code = RunCompact(*options, *json); });
}

}  // namespace trainwatch::cli
